// F16: a key with nothing after its `=` in a trait method's attribute is
// reported on that key, not on #[resilient].
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
    #[bulkhead(max_concurrent = )]
    fn store(&self) -> Result<(), Error>;
}

fn main() {}
