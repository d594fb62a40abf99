// expect: error ATR-011

#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

pub fn two(_: &E, _: u8) -> bool { true }

#[bulkhead::resilient]
pub trait Svc {
    #[retry(retry_if = two)]
    fn call(&self) -> Result<u8, E>;
}
