// `max_attempts` below 1, which the retry's builder refuses: ATR-008.
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
    #[retry(max_attempts = 0)]
    fn fetch(&self, id: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
