// expect: error ATR-007
// edition: 2024

#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

unsafe extern "C" {
    #[bulkhead::bulkhead]
    pub safe fn abs(x: i32) -> i32;
}
