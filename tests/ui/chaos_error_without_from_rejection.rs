// `#[chaos]` alone on a function whose error type has no `From<Rejection>`:
// an injected fault could not reach it. ATR-004 over the return type,
// naming #[chaos].
use bulkhead::chaos;

#[derive(Debug)]
pub struct Error;

#[chaos(fault_rate = 0.1)]
fn stock(item: &str) -> Result<u32, Error> {
    Ok(item.len() as u32)
}

fn main() {}
