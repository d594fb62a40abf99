// A syntax error in a default method is reported alone: no ATR-007, no
// "cannot find attribute `bulkhead`".
use bulkhead::{Rejection, resilient};

#[resilient]
pub trait Fetch {
    #[bulkhead(max_concurrent = 1)]
    fn fetch(&self) -> Result<u8, Rejection> {
        let x = ;
        Ok(1)
    }
}

fn main() {}
