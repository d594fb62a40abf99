// A negative `budget_ratio`: ATR-008.
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
    #[retry(budget_ratio = -0.5)]
    fn find(&self, query: &str) -> Result<String, Error>;
}

fn main() {}
