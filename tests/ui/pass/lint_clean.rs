// The generated code raises no warning, even under `deny(warnings)`, for
// methods whose names are not snake case and for one-line bodies, under
// a bulkhead alone or composed policies.
#![deny(warnings)]
use bulkhead::{Registry, Rejection, bulkhead, resilient, retry, timeout};

#[resilient]
pub trait Legacy {
    #[allow(non_snake_case)]
    #[bulkhead(max_concurrent = 1)]
    fn GetThing(&self) -> Result<u8, Rejection>;

    #[allow(non_snake_case)]
    #[retry(max_attempts = 2, wait = "0")]
    #[timeout(duration = "1s")]
    fn GetOther(&self, Key: u8) -> Result<u8, Rejection>;
}

struct Old;

impl Legacy for Old {
    #[allow(non_snake_case)]
    fn GetThing(&self) -> Result<u8, Rejection> { Ok(7) }
    #[allow(non_snake_case)]
    fn GetOther(&self, Key: u8) -> Result<u8, Rejection> { Ok(Key) }
}

#[bulkhead(max_concurrent = 1)]
fn one_line(x: u8) -> Result<u8, Rejection> { Ok(x) }

#[retry(max_attempts = 2, wait = "0")]
#[bulkhead(max_concurrent = 1)]
fn one_line_retried(x: u8) -> Result<u8, Rejection> { Ok(x) }

#[timeout(duration = "1s")]
async fn one_line_timed(x: u8) -> Result<u8, Rejection> { Ok(x) }

fn main() {
    let registry = Registry::new();
    let legacy = ResilientLegacy::new(Old, &registry).unwrap();
    assert_eq!(legacy.GetThing().unwrap(), 7);
    assert_eq!(one_line(1).unwrap(), 1);
    assert_eq!(legacy.GetOther(2).unwrap(), 2);
    assert_eq!(one_line_retried(3).unwrap(), 3);
    drop(one_line_timed(4));
}
