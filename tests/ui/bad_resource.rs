use bulkhead::{Rejection, resilient};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[resilient]
pub trait Thumbnails {
    #[bulkhead(max_concurrent = 4, resource = 10)]
    fn thumbnail(&self, id: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
