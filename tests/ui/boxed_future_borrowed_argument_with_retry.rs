// `#[retry]` on a method whose boxed future is bound by the receiver's
// lifetime, with a borrowed argument that is not known to outlive it: each
// attempt would pass it to the delegate again from inside the future.
// ATR-007 over the return type, saying to give the argument the box's
// lifetime.
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
    fn fetch(&self, id: &str) -> Pin<Box<dyn Future<Output = Result<Vec<u8>, Error>> + Send + '_>>;
}

fn main() {}
