// A future declared `Unpin` cannot be wrapped: the wrapper's future, which
// waits for a slot, is not `Unpin`.
use std::future::Future;

use bulkhead::{Rejection, resilient};

#[resilient]
pub trait Fetch {
    #[bulkhead(max_concurrent = 1)]
    fn fetch(&self) -> impl Future<Output = Result<u8, Rejection>> + Unpin + Send;
}

fn main() {}
