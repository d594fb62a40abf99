// From the macro corpus (`explicit_lifetimes`): compiles without a warning.
// Explicit lifetimes the signatures need, on sync and boxed-future
// methods: the generated impl carries them without a lint to allow.
#![deny(warnings)]
#[derive(Debug)]
pub struct E;
impl From<bulkhead::Rejection> for E {
    fn from(_: bulkhead::Rejection) -> Self { E }
}

#[bulkhead::resilient]
pub trait Svc: Send + Sync {
    #[bulkhead(max_concurrent = 2)]
    fn get<'a>(&'a self, key: &'a str) -> Result<&'a str, E>;
    #[bulkhead(max_concurrent = 2)]
    fn fut<'a>(&'a self, key: &'a str) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<u8, E>> + Send + 'a>>;
}

fn main() {}
