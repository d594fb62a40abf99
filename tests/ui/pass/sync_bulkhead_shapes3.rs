// From the macro corpus (`sync_bulkhead_shapes3`): compiles without a warning.
#![deny(warnings)]
use std::fmt::Debug;

#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

#[bulkhead::resilient]
pub trait Lt<'a> {
    #[bulkhead]
    fn f(&self, x: &'a str) -> Result<&'a str, E>;
    #[bulkhead]
    fn g(&'a self) -> Result<&'a str, E>;
}

#[bulkhead::resilient]
pub trait Gat {
    type Item<'x>: Debug where Self: 'x;
    #[bulkhead]
    fn get<'x>(&'x self, n: usize) -> Result<Self::Item<'x>, E>;
    #[bulkhead]
    fn rpit(&self, s: &str) -> Result<impl Debug, E>;
    #[bulkhead]
    unsafe fn unsafe_one(&self, p: *const u8) -> Result<u8, E>;
    #[bulkhead]
    fn by_value(self, x: String) -> Result<String, E> where Self: Sized;
}

fn main() {}
