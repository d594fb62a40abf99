// `#[fallback]` naming the annotated method itself: ATR-013.
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
    #[fallback(method = "fetch")]
    #[bulkhead]
    fn fetch(&self, id: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
