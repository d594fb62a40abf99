// `max_concurrent` is written without a type suffix.
use bulkhead::{Rejection, resilient};

#[resilient]
pub trait Fetch {
    #[bulkhead(max_concurrent = 4u8)]
    fn fetch(&self) -> Result<u8, Rejection>;
}

fn main() {}
