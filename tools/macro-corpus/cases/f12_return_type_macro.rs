// expect: pass

#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

macro_rules! res {
    ($t:ty) => { Result<$t, E> };
}

#[bulkhead::resilient]
pub trait Svc {
    #[bulkhead]
    fn call(&self) -> res!(u8);
}

#[bulkhead::bulkhead]
pub fn call() -> res!(u8) {
    Ok(1)
}
