// A policy attribute on a trait method written `#[retry = 3]`: ATR-002
// over `= 3`, which a list of keys replaces.
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
    #[retry = 3]
    fn fetch(&self, id: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
