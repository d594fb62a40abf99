// From the macro corpus (`f10_where_ref_self_send`): fails with ATR-007.
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

#[bulkhead::resilient]
pub trait Svc where for<'a> &'a Self: Send {
    #[bulkhead]
    fn call(&self) -> Result<u8, E>;
}

fn main() {}
