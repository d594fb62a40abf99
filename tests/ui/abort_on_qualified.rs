// From the macro corpus (`msg_abort_on_qualified`): fails with ATR-009.
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

pub mod Foo { pub struct Timeout; }

#[bulkhead::retry(abort_on = [Foo::Timeout])]
pub fn call() -> Result<u8, E> { Ok(1) }

fn main() {}
