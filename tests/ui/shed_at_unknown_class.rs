// `shed_at` names classes below critical (ATR-017), with a did-you-mean.
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
    #[bulkhead(max_concurrent = 20, shed_at = "sheddable=0.3, nromal=0.8")]
    fn search(&self, query: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
