// From the macro corpus (`f8_extra_bound_on_future`): fails with ATR-007.
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

use std::future::Future;

#[bulkhead::resilient]
pub trait Svc: Send + Sync {
    #[bulkhead]
    fn call(&self) -> impl Future<Output = Result<u8, E>> + Send + std::fmt::Debug;
}

fn main() {}
