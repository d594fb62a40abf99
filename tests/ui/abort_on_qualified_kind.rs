// A rejection kind under another path (`Foo::Timeout`, `Timeout::<u8>`) is
// not a rejection kind: ATR-009.
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
    #[retry(abort_on = [Foo::Timeout])]
    fn store(&self) -> Result<(), Error>;
}

fn main() {}
