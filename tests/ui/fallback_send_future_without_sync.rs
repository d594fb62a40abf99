// With #[fallback] alone a `Send` future holds `&self` until the fallback
// method is called, which needs a `Sync` trait: ATR-007 over the `Send`
// bound, naming #[fallback] (not #[retry]).
use std::future::Future;

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
    #[fallback(method = "cached")]
    fn fetch(&self, id: String) -> impl Future<Output = Result<Vec<u8>, Error>> + Send;
    fn cached(&self, id: String) -> impl Future<Output = Result<Vec<u8>, Error>> + Send;
}

fn main() {}
