// From the macro corpus (`f14_suffixed_string_enabled`): fails with ATR-006.
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

#[bulkhead::resilient]
pub trait Svc {
    #[bulkhead(enabled = "true"x)]
    fn call(&self) -> Result<u8, E>;
}

fn main() {}
