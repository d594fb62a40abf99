use bulkhead::{Rejection, resilient};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[resilient]
pub trait Tenants {
    #[retry(max_attempts = 2, key = tenant)]
    fn call(&self, tenant: &str) -> Result<(), Error>;
}

fn main() {}
