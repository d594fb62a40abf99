// A bulkhead's class and the shares of the classes below critical.
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
    #[bulkhead(max_concurrent = 20, priority = "sheddable", shed_at = "sheddable=0.25, normal=0.8, high=0.9")]
    fn search(&self, query: &str) -> Result<Vec<u8>, Error>;

    #[bulkhead(max_concurrent = 20, priority = "Critical")]
    fn pay(&self, amount: u64) -> Result<(), Error>;
}

fn main() {}
