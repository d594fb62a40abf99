// From the macro corpus (`f4_use_capture_self_only`): compiles without a warning.
#![deny(warnings)]
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

use std::future::Future;

#[bulkhead::resilient]
pub trait Svc: Send + Sync {
    #[bulkhead(max_concurrent = 2)]
    fn call(&self, id: u32) -> impl Future<Output = Result<u8, E>> + Send + use<Self>;
}

fn main() {}
