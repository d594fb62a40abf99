// A keyed bulkhead under other policies, in the shapes a wrapper's method
// takes: sync and async, `&self`, `&mut self` (lent to each attempt) and
// `self`, futures declared `Send`, boxed and `'static` ones (made at
// once), keys by reference and by value, with and without a policy that
// calls the method again; compiles without a warning.
#![allow(async_fn_in_trait)]
#![deny(warnings)]
use std::future::Future;
use std::pin::Pin;

use bulkhead::{Registry, Rejection, resilient};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

fn transient(_: &Error) -> bool {
    true
}

#[resilient]
pub trait Tenants: Send + Sync {
    #[retry(max_attempts = 2, wait = "0", retry_if = transient)]
    #[circuit_breaker(record_if = transient)]
    #[bulkhead(per_key = 2, key = tenant)]
    fn sync_ref(&self, tenant: &str, n: u32) -> Result<u32, Error>;

    #[timeout(duration = "1s")]
    #[rate_limiter(limit_for_period = 100)]
    #[bulkhead(per_key = 2, key = tenant)]
    fn sync_once(&self, tenant: String, n: Vec<u8>) -> Result<u32, Error>;

    #[retry(max_attempts = 2, wait = "0")]
    #[bulkhead(per_key = 2, key = tenant)]
    async fn async_mut(&mut self, tenant: u64) -> Result<u64, Error>;

    #[timeout(duration = "1s")]
    #[bulkhead(per_key = 2, key = tenant)]
    async fn async_once(&self, tenant: String, n: Vec<u8>) -> Result<u32, Error>;

    #[retry(max_attempts = 2, wait = "0")]
    #[bulkhead(per_key = 2, key = tenant)]
    fn send_future(&self, tenant: u64) -> impl Future<Output = Result<u64, Error>> + Send;

    #[timeout(duration = "1s")]
    #[bulkhead(per_key = 2, key = tenant)]
    fn send_once(&self, tenant: &str) -> impl Future<Output = Result<u32, Error>> + Send;

    #[timeout(duration = "1s")]
    #[bulkhead(per_key = 2, key = tenant)]
    fn boxed(&self, tenant: u64) -> Pin<Box<dyn Future<Output = Result<u64, Error>> + Send>>;

    #[chaos(fault_rate = 0.0)]
    #[hedge(delay = "1s")]
    #[bulkhead(per_key = 2, key = tenant)]
    async fn hedged(&self, tenant: u64) -> Result<u64, Error>;

    #[fallback(method = "answer")]
    #[bulkhead(per_key = 2, key = tenant)]
    fn with_fallback(&self, tenant: u64) -> Result<u64, Error>;

    fn answer(&self, tenant: u64) -> Result<u64, Error>;

    #[timeout(duration = "1s")]
    #[bulkhead(per_key = 2, key = tenant)]
    fn by_value(self, tenant: u64) -> Result<u64, Error>
    where
        Self: Sized;
}

#[derive(Clone)]
struct Backend;

impl Tenants for Backend {
    fn sync_ref(&self, tenant: &str, n: u32) -> Result<u32, Error> {
        Ok(tenant.len() as u32 + n)
    }
    fn sync_once(&self, tenant: String, n: Vec<u8>) -> Result<u32, Error> {
        Ok((tenant.len() + n.len()) as u32)
    }
    async fn async_mut(&mut self, tenant: u64) -> Result<u64, Error> {
        Ok(tenant)
    }
    async fn async_once(&self, tenant: String, n: Vec<u8>) -> Result<u32, Error> {
        Ok((tenant.len() + n.len()) as u32)
    }
    fn send_future(&self, tenant: u64) -> impl Future<Output = Result<u64, Error>> + Send {
        async move { Ok(tenant) }
    }
    fn send_once(&self, tenant: &str) -> impl Future<Output = Result<u32, Error>> + Send {
        let n = tenant.len() as u32;
        async move { Ok(n) }
    }
    fn boxed(&self, tenant: u64) -> Pin<Box<dyn Future<Output = Result<u64, Error>> + Send>> {
        Box::pin(async move { Ok(tenant) })
    }
    async fn hedged(&self, tenant: u64) -> Result<u64, Error> {
        Ok(tenant)
    }
    fn with_fallback(&self, tenant: u64) -> Result<u64, Error> {
        Ok(tenant)
    }
    fn answer(&self, tenant: u64) -> Result<u64, Error> {
        Ok(tenant)
    }
    fn by_value(self, tenant: u64) -> Result<u64, Error> {
        Ok(tenant)
    }
}

fn main() {
    let registry = Registry::new();
    let mut tenants = ResilientTenants::new(Backend, &registry).unwrap();
    assert_eq!(tenants.sync_ref("ab", 1).unwrap(), 3);
    assert_eq!(tenants.sync_once("ab".to_owned(), vec![1]).unwrap(), 3);
    assert_eq!(tenants.with_fallback(4).unwrap(), 4);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async {
        assert_eq!(tenants.async_mut(1).await.unwrap(), 1);
        assert_eq!(tenants.async_once("ab".to_owned(), vec![]).await.unwrap(), 2);
        assert_eq!(tenants.send_future(2).await.unwrap(), 2);
        assert_eq!(tenants.send_once("abc").await.unwrap(), 3);
        assert_eq!(tenants.boxed(3).await.unwrap(), 3);
        assert_eq!(tenants.hedged(5).await.unwrap(), 5);
    });
    assert_eq!(tenants.by_value(6).unwrap(), 6);
}
