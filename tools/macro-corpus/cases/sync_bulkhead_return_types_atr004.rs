// expect: error ATR-004

#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

#[bulkhead::resilient]
pub trait SelfArg {
    #[bulkhead]
    fn bad_ret(&self, x: u8) -> Option<u8>;
    #[bulkhead]
    fn bad_err(&self, x: &str) -> Result<u8, String>;
    #[bulkhead]
    fn bad_mut(&mut self) -> Result<u8, String>;
    #[bulkhead]
    fn bad_owned(self) -> u8 where Self: Sized;
}
