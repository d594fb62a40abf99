use bulkhead::{Rejection, resilient};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[resilient(max_concurrent = 4)]
pub trait Thumbnails {
    #[bulkhead]
    fn thumbnail(&self, id: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
