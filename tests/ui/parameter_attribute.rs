// An attribute on a parameter cannot be carried over to the wrapper's call
// of the delegate.
use bulkhead::{Rejection, resilient};

#[resilient]
pub trait Fetch {
    #[bulkhead(max_concurrent = 1)]
    fn fetch(&self, #[cfg(debug_assertions)] trace: u64, key: &str) -> Result<u8, Rejection>;
}

fn main() {}
