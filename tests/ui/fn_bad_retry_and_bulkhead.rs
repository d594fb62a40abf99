// Errors in two policy attributes of one function are each reported once,
// by the attribute that expands first, and the function stays usable.
use bulkhead::{Rejection, bulkhead, retry};

#[retry(max_attempts = 0)]
#[bulkhead(max_concurrent = 0)]
pub fn fetch(id: &str) -> Result<usize, Rejection> {
    Ok(id.len())
}

fn main() {
    let _ = fetch("a");
}
