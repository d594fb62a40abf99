use bulkhead::{Rejection, resilient};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[derive(Clone, PartialEq, Eq)]
pub struct Tenant(pub u64);

#[resilient]
pub trait Tenants {
    #[retry(max_attempts = 2)]
    #[bulkhead(per_key = 4, key = tenant)]
    fn call(&self, tenant: Tenant) -> Result<(), Error>;
}

fn main() {}
