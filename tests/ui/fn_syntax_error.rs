// A syntax error in a function's body is reported alone: no ATR-007.
use bulkhead::{Rejection, bulkhead};

#[bulkhead(max_concurrent = 1)]
fn render() -> Result<u8, Rejection> {
    let x = ;
    Ok(1)
}

fn main() {
    let _ = render();
}
