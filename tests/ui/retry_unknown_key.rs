// A misspelt key of `#[retry]`: ATR-002 with a suggestion.
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
    #[retry(max_attempt = 3)]
    fn fetch(&self, id: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
