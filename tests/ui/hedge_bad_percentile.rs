// A percentile `delay` of 100, which no latency is above: ATR-001.
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
    #[hedge(delay = "p100")]
    async fn find(&self, query: &str) -> Result<String, Error>;
}

fn main() {}
