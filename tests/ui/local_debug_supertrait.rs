// From the macro corpus (`f10_local_debug_supertrait`): fails with ATR-007.
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

pub trait Debug {}

#[bulkhead::resilient]
pub trait Svc: Debug {
    #[bulkhead]
    fn call(&self) -> Result<u8, E>;
}

fn main() {}
