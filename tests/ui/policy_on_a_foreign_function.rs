// F18: a foreign function has no body to wrap: ATR-007.
use bulkhead::bulkhead;


unsafe extern "C" {
    #[bulkhead]
    pub fn abs(x: i32) -> i32;
}

fn main() {}
