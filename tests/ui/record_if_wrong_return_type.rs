// F11: a record_if function that does not return `bool` is ATR-011 over
// its path, not E0271.
use bulkhead::{Rejection, circuit_breaker};


#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

pub fn is_failure(_: &Error) -> u8 {
    1
}

#[circuit_breaker(record_if = is_failure)]
pub fn store() -> Result<(), Error> {
    Ok(())
}

fn main() {}
