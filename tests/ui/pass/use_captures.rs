// F4: `use<..>` on a trait's returned future (which must list `Self`), on
// an annotated method and on one that only delegates.
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
pub trait Images: Send + Sync {
    #[bulkhead(max_concurrent = 2)]
    fn store(&self) -> impl Future<Output = Result<(), Error>> + Send + use<'_, Self>;
    #[bulkhead]
    fn detached(&self, id: u32) -> impl Future<Output = Result<u32, Error>> + Send + use<Self>;
    fn plain(&self) -> impl Future<Output = u8> + Send + use<'_, Self>;
}

fn main() {}
