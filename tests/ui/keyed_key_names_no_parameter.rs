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
    #[bulkhead(name = "api", per_key = 4, key = tennant)]
    fn call(&self, tenant: &str, body: Vec<u8>) -> Result<(), Error>;
}

fn main() {}
