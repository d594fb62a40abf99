// From the macro corpus (`f21_lint_attribute_on_a_parameter`): compiles without a warning.
#![deny(warnings)]
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

#[bulkhead::retry]
#[bulkhead::timeout]
pub fn call(#[allow(unused_mut)] mut x: u8) -> Result<u8, E> {
    Ok(x)
}

#[bulkhead::timeout]
pub async fn call_async(#[allow(unused_mut)] mut x: u8, #[allow(unused_variables)] y: u8) -> Result<u8, E> {
    Ok(x)
}

fn main() {}
