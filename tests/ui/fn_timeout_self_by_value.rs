// A policy other than `#[bulkhead]` on a method body taking `self` by
// value, which the closure that runs the body cannot move: not supported
// yet (ATR-007), over the receiver.
use bulkhead::{Rejection, timeout};

pub struct Counter(u32);

impl Counter {
    #[timeout(duration = "1s")]
    pub fn into_count(self) -> Result<u32, Rejection> {
        Ok(self.0)
    }
}

fn main() {}
