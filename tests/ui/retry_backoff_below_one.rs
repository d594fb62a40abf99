// A `backoff_multiplier` below 1, which would shrink the waits: ATR-008.
use bulkhead::{Rejection, resilient};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[resilient]
pub trait Images {
    #[retry(backoff_multiplier = 0.5)]
    fn fetch(&self, id: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
