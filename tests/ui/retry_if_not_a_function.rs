// `retry_if` names something that is not a function at all: ATR-011 from
// the type checker, over the path.
use bulkhead::{Rejection, resilient};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

pub const TRANSIENT: bool = true;

#[resilient]
pub trait Images {
    #[retry(retry_if = TRANSIENT)]
    fn fetch(&self, id: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
