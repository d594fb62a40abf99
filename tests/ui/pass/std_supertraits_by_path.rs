// From the macro corpus (`f10_std_supertraits_by_path_pass`): compiles without a warning.
#![deny(warnings)]
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

#[bulkhead::resilient]
pub trait Svc: std::fmt::Debug + core::clone::Clone + ::std::marker::Send + Sync + Unpin + Sized {
    #[bulkhead]
    fn call(&self) -> Result<u8, E>;
}

fn main() {}
