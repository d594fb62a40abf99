// From the macro corpus (`f9_retry_send_future_with_sync_pass`): compiles without a warning.
#![deny(warnings)]
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

use std::future::Future;

#[bulkhead::resilient]
pub trait Svc: Sync {
    #[retry]
    fn call(&self) -> impl Future<Output = Result<u8, E>> + Send;
}

fn main() {}
