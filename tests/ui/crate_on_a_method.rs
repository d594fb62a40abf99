// From the macro corpus (`f5_crate_on_a_method`): fails with ATR-002.
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

#[bulkhead::resilient]
pub trait Svc {
    #[bulkhead(crate = "bulkhead", max_concurrent = 2)]
    fn call(&self) -> Result<u8, E>;
}

fn main() {}
