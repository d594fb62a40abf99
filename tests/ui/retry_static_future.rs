// `#[retry]` on a method whose future may not borrow the wrapper, so cannot call the delegate again: ATR-007, over the return type.
use bulkhead::{Rejection, resilient};
use std::future::Future;

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[resilient]
pub trait Images {
    #[retry]
    fn fetch(&self, id: String) -> impl Future<Output = Result<Vec<u8>, Error>> + Send + 'static;
}

fn main() {}
