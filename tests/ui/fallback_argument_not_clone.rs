// An argument that is not `Clone`, which the fallback needs after the call: ATR-012.
use bulkhead::{Rejection, resilient};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

pub struct Upload {
    pub bytes: Vec<u8>,
}

#[resilient]
pub trait Images {
    #[fallback(method = "queue")]
    #[bulkhead]
    fn store(&self, upload: Upload) -> Result<(), Error>;
    fn queue(&self, upload: Upload) -> Result<(), Error>;
}

fn main() {}
