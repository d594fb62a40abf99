// From the macro corpus (`msg_abort_on_generic`): fails with ATR-009.
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

#[bulkhead::retry(abort_on = [Timeout::<u8>])]
pub fn call() -> Result<u8, E> { Ok(1) }

fn main() {}
