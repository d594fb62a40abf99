// F10: a where clause bounding `&Self` is ATR-007: write a `Sync`
// supertrait instead.
use bulkhead::{Rejection, resilient};


#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[resilient]
pub trait Images
where
    for<'a> &'a Self: Send,
{
    #[bulkhead]
    fn store(&self) -> Result<(), Error>;
}

fn main() {}
