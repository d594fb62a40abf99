// From the macro corpus (`f17_raw_identifier_attribute`): compiles without a warning.
#![deny(warnings)]
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

#[bulkhead::resilient]
pub trait Svc {
    #[r#bulkhead(max_concurrent = 2)]
    #[r#retry]
    fn call(&self) -> Result<u8, E>;
}

fn main() {}
