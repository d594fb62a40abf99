// From the macro corpus (`f11_fn_record_if_wrong_arity`): fails with ATR-011.
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

pub fn none() -> bool { true }

#[bulkhead::circuit_breaker(record_if = none)]
pub fn call() -> Result<u8, E> {
    Ok(1)
}

fn main() {}
