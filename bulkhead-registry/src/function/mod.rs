//! Policies of functions with a body: a policy attribute outside a
//! `#[resilient]` trait wraps the function's body, whose policies are
//! declared in [`Registry::global`](crate::Registry::global) on its first
//! call and kept in a `static` ([`FnPolicy`], or [`MethodPolicy`] for a
//! method).
//!
//! Such a function cannot return a registry error. If the registry refuses
//! its policies, the error is kept on the registry
//! ([`Registry::function_policy_errors`](crate::Registry::function_policy_errors))
//! and the function runs under policies built on their own
//! ([`PolicySpecs::build_standalone`](crate::PolicySpecs::build_standalone)).
//!
//! Support for generated code: hidden from the documentation.

mod policy;
mod statics;

pub use policy::FunctionPolicy;
pub use statics::{FnPolicy, MethodPolicy};
