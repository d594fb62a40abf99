// `#[fallback]` naming a method with other parameters: ATR-013, showing both signatures.
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
    #[fallback(method = "placeholder")]
    #[bulkhead]
    fn fetch(&self, id: &str, width: u32) -> Result<Vec<u8>, Error>;
    fn placeholder(&self, id: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
