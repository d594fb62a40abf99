// expect: pass

#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

pub mod deps {
    pub use bulkhead;
}

#[bulkhead::resilient(crate = "crate::deps::bulkhead")]
pub trait Svc {
    #[bulkhead(max_concurrent = 2)]
    fn call(&self) -> Result<u8, E>;
}

#[bulkhead::timeout(crate = "crate::deps::bulkhead", duration = "1s")]
#[bulkhead::retry]
pub fn call(x: u8) -> Result<u8, E> {
    Ok(x)
}
