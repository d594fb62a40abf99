// From the macro corpus (`f14_suffixed_string_max_wait`): fails with ATR-001.
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

#[bulkhead::resilient]
pub trait Svc {
    #[bulkhead(max_wait = "1s"ms)]
    fn call(&self) -> Result<u8, E>;
}

fn main() {}
