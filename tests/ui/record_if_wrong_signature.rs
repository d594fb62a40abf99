// `record_if` names a function that does not take `&E`: ATR-011 from the
// type checker, over the path.
use bulkhead::{Rejection, resilient};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

pub fn is_failure(_: Error) -> bool {
    true
}

#[resilient]
pub trait Images {
    #[circuit_breaker(record_if = is_failure)]
    async fn fetch(&self, id: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
