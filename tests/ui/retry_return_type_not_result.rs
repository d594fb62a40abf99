// `#[retry]` (through `Policies`) on a method that does not return a
// `Result`: ATR-004 once, over the return type, and nothing else.
use bulkhead::resilient;

#[resilient]
pub trait Images {
    #[retry(max_attempts = 2)]
    #[timeout(duration = "1s")]
    fn fetch(&self, id: &str) -> Vec<u8>;

    #[circuit_breaker]
    async fn fetch_async(&self, id: &str) -> Option<Vec<u8>>;
}

fn main() {}
