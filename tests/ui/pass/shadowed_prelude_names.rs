// From the macro corpus (`shadowed_prelude_names`): compiles without a warning.
#![allow(non_camel_case_types, dead_code)]
#![allow(async_fn_in_trait)]
#![deny(warnings)]

#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

pub mod core {}
pub mod std {}
pub struct Ok;
pub struct Some;
pub struct None;
pub struct Box;
pub struct Clone;
pub trait Future {}
pub struct Result;
pub struct Option;
pub struct String;
pub struct Vec;

#[bulkhead::resilient]
pub trait Svc {
    #[bulkhead(max_concurrent = 2)]
    fn call(&self, x: u8) -> ::core::result::Result<u8, E>;
    #[retry]
    #[timeout]
    async fn composed(&self, x: u8) -> ::core::result::Result<u8, E>;
}

#[bulkhead::retry]
#[bulkhead::bulkhead]
pub fn composed(x: u8) -> ::core::result::Result<u8, E> { ::core::result::Result::Ok(x) }

fn main() {}
