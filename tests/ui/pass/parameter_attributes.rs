// F6, F21: a function under composed policies keeps its parameters'
// #[cfg] (a parameter compiled out is bound nowhere) and lint attributes
// (no warning the user silenced).
#![deny(warnings)]

use bulkhead::{Rejection, circuit_breaker, retry, timeout};


#[derive(Debug)]
pub struct Error;

impl From<Rejection> for Error {
    fn from(_: Rejection) -> Self {
        Error
    }
}

#[retry]
#[timeout]
pub fn fetch(#[cfg(any())] trace: u8, #[allow(unused_mut)] mut id: u32) -> Result<u32, Error> {
    Ok(id)
}

#[timeout]
pub async fn fetch_async(
    #[cfg(any())] trace: u8,
    #[allow(unused_mut)] mut id: u32,
    #[allow(unused_variables)] unused: u8,
) -> Result<u32, Error> {
    Ok(id)
}

#[circuit_breaker]
pub fn once(#[cfg(all())] id: u32, #[cfg(any())] trace: String) -> Result<u32, Error> {
    Ok(id)
}

fn main() {}
