// An async method whose fallback is sync: ATR-013 (the signatures differ).
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
    async fn fetch(&self, id: &str) -> Result<Vec<u8>, Error>;
    fn cached(&self, id: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
