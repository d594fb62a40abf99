// F12: a return type written as a type macro that expands to a `Result`.
use bulkhead::{Rejection, bulkhead, resilient};

macro_rules! outcome {
    ($t:ty) => { Result<$t, Error> };
}


#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[resilient]
pub trait Images {
    #[bulkhead]
    fn store(&self) -> outcome!(());
}

#[bulkhead]
pub fn store() -> outcome!(u8) {
    Ok(1)
}

fn main() {}
