// From the macro corpus (`msg_abort_on_twice`): fails with ATR-009.
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

#[bulkhead::retry(abort_on = [Timeout, Timeout])]
pub fn call() -> Result<u8, E> { Ok(1) }

fn main() {}
