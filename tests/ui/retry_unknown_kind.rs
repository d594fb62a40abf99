// `abort_on` names something that is not a rejection kind: ATR-009 with a suggestion.
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
    #[retry(abort_on = [BulkheadFul, Timeout])]
    fn fetch(&self, id: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
