use bulkhead::{Rejection, resilient};

#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

pub struct Body(pub Vec<u8>);

#[resilient]
pub trait Tenants {
    #[retry(max_attempts = 2)]
    #[bulkhead(per_key = 4, key = tenant)]
    fn call(&self, tenant: &str, body: Body) -> Result<(), Error>;
}

fn main() {}
