// From the macro corpus (`f16_end_of_input_in_a_method_attribute`): fails with ATR-003.
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

#[bulkhead::resilient]
pub trait Svc {
    #[bulkhead(max_concurrent = )]
    fn call(&self) -> Result<u8, E>;
}

fn main() {}
