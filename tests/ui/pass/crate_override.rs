// F5: `crate = ".."` names the facade where it is re-exported, on
// #[resilient] and on a function's attribute; its paths are from there.
use bulkhead::Rejection;

pub mod deps {
    pub use bulkhead;
}


#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[bulkhead::resilient(crate = "crate::deps::bulkhead")]
pub trait Images {
    #[bulkhead(max_concurrent = 2)]
    fn store(&self) -> Result<(), Error>;
    #[retry]
    #[timeout]
    fn fetch(&self, id: u32) -> Result<u32, Error>;
}

#[bulkhead::timeout(crate = "crate::deps::bulkhead", duration = "1s")]
#[bulkhead::retry]
pub fn fetch(id: u32) -> Result<u32, Error> {
    Ok(id)
}

fn main() {}
