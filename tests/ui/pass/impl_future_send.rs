// `fn -> impl Future<Output = Result<..>> + Send` keeps its promise for
// every delegate, even one that is not `Sync`, and an `async fn` wrapper is
// `Send` when its delegate's future is.
#![allow(async_fn_in_trait)]
use std::future::Future;

use bulkhead::{Registry, Rejection, resilient};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[resilient]
pub trait Fetch {
    #[bulkhead(max_concurrent = 2, max_wait = "100ms")]
    fn fetch(&self, key: String) -> impl Future<Output = Result<Vec<u8>, Error>> + Send;

    #[bulkhead(max_concurrent = 2)]
    fn fetch_boxed(
        &self,
        key: String,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<Vec<u8>, Error>> + Send + '_>>;
}

#[resilient]
pub trait FetchAsync: Sync {
    #[bulkhead(max_concurrent = 2)]
    async fn fetch(&self, key: String) -> Result<Vec<u8>, Error>;
}

struct NotSync(std::cell::Cell<u8>);

impl Fetch for NotSync {
    fn fetch(&self, key: String) -> impl Future<Output = Result<Vec<u8>, Error>> + Send {
        self.0.set(1);
        async move { Ok(key.into_bytes()) }
    }
    fn fetch_boxed(
        &self,
        key: String,
    ) -> std::pin::Pin<Box<dyn Future<Output = Result<Vec<u8>, Error>> + Send + '_>> {
        Box::pin(async move { Ok(key.into_bytes()) })
    }
}

struct Plain;

impl FetchAsync for Plain {
    async fn fetch(&self, key: String) -> Result<Vec<u8>, Error> {
        Ok(key.into_bytes())
    }
}

fn require_send<T: Send>(_: T) {}

fn generic<F: Fetch>(fetch: &ResilientFetch<F>) {
    require_send(fetch.fetch("k".into()));
}

fn main() {
    let registry = Registry::new();
    let fetch = ResilientFetch::new(NotSync(std::cell::Cell::new(0)), &registry).unwrap();
    require_send(fetch.fetch("a".into()));
    require_send(fetch.fetch_boxed("a".into()));
    generic(&fetch);
    let fetch = ResilientFetchAsync::new(Plain, &registry).unwrap();
    require_send(fetch.fetch("a".into()));
}
