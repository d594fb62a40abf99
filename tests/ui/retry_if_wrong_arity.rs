// F11: a retry_if function taking two arguments is ATR-011 over its path,
// not E0593.
use bulkhead::{Rejection, resilient};


#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

pub fn is_transient(_: &Error, _: u8) -> bool {
    true
}

#[resilient]
pub trait Images {
    #[retry(retry_if = is_transient)]
    fn store(&self) -> Result<(), Error>;
}

fn main() {}
