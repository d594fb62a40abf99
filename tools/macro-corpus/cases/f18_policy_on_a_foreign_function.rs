// expect: error ATR-007
// edition: 2021

#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

extern "C" {
    #[bulkhead::bulkhead]
    pub fn abs(x: i32) -> i32;
}
