// An async method that does not return a `Result` is reported once, with
// its code, at its return type.
#![allow(async_fn_in_trait)]
use bulkhead::resilient;

#[resilient]
pub trait Thumbnails {
    #[bulkhead(max_concurrent = 4)]
    async fn thumbnail(&self, id: &str) -> Vec<u8>;
}

fn main() {}
