// `&mut self` and `self` methods, sync and async: the bulkhead and the
// delegate are borrowed from different fields, nothing is cloned.
#![allow(async_fn_in_trait)]
use bulkhead::{Registry, Rejection, resilient};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[resilient]
pub trait Counter {
    #[bulkhead(max_concurrent = 1)]
    fn increment(&mut self, by: u32) -> Result<u32, Error>;

    #[bulkhead(max_concurrent = 1)]
    async fn increment_async(&mut self, by: u32) -> Result<u32, Error>;

    #[bulkhead]
    fn finish(self) -> Result<u32, Error>
    where
        Self: Sized;

    #[bulkhead]
    async fn finish_async(self) -> Result<u32, Error>
    where
        Self: Sized;
}

struct Count(u32);

impl Counter for Count {
    fn increment(&mut self, by: u32) -> Result<u32, Error> {
        self.0 += by;
        Ok(self.0)
    }
    async fn increment_async(&mut self, by: u32) -> Result<u32, Error> {
        self.increment(by)
    }
    fn finish(self) -> Result<u32, Error> {
        Ok(self.0)
    }
    async fn finish_async(self) -> Result<u32, Error> {
        Ok(self.0)
    }
}

fn main() {
    let registry = Registry::new();
    let mut counter = ResilientCounter::new(Count(0), &registry).unwrap();
    counter.increment(2).unwrap();
    drop(counter.increment_async(1));
    let _ = counter.finish();
    let counter = ResilientCounter::new(Count(0), &registry).unwrap();
    let _future = counter.finish_async();
}
