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
    #[bulkhead(max_concurrent = 4)]
    fn thumbnail(&self, id: &str) -> Vec<u8>;
}

fn main() {}
