// With #[retry] and #[fallback] a `Send` future holds `&self` across
// attempts, which needs a `Sync` trait: ATR-007 over the `Send` bound,
// speaking of the method's policies.
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
    #[retry(max_attempts = 2)]
    #[fallback(method = "cached")]
    fn fetch(&self, id: String) -> impl Future<Output = Result<Vec<u8>, Error>> + std::marker::Send;
    fn cached(&self, id: String) -> impl Future<Output = Result<Vec<u8>, Error>> + std::marker::Send;
}

fn main() {}
