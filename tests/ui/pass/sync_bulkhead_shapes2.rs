// From the macro corpus (`sync_bulkhead_shapes2`): compiles without a warning.
#![deny(warnings)]
use std::fmt::Debug;

#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

pub trait Helper {}

#[bulkhead::resilient]
pub trait Shapes2 {
    #[bulkhead]
    fn make<T: Default>(&self, x: impl Debug) -> Result<T, E>;
    #[bulkhead]
    fn infer<T>(&self, x: impl Debug, t: T) -> Result<Vec<T>, E>;
    #[bulkhead]
    fn nested<'a, T: ?Sized + Debug>(&'a self, t: &'a T, f: impl FnOnce(&T) -> &T) -> Result<&'a T, E>;
    #[bulkhead]
    fn static_ref(&self, s: &'static str) -> Result<&'static str, E>;
    #[bulkhead]
    fn mut_slice<'a>(&mut self, s: &'a mut [u8]) -> Result<&'a mut [u8], E>;
    #[bulkhead]
    fn tuple_ret(&self, a: (u8, &str)) -> Result<(u8, String), E>;
    #[bulkhead]
    fn dyn_arg(&self, h: &dyn Helper, b: Box<dyn Helper + Send>) -> Result<u8, E>;
    #[bulkhead]
    fn never(&self) -> Result<std::convert::Infallible, E>;
    #[bulkhead]
    fn unit(&self) -> Result<(), E>;
    #[bulkhead]
    fn raw_ident(&self, r#type: u8, r#match: u8) -> Result<u8, E>;
}

fn main() {}
