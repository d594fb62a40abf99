// expect: pass
// also: fake_ntest = { path = "SUPPORT/fake_ntest" }

#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

use fake_ntest::timeout;

#[timeout(100)]
#[bulkhead::bulkhead]
pub fn call() -> Result<u8, E> {
    Ok(1)
}
