// From the macro corpus (`f13_alias_of_a_future`): fails with ATR-004.
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

use std::future::Future;
use std::pin::Pin;

pub type Fut = Pin<Box<dyn Future<Output = Result<u8, E>> + Send>>;

#[bulkhead::resilient]
pub trait Svc {
    #[bulkhead]
    fn call(&self) -> Fut;
}

fn main() {}
