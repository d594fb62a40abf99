// From the macro corpus (`f14_suffixed_string_sliding_window`): fails with ATR-010.
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

#[bulkhead::resilient]
pub trait Svc {
    #[circuit_breaker(sliding_window = "count"x)]
    fn call(&self) -> Result<u8, E>;
}

fn main() {}
