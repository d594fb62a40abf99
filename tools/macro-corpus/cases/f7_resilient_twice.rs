// expect: error ATR-002

#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

#[bulkhead::resilient]
#[bulkhead::resilient]
pub trait Svc {
    #[bulkhead(max_concurrent = 2)]
    fn call(&self) -> Result<u8, E>;
}
