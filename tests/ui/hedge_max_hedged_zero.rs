// `max_hedged = 0`: ATR-008.
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
    #[hedge(max_hedged = 0)]
    async fn find(&self, query: &str) -> Result<String, Error>;
}

fn main() {}
