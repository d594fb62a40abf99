// From the macro corpus (`f14_suffixed_string_abort_on`): fails with ATR-009.
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

#[bulkhead::resilient]
pub trait Svc {
    #[retry(abort_on = ["Timeout"x])]
    fn call(&self) -> Result<u8, E>;
}

fn main() {}
