// From the macro corpus (`msg_max_wait_interval_zero`): fails with ATR-008.
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

#[bulkhead::retry(max_wait_interval = "0")]
pub fn call() -> Result<u8, E> { Ok(1) }

fn main() {}
