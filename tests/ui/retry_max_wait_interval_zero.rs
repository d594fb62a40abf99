// A `max_wait_interval` of zero (leave it out for no cap): ATR-008, on a
// function with a body.
use bulkhead::{Rejection, retry};

#[retry(wait = "10ms", max_wait_interval = "0ms")]
fn fetch(id: &str) -> Result<Vec<u8>, Rejection> {
    Ok(id.as_bytes().to_vec())
}

fn main() {
    let _ = fetch("x");
}
