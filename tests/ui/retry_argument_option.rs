// From the macro corpus (`f2_retry_argument_option`): fails with ATR-012.
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

pub struct NotClone;

#[bulkhead::resilient]
pub trait Svc {
    #[retry(max_attempts = 2)]
    fn call(&self, arg: Option<NotClone>) -> Result<(), E>;
}

fn main() {}
