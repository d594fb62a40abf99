// expect: error ATR-002

#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

#[bulkhead::bulkhead(__bulkhead_applied)]
pub fn call() -> Result<u8, E> {
    Ok(1)
}
