// A timeout of zero, which the timeout's builder refuses: ATR-008.
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
    #[timeout(duration = "0s")]
    fn fetch(&self, id: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
