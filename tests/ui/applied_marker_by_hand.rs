// F15: the internal marker written by hand on a function that no policy
// attribute wrapped is an unknown key (ATR-002), not a silent no-op.
use bulkhead::{Rejection, bulkhead};


#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[bulkhead(__bulkhead_applied)]
pub fn store() -> Result<(), Error> {
    Ok(())
}

fn main() {}
