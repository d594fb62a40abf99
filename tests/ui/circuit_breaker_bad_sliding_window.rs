// A `sliding_window` other than "count" or "time": ATR-010.
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
    #[circuit_breaker(sliding_window = "counted")]
    fn fetch(&self, id: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
