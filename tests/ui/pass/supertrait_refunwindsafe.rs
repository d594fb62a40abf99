// From the macro corpus (`f3_supertrait_refunwindsafe`): compiles without a warning.
#![deny(warnings)]
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

#[bulkhead::resilient]
pub trait Svc: std::panic::RefUnwindSafe {
    #[bulkhead(max_concurrent = 2)]
    fn call(&self) -> Result<u8, E>;
    #[retry]
    #[timeout]
    fn composed(&self) -> Result<u8, E>;
}

fn main() {}
