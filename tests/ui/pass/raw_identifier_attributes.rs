// F17: policy attributes written as raw identifiers are recognised.
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
    #[r#bulkhead(max_concurrent = 2)]
    #[r#retry]
    fn store(&self) -> Result<(), Error>;
}

fn main() {}
