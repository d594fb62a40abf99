// From the macro corpus (`attribute_orders_fn`): compiles without a warning.
#![deny(warnings)]
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

#[bulkhead::timeout]
#[bulkhead::bulkhead]
#[bulkhead::retry]
#[bulkhead::rate_limiter]
#[bulkhead::circuit_breaker]
pub fn a(x: u8) -> Result<u8, E> { Ok(x) }

#[bulkhead::circuit_breaker]
#[bulkhead::retry]
pub fn b(x: u8) -> Result<u8, E> { Ok(x) }

fn main() {}
