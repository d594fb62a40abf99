// From the macro corpus (`f2_fn_retry_argument_option`): fails with ATR-012.
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

pub struct NotClone;

#[bulkhead::retry(max_attempts = 2)]
pub fn call(arg: Option<NotClone>) -> Result<(), E> {
    let _ = arg;
    Ok(())
}

fn main() {}
