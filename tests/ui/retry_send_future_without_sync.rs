// F9: with #[retry] a `Send` future holds `&self` across attempts, which
// needs a `Sync` trait: ATR-007 over the `Send` bound, naming #[retry].
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
    #[retry]
    fn store(&self) -> impl Future<Output = Result<(), Error>> + Send;
}

fn main() {}
