// A number written as a string says what it must be, once.
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
    #[retry(backoff_multiplier = "2")]
    fn store(&self) -> Result<(), Error>;
}

fn main() {}
