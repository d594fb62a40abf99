// `#[retry]` on a method of a trait without `#[resilient]`: ATR-005, add it.
use bulkhead::{Rejection, retry};

pub trait Images {
    #[retry(max_attempts = 2)]
    fn fetch(&self, id: &str) -> Result<Vec<u8>, Rejection>;
}

fn main() {}
