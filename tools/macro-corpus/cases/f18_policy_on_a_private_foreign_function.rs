// expect: error ATR-007
// edition: 2021

#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

extern "C" {
    #[bulkhead::retry]
    fn labs(x: i64) -> i64;
}
