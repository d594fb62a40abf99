// A `wait_in_open` that is not a duration: ATR-001.
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
    #[circuit_breaker(wait_in_open = "60")]
    fn fetch(&self, id: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
