// `queue` is one of "fifo", "lifo", "codel" (ATR-010).
use bulkhead::{Rejection, resilient};

#[resilient]
pub trait Search {
    #[bulkhead(max_concurrent = 8, max_wait = "1s", queue = "fair")]
    fn search(&self, query: &str) -> Result<Vec<u8>, Rejection>;
}

fn main() {}
