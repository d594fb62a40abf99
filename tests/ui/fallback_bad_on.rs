// `on` listing something that is not a rejection kind: ATR-009.
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
    #[fallback(method = "cached", on = [BulkheadFul])]
    #[bulkhead]
    fn fetch(&self, id: &str) -> Result<Vec<u8>, Error>;
    fn cached(&self, id: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
