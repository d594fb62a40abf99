use bulkhead::{Rejection, bulkhead, retry, timeout};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

// On a method of a #[resilient] trait a keyed bulkhead composes with other
// policies; on a function with a body it runs alone, for now.
#[retry(max_attempts = 2)]
#[bulkhead(per_key = 4, key = tenant)]
#[timeout(duration = "1s")]
fn call(tenant: &str) -> Result<(), Error> {
    let _ = tenant;
    Ok(())
}

fn main() {}
