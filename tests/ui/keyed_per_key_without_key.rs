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
    #[bulkhead(max_concurrent = 8, per_key = 4, idle_evict = "5m")]
    fn call(&self, tenant: &str) -> Result<(), Error>;
}

fn main() {}
