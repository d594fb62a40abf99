// `#[fallback]` naming a method the trait does not have: ATR-013 over the name, with a did-you-mean.
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
    #[fallback(method = "cahced")]
    #[bulkhead]
    fn fetch(&self, id: &str) -> Result<Vec<u8>, Error>;
    fn cached(&self, id: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
