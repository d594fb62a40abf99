// A `lifo` queue's `queue_target` is above zero (ATR-019).
use bulkhead::{Rejection, resilient};

#[resilient]
pub trait Search {
    #[bulkhead(max_concurrent = 8, max_wait = "1s", queue = "lifo", queue_target = "0")]
    fn search(&self, query: &str) -> Result<Vec<u8>, Rejection>;
}

fn main() {}
