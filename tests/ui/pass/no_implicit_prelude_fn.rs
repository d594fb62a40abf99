// From the macro corpus (`f19_no_implicit_prelude_fn`): compiles without a warning.
#![no_implicit_prelude]
#![deny(warnings)]

#[derive(Debug)]
pub struct E;
impl ::std::convert::From<::bulkhead::Rejection> for E {
    fn from(_: ::bulkhead::Rejection) -> Self { E }
}

#[::bulkhead::bulkhead(max_concurrent = 2)]
pub fn alone(x: u8) -> ::std::result::Result<u8, E> {
    ::std::result::Result::Ok(x)
}

#[::bulkhead::retry]
#[::bulkhead::timeout]
pub fn composed(x: u8) -> ::std::result::Result<u8, E> {
    ::std::result::Result::Ok(x)
}

pub struct S;
impl S {
    #[::bulkhead::bulkhead]
    pub fn method(&self) -> ::std::result::Result<u8, E> {
        ::std::result::Result::Ok(1)
    }
}

impl S {
    #[::bulkhead::retry]
    #[::bulkhead::circuit_breaker]
    pub fn composed_method(&self, x: u8) -> ::std::result::Result<u8, E> {
        ::std::result::Result::Ok(x)
    }

    #[::bulkhead::timeout]
    pub async fn async_method(&self, x: u8) -> ::std::result::Result<u8, E> {
        ::std::result::Result::Ok(x)
    }
}

#[::bulkhead::bulkhead(name = "named")]
pub async fn named_async(x: u8) -> ::std::result::Result<u8, E> {
    ::std::result::Result::Ok(x)
}

#[::bulkhead::timeout]
pub fn future(x: u8) -> impl ::std::future::Future<Output = ::std::result::Result<u8, E>> {
    async move { ::std::result::Result::Ok(x) }
}

#[::bulkhead::bulkhead]
pub fn boxed(
    x: u8,
) -> ::std::pin::Pin<::std::boxed::Box<dyn ::std::future::Future<Output = ::std::result::Result<u8, E>> + ::std::marker::Send>> {
    ::std::boxed::Box::pin(async move { ::std::result::Result::Ok(x) })
}

fn main() {}
