// An async method whose error type lacks `From<Rejection>` is reported
// once, with its code, at its return type.
#![allow(async_fn_in_trait)]
use bulkhead::resilient;

#[derive(Debug)]
pub struct Error;

#[resilient]
pub trait Thumbnails {
    #[bulkhead(max_concurrent = 4)]
    async fn thumbnail(&self, id: &str) -> Result<Vec<u8>, Error>;
}

fn main() {}
