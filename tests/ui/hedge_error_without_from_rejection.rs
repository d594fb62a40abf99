// `#[hedge]` alone on a method whose error type has no `From<Rejection>`:
// ATR-004 over the return type, naming #[hedge] (not #[bulkhead]).
use bulkhead::resilient;

#[derive(Debug)]
pub struct Error;

#[resilient]
pub trait Search {
    #[hedge(delay = "50ms")]
    async fn find(&self, query: &str) -> Result<String, Error>;
}

fn main() {}
