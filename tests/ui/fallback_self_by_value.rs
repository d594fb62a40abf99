// `#[fallback]` on a method taking `self` by value, which the call consumes: ATR-007, over `self`.
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
    #[fallback(method = "cached")]
    #[bulkhead]
    fn fetch(self, id: &str) -> Result<Vec<u8>, Error>
    where
        Self: Sized;
    fn cached(self, id: &str) -> Result<Vec<u8>, Error>
    where
        Self: Sized;
}

fn main() {}
