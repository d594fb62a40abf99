// From the macro corpus (`f14_suffixed_string_name`): fails with ATR-002.
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

#[bulkhead::resilient]
pub trait Svc {
    #[bulkhead(name = "x"sfx)]
    fn call(&self) -> Result<u8, E>;
}

fn main() {}
