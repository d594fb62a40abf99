// A misspelled class gets a did-you-mean (ATR-017).
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
    #[bulkhead(max_concurrent = 20, priority = "critcal")]
    fn search(&self, query: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
