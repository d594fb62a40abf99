// A trait method named like the wrapper's own `delegate` would be shadowed
// by it for every caller.
use bulkhead::{Rejection, resilient};

#[resilient]
pub trait Proxy {
    #[bulkhead(max_concurrent = 1)]
    fn delegate(&self) -> Result<u8, Rejection>;
}

fn main() {}
