//! What a function with a body calls: the `static` its policies are kept
//! in ([`FnPolicy`], [`MethodPolicy`]), which takes their `PolicySpecs`.

pub use bulkhead_registry::{FnPolicy, MethodPolicy};
