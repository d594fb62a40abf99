// expect: error ATR-012

#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

pub struct NotClone;

#[bulkhead::retry(max_attempts = 2)]
pub fn call(arg: Box<dyn FnOnce()>) -> Result<(), E> {
    let _ = arg;
    Ok(())
}
