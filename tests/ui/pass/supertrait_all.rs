// From the macro corpus (`f3_supertrait_all`): compiles without a warning.
#![deny(warnings)]
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

#[bulkhead::resilient]
pub trait Svc: std::panic::UnwindSafe + std::panic::RefUnwindSafe + Send + Sync {
    #[bulkhead(max_concurrent = 2)]
    fn call(&self) -> Result<u8, E>;
    #[retry]
    #[timeout]
    fn composed(&self) -> Result<u8, E>;
}

pub fn wrapper_is_unwind_safe<D: Svc>(w: ResilientSvc<D>) {
    fn check<T: std::panic::UnwindSafe + std::panic::RefUnwindSafe>(_: T) {}
    check(w)
}

fn main() {}
