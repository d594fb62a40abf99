// F2: a `Vec` of a type that is not `Clone` is not `Clone` either: ATR-012
// over the argument's type, not the type checker's error about the element.
use bulkhead::{Rejection, resilient};


#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

pub struct Upload;

#[resilient]
pub trait Images {
    #[retry(max_attempts = 2)]
    fn store(&self, uploads: Vec<Upload>) -> Result<(), Error>;
}

fn main() {}
