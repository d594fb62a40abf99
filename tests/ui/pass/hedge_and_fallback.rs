// `#[hedge]` and `#[fallback]` on every shape they take: an `async fn`, an
// `impl Future + Send` (still `Send`), a boxed future, a sync method with a
// fallback, `&mut self` with a fallback (sync and async), generic methods,
// with a retry budget; and `#[hedge]` on an `async fn` with a body.
#![allow(async_fn_in_trait)]
use std::future::Future;
use std::pin::Pin;

use bulkhead::{Rejection, resilient};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[resilient]
pub trait Search: Send + Sync {
    #[fallback(method = "cached", on = [BulkheadFull, CircuitOpen], on_error = false)]
    #[retry(max_attempts = 3, budget_ratio = 0.2, budget_min_per_second = 5, budget_window = "30s")]
    #[hedge(max_hedged = 2, delay = "20ms")]
    #[circuit_breaker]
    #[bulkhead(max_concurrent = 8)]
    async fn find(&self, query: &str) -> Result<String, Error>;
    async fn cached(&self, query: &str) -> Result<String, Error>;

    #[hedge(delay = "p99.9")]
    #[fallback(method = "near_send", on_error = true)]
    fn find_send(&self, query: String) -> impl Future<Output = Result<String, Error>> + Send;
    fn near_send(&self, query: String) -> impl Future<Output = Result<String, Error>> + Send;

    #[hedge]
    fn find_boxed<'a>(&'a self) -> Pin<Box<dyn Future<Output = Result<u8, Error>> + Send + 'a>>;

    #[fallback(method = "default_of")]
    #[timeout(duration = "1s")]
    fn generic<T: Default + Clone + Send + 'static>(&self, value: T) -> Result<T, Error>;
    fn default_of<T: Default + Clone + Send + 'static>(&self, value: T) -> Result<T, Error>;
}

#[resilient]
pub trait Counter: Send {
    #[fallback(method = "last")]
    #[bulkhead]
    fn bump(&mut self, by: u32) -> Result<u32, Error>;
    fn last(&mut self, by: u32) -> Result<u32, Error>;

    #[fallback(method = "last_async", on_error = true)]
    #[retry(max_attempts = 2, wait = "0")]
    async fn bump_async(&mut self, by: u32) -> Result<u32, Error>;
    async fn last_async(&mut self, by: u32) -> Result<u32, Error>;
}

#[bulkhead::hedge(delay = "10ms")]
#[bulkhead::retry(budget_ratio = 0.5)]
async fn lookup(key: &str) -> Result<String, Error> {
    Ok(key.to_owned())
}

fn send<T: Send>(_: &T) {}

fn check<S: Search>(search: ResilientSearch<S>) {
    send(&search.find_send(String::new()));
    send(&search.find_boxed());
    send(&lookup("k"));
}

fn main() {
    let _ = check::<NoSearch>;
}

struct NoSearch;

impl Search for NoSearch {
    async fn find(&self, _: &str) -> Result<String, Error> {
        Err(Error)
    }
    async fn cached(&self, _: &str) -> Result<String, Error> {
        Err(Error)
    }
    fn find_send(&self, _: String) -> impl Future<Output = Result<String, Error>> + Send {
        async { Err(Error) }
    }
    fn near_send(&self, _: String) -> impl Future<Output = Result<String, Error>> + Send {
        async { Err(Error) }
    }
    fn find_boxed<'a>(&'a self) -> Pin<Box<dyn Future<Output = Result<u8, Error>> + Send + 'a>> {
        Box::pin(async { Err(Error) })
    }
    fn generic<T: Default + Clone + Send + 'static>(&self, value: T) -> Result<T, Error> {
        Ok(value)
    }
    fn default_of<T: Default + Clone + Send + 'static>(&self, _: T) -> Result<T, Error> {
        Ok(T::default())
    }
}
