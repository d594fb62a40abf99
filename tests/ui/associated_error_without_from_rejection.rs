// An associated error type without a `From<Rejection>` bound: the error
// says to add the bound.
use bulkhead::resilient;

#[resilient]
pub trait Thumbnails {
    type Error;

    #[bulkhead(max_concurrent = 4)]
    fn thumbnail(&self, id: &str) -> Result<Vec<u8>, Self::Error>;
}

fn main() {}
