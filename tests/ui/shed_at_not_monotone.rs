// `shed_at` fractions do not decrease with the class (ATR-018): sheddable keeps 0.5 above normal.
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
    #[bulkhead(max_concurrent = 20, shed_at = "normal=0.4")]
    fn search(&self, query: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
