// min_concurrent <= initial_concurrent <= max_concurrent, among the limits
// one attribute writes: ATR-015 on the key out of place.
use bulkhead::{Rejection, resilient};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[resilient]
pub trait Search {
    #[bulkhead(max_concurrent = 200, adaptive = "gradient2", initial_concurrent = 300)]
    fn search(&self, query: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
