// `retry_if` names a function over another error type than the method's:
// ATR-011 from the type checker, over the path.
use bulkhead::{Rejection, resilient};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

pub fn is_transient(_: &std::io::Error) -> bool {
    true
}

#[resilient]
pub trait Images {
    #[retry(retry_if = is_transient)]
    fn fetch(&self, id: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
