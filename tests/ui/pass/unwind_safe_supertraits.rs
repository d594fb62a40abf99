// F3: the documented supertraits UnwindSafe and RefUnwindSafe compile, and
// the wrapper is unwind safe when its delegate is.
use std::panic::{RefUnwindSafe, UnwindSafe};

use bulkhead::{Rejection, resilient};


#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[resilient]
pub trait Images: UnwindSafe + RefUnwindSafe + Send + Sync {
    #[bulkhead(max_concurrent = 2)]
    fn store(&self) -> Result<(), Error>;
    #[retry]
    #[timeout]
    fn fetch(&self, id: u32) -> Result<u32, Error>;
}

pub fn unwind_safe<D: Images>(wrapper: ResilientImages<D>) {
    fn check<T: UnwindSafe + RefUnwindSafe>(_: T) {}
    check(wrapper);
}

fn main() {}
