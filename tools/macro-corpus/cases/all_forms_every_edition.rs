// expect: pass
// edition: 2018 2021 2024

#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

use std::future::Future;

#[bulkhead::resilient]
pub trait Svc: Send + Sync {
    #[bulkhead(max_concurrent = 2)]
    fn call(&self, x: &str) -> Result<u8, E>;
    #[retry(max_attempts = 2)]
    #[circuit_breaker]
    #[rate_limiter]
    #[timeout]
    #[bulkhead]
    fn composed(&self, x: u8) -> Result<u8, E>;
    #[bulkhead]
    fn fut(&self, x: u8) -> impl Future<Output = Result<u8, E>> + Send;
}

#[bulkhead::bulkhead]
pub fn alone(x: u8) -> Result<u8, E> { Ok(x) }

#[bulkhead::retry]
#[bulkhead::timeout]
pub fn composed(x: u8) -> Result<u8, E> { Ok(x) }

#[bulkhead::retry]
pub async fn composed_async(x: u8) -> Result<u8, E> { Ok(x) }
