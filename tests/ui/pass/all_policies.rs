// All five policies, in any order, on every shape of method: sync, `async
// fn`, `impl Future + Send`, boxed futures; generic methods and lifetimes;
// `&mut self` with `#[retry]`, sync and async; `self` without `#[retry]`.
// The futures are `Send` where the trait says so: a multi-threaded runtime
// runs them.
#![allow(async_fn_in_trait)]
use std::future::Future;
use std::pin::Pin;

use bulkhead::{Registry, Rejection, resilient};

#[derive(Debug)]
pub enum Error {
    Rejected(Rejection),
    Backend,
}

impl From<Rejection> for Error {
    fn from(r: Rejection) -> Self {
        Error::Rejected(r)
    }
}

pub fn is_backend(error: &Error) -> bool {
    matches!(error, Error::Backend)
}

#[resilient]
pub trait Store: Send + Sync {
    #[rate_limiter(limit_for_period = 1000, refresh_period = "1s", max_wait = "0")]
    #[bulkhead(max_concurrent = 4, max_wait = "10ms")]
    #[retry(max_attempts = 3, wait = "1ms", backoff_multiplier = 2, max_wait_interval = "5ms", jitter = 0.1, retry_if = is_backend, abort_on = [BulkheadFull, CircuitOpen])]
    #[timeout(duration = "1s")]
    #[circuit_breaker(failure_rate_threshold = 50.5, sliding_window = "time", sliding_window_size = 60, minimum_calls = 5, wait_in_open = "1m", permitted_calls_in_half_open = 2, slow_call_threshold = "2s", slow_call_rate_threshold = 90, record_if = is_backend, ignore_on = [])]
    fn get(&self, key: &str) -> Result<Option<String>, Error>;

    #[retry(max_attempts = 2, wait = "0")]
    #[timeout]
    #[circuit_breaker]
    #[rate_limiter]
    #[bulkhead]
    async fn get_async(&self, key: &str) -> Result<Option<String>, Error>;

    #[retry(wait = "0")]
    #[timeout(duration = "1s")]
    fn put(&mut self, key: String, value: String) -> Result<(), Error>;

    #[retry(wait = "0")]
    #[timeout(duration = "1s")]
    fn put_async(
        &mut self,
        key: String,
        value: String,
    ) -> impl Future<Output = Result<(), Error>> + Send;

    #[circuit_breaker(name = "store")]
    fn boxed(&self) -> Pin<Box<dyn Future<Output = Result<usize, Error>> + Send + '_>>;

    #[retry(wait = "0")]
    fn first<'a>(&self, keys: &'a [String]) -> Result<&'a str, Error>;

    #[retry(wait = "0")]
    fn parse<T: std::str::FromStr + Send>(&self, text: &str) -> Result<T, Error>;

    #[timeout(duration = "1s")]
    fn into_len(self) -> Result<usize, Error>
    where
        Self: Sized;

    #[timeout(duration = "1s")]
    fn detached(&self, key: String) -> impl Future<Output = Result<String, Error>> + Send + 'static;
}

#[derive(Debug, Default, Clone)]
struct Memory(std::collections::HashMap<String, String>);

impl Store for Memory {
    fn get(&self, key: &str) -> Result<Option<String>, Error> {
        Ok(self.0.get(key).cloned())
    }
    async fn get_async(&self, key: &str) -> Result<Option<String>, Error> {
        self.get(key)
    }
    fn put(&mut self, key: String, value: String) -> Result<(), Error> {
        self.0.insert(key, value);
        Ok(())
    }
    fn put_async(
        &mut self,
        key: String,
        value: String,
    ) -> impl Future<Output = Result<(), Error>> + Send {
        async move { self.put(key, value) }
    }
    fn boxed(&self) -> Pin<Box<dyn Future<Output = Result<usize, Error>> + Send + '_>> {
        Box::pin(async move { Ok(self.0.len()) })
    }
    fn first<'a>(&self, keys: &'a [String]) -> Result<&'a str, Error> {
        keys.first().map(String::as_str).ok_or(Error::Backend)
    }
    fn parse<T: std::str::FromStr + Send>(&self, text: &str) -> Result<T, Error> {
        text.parse().map_err(|_| Error::Backend)
    }
    fn into_len(self) -> Result<usize, Error> {
        Ok(self.0.len())
    }
    fn detached(&self, key: String) -> impl Future<Output = Result<String, Error>> + Send + 'static {
        async move { Ok(key) }
    }
}

fn main() {
    let registry = Registry::new();
    let mut store = ResilientStore::new(Memory::default(), &registry).unwrap();
    store.put("a".into(), "1".into()).unwrap();
    assert_eq!(store.get("a").unwrap().as_deref(), Some("1"));
    let keys = vec!["k".to_owned()];
    assert_eq!(store.first(&keys).unwrap(), "k");
    assert_eq!(store.parse::<u8>("7").unwrap(), 7);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let detached = tokio::spawn(store.detached("d".into()));
        assert_eq!(detached.await.unwrap().unwrap(), "d");
        store.put_async("b".into(), "2".into()).await.unwrap();
        assert_eq!(store.boxed().await.unwrap(), 2);
    });
    let shared = std::sync::Arc::new(store);
    let task = {
        let shared = std::sync::Arc::clone(&shared);
        runtime.spawn(async move { shared.get_async("b").await })
    };
    assert_eq!(runtime.block_on(task).unwrap().unwrap().as_deref(), Some("2"));
    let store = std::sync::Arc::try_unwrap(shared).unwrap();
    assert_eq!(store.into_len().unwrap(), 2);
}
