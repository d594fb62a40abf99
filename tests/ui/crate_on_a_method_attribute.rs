// F5: `crate = ".."` belongs on #[resilient], which writes the wrapper's
// paths: ATR-002 on a method's attribute.
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
    #[bulkhead(crate = "bulkhead")]
    fn store(&self) -> Result<(), Error>;
}

fn main() {}
