// From the macro corpus (`msg_upper_case_key`): fails with ATR-002.
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

#[bulkhead::bulkhead(MAX_CONCURRENT = 3)]
pub fn call() -> Result<u8, E> { Ok(1) }

fn main() {}
