// A duration longer than `Duration::MAX`: ATR-001 on the string, saying it
// is too large. humantime alone panics on this one (the nanoseconds carry a
// second onto u64::MAX seconds).
use bulkhead::{Rejection, resilient};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[resilient]
pub trait Thumbnails {
    #[bulkhead(max_wait = "18446744073709551615s 1000ms")]
    fn thumbnail(&self, id: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
