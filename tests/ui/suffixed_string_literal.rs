// F14: a suffix after a string literal means nothing to a key: refused
// with the key's code (ATR-001 for a duration).
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
    #[bulkhead(max_wait = "1s"ms)]
    fn store(&self) -> Result<(), Error>;
}

fn main() {}
