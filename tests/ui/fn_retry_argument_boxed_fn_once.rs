// F2: a boxed `FnOnce` cannot be cloned for each attempt of a function
// with #[retry]: ATR-012.
use bulkhead::{Rejection, retry};


#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[retry(max_attempts = 2)]
pub fn run(job: Box<dyn FnOnce()>) -> Result<(), Error> {
    job();
    Ok(())
}

fn main() {}
