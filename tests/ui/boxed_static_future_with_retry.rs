// `#[retry]` on a method returning a boxed future without a lifetime, so
// `'static`: it may not borrow the wrapper, whose delegate each attempt
// calls again. ATR-007 over the return type, saying how to bound the box.
use std::future::Future;
use std::pin::Pin;

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
    #[retry]
    fn fetch(&self, id: String) -> Pin<Box<dyn Future<Output = Result<Vec<u8>, Error>> + Send>>;
}

fn main() {}
