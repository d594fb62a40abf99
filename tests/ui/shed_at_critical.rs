// `critical` always has the whole limit: `shed_at` takes no fraction for it (ATR-017).
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
    #[bulkhead(max_concurrent = 20, shed_at = "critical=0.9")]
    fn search(&self, query: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
