// F10: a supertrait named `Debug` that is not the standard library's is
// ATR-007 over the bound.
use bulkhead::{Rejection, resilient};


#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

pub trait Debug {}

#[resilient]
pub trait Images: Debug {
    #[bulkhead]
    fn store(&self) -> Result<(), Error>;
}

fn main() {}
