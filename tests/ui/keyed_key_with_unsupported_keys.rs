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
    #[bulkhead(per_key = 4, key = tenant, adaptive = "aimd", resource = "db", priority = "high", queue = "lifo")]
    fn call(&self, tenant: &str) -> Result<(), Error>;
}

fn main() {}
