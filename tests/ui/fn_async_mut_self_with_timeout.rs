// A policy other than `#[bulkhead]` on an `async fn` body taking `&mut
// self`: not supported yet (ATR-007, over `&mut self`); a #[resilient]
// trait's wrapper supports it.
use bulkhead::{Rejection, timeout};

pub struct Counter(u32);

impl Counter {
    #[timeout(duration = "1s")]
    pub async fn bump(&mut self) -> Result<u32, Rejection> {
        self.0 += 1;
        Ok(self.0)
    }
}

fn main() {}
