// A `limit_for_period` of zero: ATR-008.
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
    #[rate_limiter(limit_for_period = 0)]
    fn fetch(&self, id: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
