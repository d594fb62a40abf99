// A retry's `wait` that is not a duration: ATR-001 on the string.
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
    #[retry(wait = "5 parsecs")]
    fn fetch(&self, id: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
