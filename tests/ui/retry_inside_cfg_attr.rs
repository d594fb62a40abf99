// A policy inside `#[cfg_attr]` on a trait method: ATR-002, write it directly.
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
    #[cfg_attr(unix, retry(max_attempts = 2))]
    fn fetch(&self, id: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
