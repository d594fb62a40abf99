// A bulkhead reserves at most its limit.
use bulkhead::{Rejection, resilient};

#[resilient]
pub trait Fetch {
    #[bulkhead(max_concurrent = 4, reserved = 5, resource = "db")]
    fn fetch(&self) -> Result<u8, Rejection>;
}

fn main() {}
