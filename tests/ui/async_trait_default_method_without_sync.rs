// `#[async_trait]` adds `Self: Sync` to a default `async fn` taking `&self`
// of a trait that is not `Sync`, which the wrapper cannot promise in the
// method's where clause: ATR-007, saying to make `Sync` a supertrait.
use async_trait::async_trait;
use bulkhead::{Rejection, resilient};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[resilient]
#[async_trait]
pub trait Repository {
    #[bulkhead]
    async fn ping(&self) -> Result<(), Error> {
        Ok(())
    }
}

fn main() {}
