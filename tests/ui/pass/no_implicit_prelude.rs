// F19: generated code never depends on the user's prelude: both forms
// compile under #![no_implicit_prelude].
#![no_implicit_prelude]
#![allow(async_fn_in_trait)]

#[derive(Debug)]
pub struct Error;

impl ::std::convert::From<::bulkhead::Rejection> for Error {
    fn from(_: ::bulkhead::Rejection) -> Self {
        Error
    }
}

#[::bulkhead::resilient]
pub trait Images {
    #[bulkhead(max_concurrent = 2)]
    fn store(&self, id: u32) -> ::std::result::Result<u32, Error>;
    #[retry]
    #[timeout]
    async fn fetch(&self, id: u32) -> ::std::result::Result<u32, Error>;
}

#[::bulkhead::bulkhead(max_concurrent = 2)]
pub fn alone(id: u32) -> ::std::result::Result<u32, Error> {
    ::std::result::Result::Ok(id)
}

#[::bulkhead::retry]
#[::bulkhead::timeout]
pub fn composed(id: u32) -> ::std::result::Result<u32, Error> {
    ::std::result::Result::Ok(id)
}

pub struct Store;

impl Store {
    #[::bulkhead::retry]
    #[::bulkhead::circuit_breaker]
    pub fn method(&self, id: u32) -> ::std::result::Result<u32, Error> {
        ::std::result::Result::Ok(id)
    }
}

fn main() {}
