// From the macro corpus (`f6_cfg_on_a_parameter_composed`): compiles without a warning.
#![deny(warnings)]
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

#[bulkhead::retry]
#[bulkhead::timeout]
pub fn call(#[cfg(any())] skipped: u8, kept: u8) -> Result<u8, E> {
    Ok(kept)
}

#[bulkhead::timeout]
pub async fn call_async(#[cfg(any())] skipped: u8, kept: u8) -> Result<u8, E> {
    Ok(kept)
}

#[bulkhead::circuit_breaker]
pub fn once(#[cfg(all())] kept: u8, #[cfg(any())] skipped: String) -> Result<u8, E> {
    Ok(kept)
}

fn main() {}
