// `#[timeout]` on a method whose error type cannot hold a rejection:
// ATR-004 once, over the return type.
use bulkhead::resilient;

#[derive(Debug)]
pub struct Error;

#[resilient]
pub trait Images {
    #[timeout(duration = "1s")]
    #[retry(retry_if = is_transient)]
    fn fetch(&self, id: &str) -> Result<Vec<u8>, Error>;
}

pub fn is_transient(_: &Error) -> bool {
    true
}

fn main() {}
