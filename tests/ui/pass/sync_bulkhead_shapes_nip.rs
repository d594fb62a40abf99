// From the macro corpus (`sync_bulkhead_shapes_nip`): compiles without a warning.
#![no_implicit_prelude]
#![allow(clippy::all)]
#![deny(warnings)]

use ::std::fmt::Debug; use ::std::result::Result::{self, Ok}; use ::std::string::String; use ::std::vec::Vec; use ::std::boxed::Box; use ::std::ops::{Fn, FnOnce}; use ::std::convert::{AsRef, From}; use ::std::clone::Clone; use ::std::marker::Sized;

#[derive(::std::fmt::Debug)]
pub struct E;
impl From<::bulkhead::Rejection> for E {
    fn from(_: ::bulkhead::Rejection) -> Self { E }
}

pub type Res<T> = Result<T, E>;

#[::bulkhead::resilient]
pub trait Shapes {
    #[bulkhead]
    fn zero(&self) -> Result<u8, E>;
    #[bulkhead]
    fn by_value(self, x: String) -> Result<String, E> where Self: Sized;
    #[bulkhead]
    fn by_mut(&mut self, x: u8) -> Result<u8, E>;
    #[bulkhead]
    fn generic<T: Clone + Debug>(&self, t: T) -> Result<T, E>;
    #[bulkhead]
    fn apit(&self, x: impl AsRef<str>, f: impl Fn(u8) -> u8) -> Result<u8, E>;
    #[bulkhead]
    fn elided(&self, s: &str) -> Result<&str, E>;
    #[bulkhead]
    fn named<'a>(&'a self, s: &'a str) -> Result<&'a str, E>;
    #[bulkhead]
    fn from_arg<'a, 'b>(&self, a: &'a str, b: &'b mut Vec<&'a str>) -> Result<&'a str, E>;
    #[bulkhead]
    fn owned_lt<'a>(self, s: &'a str) -> Result<&'a str, E> where Self: Sized;
    #[bulkhead]
    fn mut_borrow(&mut self) -> Result<&mut u8, E>;
    #[bulkhead]
    unsafe fn unsafe_one(&self, p: *const u8) -> Result<u8, E>;
    #[cfg(any())]
    #[bulkhead]
    fn cfg_off(&self, x: u8) -> Result<u8, E>;
    #[cfg(all())]
    #[bulkhead]
    fn cfg_on(&self, x: u8) -> Result<u8, E>;
    #[bulkhead]
    fn patterns(&self, (a, b): (u8, u8), _: u8, mut c: u8) -> Result<u8, E> {
        c += a + b;
        Ok(c)
    }
    #[bulkhead]
    fn many(&self, a: u8, b: u16, c: u32, d: u64, e: i8, f: i16, g: i32, h: i64, i: String, j: &str, k: Vec<u8>, l: (u8, u8), m: [u8; 3]) -> Result<u8, E>;
    #[bulkhead]
    fn alias(&self, x: u8) -> Res<u8>;
    #[bulkhead]
    fn konst<const N: usize>(&self, a: [u8; N]) -> Result<[u8; N], E>;
    #[bulkhead]
    fn hrtb(&self, f: &dyn for<'x> Fn(&'x str) -> &'x str, g: Box<dyn FnOnce() -> u8 + '_>) -> Result<u8, E>;
    #[bulkhead]
    fn rpit(&self) -> Result<impl Debug, E>;
    #[bulkhead]
    fn slice_pat(&self, [a, b]: [u8; 2]) -> Result<u8, E> { Ok(a + b) }
}

#[::bulkhead::resilient]
pub trait Generic<T: Clone> {
    type Out: Debug;
    type Err: From<::bulkhead::Rejection>;
    #[bulkhead(max_concurrent = 3, max_wait = "10ms")]
    fn get(&self, t: T, n: &Self::Out) -> Result<Self::Out, Self::Err>;
    #[bulkhead]
    fn assoc(&self) -> Result<Vec<Self::Out>, Self::Err>;
}

#[::bulkhead::resilient]
pub trait Dyn {
    #[bulkhead]
    fn d(&self, x: &mut [u8]) -> Result<usize, E>;
}
pub fn use_dyn(x: &dyn Dyn) -> Result<usize, E> { x.d(&mut [1, 2]) }

fn main() {}
