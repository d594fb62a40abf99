// `#[chaos]` with a latency range whose start is after its end: ATR-001,
// spanned on the value.
use bulkhead::{Rejection, resilient};

#[resilient]
pub trait Inventory {
    #[chaos(latency_rate = 0.5, latency = "500ms..100ms")]
    fn stock(&self, item: &str) -> Result<u32, Rejection>;
}

fn main() {}
