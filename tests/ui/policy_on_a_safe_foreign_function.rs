// From the macro corpus (`f18_policy_on_a_safe_foreign_function`): fails with ATR-007.
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

unsafe extern "C" {
    #[bulkhead::bulkhead]
    pub safe fn abs(x: i32) -> i32;
}

fn main() {}
