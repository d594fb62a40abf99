// From the macro corpus (`f2_retry_argument_generic_vec`): fails with ATR-012.
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

#[bulkhead::resilient]
pub trait Svc {
    #[retry]
    fn call<T>(&self, arg: Vec<T>) -> Result<(), E>;
}

fn main() {}
