// F13: an alias of a future type is read as a sync return type: ATR-004,
// whose note says to write the future type out.
use std::future::Future;
use std::pin::Pin;

use bulkhead::{Rejection, resilient};


#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

pub type Stored = Pin<Box<dyn Future<Output = Result<(), Error>> + Send>>;

#[resilient]
pub trait Images {
    #[bulkhead]
    fn store(&self) -> Stored;
}

fn main() {}
