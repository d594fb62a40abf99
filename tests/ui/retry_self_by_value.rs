// `#[retry]` on a method taking `self` by value, whose first attempt consumes the delegate: ATR-007, over `self`.
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
    #[retry]
    fn fetch(self, id: &str) -> Result<Vec<u8>, Error>
    where
        Self: Sized;
}

fn main() {}
