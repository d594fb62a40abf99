// `#[hedge]` on a sync method, whose thread runs one attempt at a time: ATR-014, over its signature.
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
    #[hedge(delay = "50ms")]
    fn find(&self, query: &str) -> Result<String, Error>;
}

fn main() {}
