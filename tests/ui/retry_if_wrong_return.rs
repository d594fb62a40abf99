// From the macro corpus (`f11_retry_if_wrong_return`): fails with ATR-011.
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

pub fn not_bool(_: &E) -> u8 { 1 }

#[bulkhead::resilient]
pub trait Svc {
    #[retry(retry_if = not_bool)]
    fn call(&self) -> Result<u8, E>;
}

fn main() {}
