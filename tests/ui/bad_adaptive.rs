// `adaptive` is one of "off", "aimd", "vegas", "gradient2" (ATR-010).
use bulkhead::{Rejection, resilient};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[resilient]
pub trait Search {
    #[bulkhead(max_concurrent = 200, adaptive = "gradient")]
    fn search(&self, query: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
