// A method with several policy attributes that does not return a `Result`:
// ATR-004 over the return type, speaking of policy attributes.
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
    #[retry(max_attempts = 2)]
    #[bulkhead(max_concurrent = 4)]
    fn fetch(&self, id: &str) -> Option<Vec<u8>>;
}

fn main() {}
