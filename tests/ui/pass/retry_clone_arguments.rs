// From the macro corpus (`f2_retry_clone_arguments_pass`): compiles without a warning.
#![deny(warnings)]
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

#[bulkhead::resilient]
pub trait Svc {
    #[retry]
    fn call(&self, a: Vec<u8>, b: Option<String>, c: (u8, &str), d: Box<u8>) -> Result<(), E>;
}

fn main() {}
