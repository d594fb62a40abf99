// A `failure_rate_threshold` above 100 percent: ATR-008.
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
    #[circuit_breaker(failure_rate_threshold = 120)]
    fn fetch(&self, id: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
