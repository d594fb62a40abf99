// From the macro corpus (`f2_fn_retry_argument_box`): fails with ATR-012.
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

pub struct NotClone;

#[bulkhead::retry(max_attempts = 2)]
pub fn call(arg: Box<NotClone>) -> Result<(), E> {
    let _ = arg;
    Ok(())
}

fn main() {}
