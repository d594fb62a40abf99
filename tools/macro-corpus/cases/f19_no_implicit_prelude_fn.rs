// expect: pass

#![no_implicit_prelude]

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
