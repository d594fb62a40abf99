// A free function's keyed bulkhead under its other policies, sync, async
// and returning a future; keys by reference and by value, with and
// without a policy that runs the body again; compiles without a warning.
#![deny(warnings)]
use std::future::Future;

use bulkhead::{Rejection, bulkhead, circuit_breaker, rate_limiter, retry, timeout};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[retry(max_attempts = 2, wait = "0")]
#[bulkhead(per_key = 4, key = tenant)]
#[timeout(duration = "1s")]
fn call(tenant: &str, n: u32) -> Result<u32, Error> {
    Ok(tenant.len() as u32 + n)
}

#[circuit_breaker]
#[bulkhead(per_key = 4, key = tenant)]
fn by_value(tenant: String, body: Vec<u8>) -> Result<usize, Error> {
    Ok(tenant.len() + body.len())
}

#[retry(max_attempts = 2, wait = "0")]
#[bulkhead(per_key = 4, key = tenant)]
async fn call_async(tenant: u64, (a, b): (u8, u8)) -> Result<u64, Error> {
    Ok(tenant + u64::from(a) + u64::from(b))
}

#[rate_limiter(limit_for_period = 100)]
#[bulkhead(per_key = 4, key = tenant)]
async fn once_async(tenant: String) -> Result<String, Error> {
    Ok(tenant)
}

#[timeout(duration = "1s")]
#[bulkhead(per_key = 4, key = tenant)]
fn future(tenant: &'static str) -> impl Future<Output = Result<usize, Error>> + Send {
    async move { Ok(tenant.len()) }
}

fn main() {
    assert_eq!(call("ab", 1).unwrap(), 3);
    assert_eq!(by_value("ab".to_owned(), vec![1]).unwrap(), 3);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async {
        assert_eq!(call_async(1, (2, 3)).await.unwrap(), 6);
        assert_eq!(once_async("acme".to_owned()).await.unwrap(), "acme");
        assert_eq!(future("abc").await.unwrap(), 3);
    });
}
