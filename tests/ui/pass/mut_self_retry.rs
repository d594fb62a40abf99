// `&mut self` methods with `#[retry]`, sync and async, on a trait without
// `Send` bounds and on one with them: each attempt borrows the delegate
// again (sync), or is lent it for as long as its future runs (async).
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
    #[retry(max_attempts = 3, wait = "0")]
    fn increment(&mut self, by: u32) -> Result<u32, Error>;

    #[retry(max_attempts = 3, wait = "0")]
    async fn increment_async(&mut self, by: u32) -> Result<u32, Error>;
}

#[resilient]
pub trait SendCounter: Send {
    #[retry(max_attempts = 3, wait = "0")]
    fn add(&mut self, by: u32) -> impl std::future::Future<Output = Result<u32, Error>> + Send;
}

struct Flaky(u32);

impl Counter for Flaky {
    fn increment(&mut self, by: u32) -> Result<u32, Error> {
        self.0 += by;
        if self.0 < 3 { Err(Error) } else { Ok(self.0) }
    }
    async fn increment_async(&mut self, by: u32) -> Result<u32, Error> {
        self.increment(by)
    }
}

impl SendCounter for Flaky {
    fn add(&mut self, by: u32) -> impl std::future::Future<Output = Result<u32, Error>> + Send {
        async move { self.increment(by) }
    }
}

fn main() {
    let registry = Registry::new();
    let mut counter = ResilientCounter::new(Flaky(0), &registry).unwrap();
    assert_eq!(counter.increment(1).unwrap(), 3);
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    assert_eq!(runtime.block_on(counter.increment_async(1)).unwrap(), 4);
    let mut counter = ResilientSendCounter::new(Flaky(0), &registry).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().build().unwrap();
    runtime.block_on(async move {
        let handle = tokio::spawn(async move { counter.add(1).await });
        assert_eq!(handle.await.unwrap().unwrap(), 3);
    });
}
