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
    #[bulkhead(per_key = 4, key = tenant)]
    fn call<T: std::hash::Hash + Eq>(&self, tenant: T) -> Result<(), Error>;
}

fn main() {}
