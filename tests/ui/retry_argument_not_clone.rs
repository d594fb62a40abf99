// With `#[retry]` each attempt gets a clone of every argument: an argument
// that is not `Clone` is ATR-012, over its type.
use bulkhead::{Rejection, resilient};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

pub struct Upload {
    pub bytes: Vec<u8>,
}

#[resilient]
pub trait Images {
    #[retry(max_attempts = 2)]
    fn store(&self, id: &str, upload: Upload) -> Result<(), Error>;
}

fn main() {}
