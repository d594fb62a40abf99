// `shed_at` fractions are above 0 and at most 1 (ATR-017).
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
    #[bulkhead(max_concurrent = 20, shed_at = "normal=1.5")]
    fn search(&self, query: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
