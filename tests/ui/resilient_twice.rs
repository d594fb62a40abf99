// F7: #[resilient] given twice is one ATR-002, not a duplicate wrapper.
use bulkhead::{Rejection, resilient};


#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[resilient]
#[resilient]
pub trait Images {
    #[bulkhead]
    fn store(&self) -> Result<(), Error>;
}

fn main() {}
