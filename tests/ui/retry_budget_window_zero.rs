// A `budget_window` of zero: ATR-008.
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
    #[retry(budget_ratio = 0.2, budget_window = "0s")]
    fn find(&self, query: &str) -> Result<String, Error>;
}

fn main() {}
