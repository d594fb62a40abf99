// `#[fallback]` that names no method: ATR-013 over the attribute.
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
    #[fallback(on = [BulkheadFull])]
    #[bulkhead]
    fn fetch(&self, id: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
