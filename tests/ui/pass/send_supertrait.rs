// From the macro corpus (`nip_send_supertrait`): compiles without a warning.
#![no_implicit_prelude]
#![deny(warnings)]

#[derive(::std::fmt::Debug)]
pub struct E;
impl ::std::convert::From<::bulkhead::Rejection> for E {
    fn from(_: ::bulkhead::Rejection) -> Self { E }
}

#[::bulkhead::resilient]
pub trait Svc: ::std::marker::Send + ::std::marker::Sync {
    #[bulkhead(max_concurrent = 2)]
    fn call(&self, x: u8) -> ::std::result::Result<u8, E>;
}

fn main() {}
