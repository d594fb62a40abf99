// A rejection kind listed twice is ATR-009.
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
    #[retry(abort_on = [Timeout, Timeout])]
    fn store(&self) -> Result<(), Error>;
}

fn main() {}
