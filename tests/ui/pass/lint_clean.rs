// The generated code raises no warning, even under `deny(warnings)`, for
// methods whose names are not snake case and for one-line bodies.
#![deny(warnings)]
use bulkhead::{Registry, Rejection, bulkhead, resilient};

#[resilient]
pub trait Legacy {
    #[allow(non_snake_case)]
    #[bulkhead(max_concurrent = 1)]
    fn GetThing(&self) -> Result<u8, Rejection>;
}

struct Old;

impl Legacy for Old {
    #[allow(non_snake_case)]
    fn GetThing(&self) -> Result<u8, Rejection> { Ok(7) }
}

#[bulkhead(max_concurrent = 1)]
fn one_line(x: u8) -> Result<u8, Rejection> { Ok(x) }

fn main() {
    let registry = Registry::new();
    let legacy = ResilientLegacy::new(Old, &registry).unwrap();
    assert_eq!(legacy.GetThing().unwrap(), 7);
    assert_eq!(one_line(1).unwrap(), 1);
}
