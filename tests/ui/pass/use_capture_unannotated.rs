// From the macro corpus (`f4_use_capture_unannotated`): compiles without a warning.
#![deny(warnings)]
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

use std::future::Future;

#[bulkhead::resilient]
pub trait Svc: Send + Sync {
    fn plain(&self) -> impl Future<Output = u8> + Send + use<'_, Self>;
    #[bulkhead]
    fn call(&self) -> Result<u8, E>;
}

fn main() {}
