//! Attribute macros of the `bulkhead` crate. Use them through the facade:
//! `use bulkhead::{resilient, bulkhead, retry};`, whose documentation
//! describes them with examples.
//!
//! The crate is a pipeline (`codes.rs` lists the errors it reports):
//! `attr.rs`, `values.rs` and `policies.rs` read the five policy attributes
//! with darling, `ast.rs` builds the typed model, `valid.rs` checks it,
//! `expand.rs` (the wrapper, and a method under a bulkhead alone),
//! `composed.rs` (a method under `Policies`), `expand_fn.rs` (functions
//! with a body) and `specs.rs` (the config builders) generate code, and
//! `fallback.rs` keeps the user's item compiling when there are errors.
//! Only this file touches `proc_macro`.

#![forbid(unsafe_code)]

mod ast;
mod attr;
mod codes;
mod composed;
mod expand;
mod expand_fn;
mod fallback;
mod ids;
mod policies;
mod specs;
mod valid;
mod values;

use proc_macro::TokenStream;

/// (Defined in the `bulkhead-macros` crate, documented where `bulkhead`
/// re-exports it.)
#[proc_macro_attribute]
pub fn resilient(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::resilient(args.into(), input.into()).into()
}

/// (Defined in the `bulkhead-macros` crate, documented where `bulkhead`
/// re-exports it.)
#[proc_macro_attribute]
pub fn bulkhead(args: TokenStream, input: TokenStream) -> TokenStream {
    expand_fn::policy(policies::Kind::Bulkhead, args.into(), input.into()).into()
}

/// (Defined in the `bulkhead-macros` crate, documented where `bulkhead`
/// re-exports it.)
#[proc_macro_attribute]
pub fn retry(args: TokenStream, input: TokenStream) -> TokenStream {
    expand_fn::policy(policies::Kind::Retry, args.into(), input.into()).into()
}

/// (Defined in the `bulkhead-macros` crate, documented where `bulkhead`
/// re-exports it.)
#[proc_macro_attribute]
pub fn circuit_breaker(args: TokenStream, input: TokenStream) -> TokenStream {
    expand_fn::policy(policies::Kind::CircuitBreaker, args.into(), input.into()).into()
}

/// (Defined in the `bulkhead-macros` crate, documented where `bulkhead`
/// re-exports it.)
#[proc_macro_attribute]
pub fn timeout(args: TokenStream, input: TokenStream) -> TokenStream {
    expand_fn::policy(policies::Kind::Timeout, args.into(), input.into()).into()
}

/// (Defined in the `bulkhead-macros` crate, documented where `bulkhead`
/// re-exports it.)
#[proc_macro_attribute]
pub fn rate_limiter(args: TokenStream, input: TokenStream) -> TokenStream {
    expand_fn::policy(policies::Kind::RateLimiter, args.into(), input.into()).into()
}
