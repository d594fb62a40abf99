// A rate limiter's `max_wait` that is not a duration: ATR-001.
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
    #[rate_limiter(max_wait = "soon")]
    fn fetch(&self, id: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
