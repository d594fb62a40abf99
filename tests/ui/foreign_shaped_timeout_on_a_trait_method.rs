// F20: a bare #[timeout(100)] has arguments ours never take (ntest's shape),
// so #[resilient] leaves it on the method; when it is ours after all, it
// says why it cannot be read (ATR-002).
use bulkhead::{Rejection, resilient, timeout};


#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[resilient]
pub trait Images {
    #[timeout(100)]
    fn store(&self) -> Result<(), Error>;
}

fn main() {}
