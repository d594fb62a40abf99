// A `codel` queue's `queue_target` is below its `queue_interval` (ATR-019).
use bulkhead::{Rejection, resilient};

#[resilient]
pub trait Search {
    #[bulkhead(
        max_concurrent = 8,
        max_wait = "1s",
        queue = "codel",
        queue_target = "100ms",
        queue_interval = "100ms"
    )]
    fn search(&self, query: &str) -> Result<Vec<u8>, Rejection>;
}

fn main() {}
