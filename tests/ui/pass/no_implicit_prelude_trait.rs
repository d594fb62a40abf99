// From the macro corpus (`f19_no_implicit_prelude_trait`): compiles without a warning.
#![no_implicit_prelude]
#![allow(async_fn_in_trait)]
#![deny(warnings)]

#[derive(Debug)]
pub struct E;
impl ::std::convert::From<::bulkhead::Rejection> for E {
    fn from(_: ::bulkhead::Rejection) -> Self { E }
}

#[::bulkhead::resilient]
pub trait Svc {
    #[bulkhead(max_concurrent = 2)]
    fn call(&self, x: u8) -> ::std::result::Result<u8, E>;
    #[retry]
    #[timeout]
    async fn composed(&self, x: u8) -> ::std::result::Result<u8, E>;
}

fn main() {}
