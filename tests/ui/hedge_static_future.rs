// `#[hedge]` on a method whose future may not borrow the wrapper: ATR-007, over the return type.
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
    fn find(&self) -> impl std::future::Future<Output = Result<String, Error>> + Send + 'static;
}

fn main() {}
