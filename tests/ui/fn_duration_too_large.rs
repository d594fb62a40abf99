// A function's timeout longer than `Duration::MAX`: ATR-001 on the string,
// saying it is too large, not a panic of the macro.
use bulkhead::{Rejection, timeout};

#[timeout(duration = "18446744073709551615s 999999999ns 1ns")]
fn render(id: &str) -> Result<String, Rejection> {
    Ok(id.to_owned())
}

fn main() {
    let _ = render("a");
}
