// F8: a returned future declared `Debug` cannot be wrapped: the policies'
// future is an `async` block. ATR-007 over the bound.
use std::future::Future;

use bulkhead::{Rejection, resilient};


#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[resilient]
pub trait Images: Send + Sync {
    #[bulkhead]
    fn store(&self) -> impl Future<Output = Result<(), Error>> + Send + std::fmt::Debug;
}

fn main() {}
