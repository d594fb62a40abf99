// From the macro corpus (`msg_backoff_not_a_number`): fails with ATR-008.
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

#[bulkhead::retry(backoff_multiplier = "2")]
pub fn call() -> Result<u8, E> { Ok(1) }

fn main() {}
