// `#[hedge]` on an async method taking `&mut self`, which one attempt at a time can borrow: ATR-014, over `&mut self`.
use bulkhead::{Rejection, resilient};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[resilient]
pub trait Search {
    #[hedge(delay = "50ms")]
    async fn find(&mut self, query: &str) -> Result<String, Error>;
}

fn main() {}
