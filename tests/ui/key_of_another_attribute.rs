// A key of another policy's attribute says which attribute takes it.
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
    #[bulkhead(max_attempts = 3)]
    fn store(&self) -> Result<(), Error>;
}

fn main() {}
