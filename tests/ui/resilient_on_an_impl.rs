// `#[resilient]` on an implementation (next to its `#[async_trait]`, say)
// instead of the trait: ATR-007, saying to put it on the trait.
use bulkhead::{Rejection, resilient};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

pub trait Repository {
    fn find(&self, id: &str) -> Result<String, Error>;
}

struct Memory;

#[resilient]
impl Repository for Memory {
    fn find(&self, id: &str) -> Result<String, Error> {
        Ok(id.to_owned())
    }
}

fn main() {}
