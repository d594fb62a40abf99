use bulkhead::{Rejection, bulkhead};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

pub trait Thumbnails {
    #[bulkhead(max_concurrent = 4)]
    fn thumbnail(&self, id: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
