// A key written in capitals gets its did-you-mean.
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
    #[bulkhead(MAX_CONCURRENT = 3)]
    fn store(&self) -> Result<(), Error>;
}

fn main() {}
