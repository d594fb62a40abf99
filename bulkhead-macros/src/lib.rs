//! Attribute macros of the `bulkhead` crate. Use them through the facade:
//! `use bulkhead::{resilient, bulkhead, retry};`, whose documentation
//! describes them with examples.
//!
//! The crate is a one-way pipeline; each module uses only those above it
//! in this list. Only this file touches `proc_macro`.
//!
//! - `symbol.rs` (every attribute word), `codes.rs` (the error codes and
//!   their collector), `tokens.rs` (token helpers), `ids.rs` (instance
//!   ids), `outlives.rs` (what a signature says outlives what): the ground
//!   everything stands on.
//! - `values/` (the values of keys, by kind), `attr.rs` (an attribute's
//!   keys, read with its policy's table), `policies.rs` (the set of
//!   policies) and `annotations.rs` (the attributes of one item): reading
//!   the attributes. The policies and their tables of keys are
//!   `bulkhead-keys`' (not the policies' crate, which this one does not
//!   wait for), shared with the registry's configuration sources.
//! - `order.rs`: `#[resilient]` beside `#[async_trait]` and
//!   `#[trait_variant::make]`, which it reads the trait after.
//! - `ast/`: the typed model of a trait or function.
//! - `valid/`: every meaning-level check, recorded on the model.
//! - `declare.rs` (declaring policies to the registry), `call.rs` (the
//!   pieces of every wrapped call), `composed.rs` (calls under `Policies`),
//!   `soft.rs` (the user's item kept compiling when there are errors: the
//!   macros fail softly).
//! - `expand/` (`#[resilient]`) and `expand_fn.rs` (a policy attribute
//!   on a function): the expansions.

#![forbid(unsafe_code)]

mod annotations;
mod ast;
mod attr;
mod call;
mod codes;
mod composed;
mod declare;
mod expand;
mod expand_fn;
mod ids;
mod keyed;
mod krate;
mod order;
mod outlives;
mod policies;
mod soft;
mod symbol;
mod tokens;
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
    expand_fn::policy(policies::PolicyKind::Bulkhead, args.into(), input.into()).into()
}

/// (Defined in the `bulkhead-macros` crate, documented where `bulkhead`
/// re-exports it.)
#[proc_macro_attribute]
pub fn retry(args: TokenStream, input: TokenStream) -> TokenStream {
    expand_fn::policy(policies::PolicyKind::Retry, args.into(), input.into()).into()
}

/// (Defined in the `bulkhead-macros` crate, documented where `bulkhead`
/// re-exports it.)
#[proc_macro_attribute]
pub fn circuit_breaker(args: TokenStream, input: TokenStream) -> TokenStream {
    expand_fn::policy(
        policies::PolicyKind::CircuitBreaker,
        args.into(),
        input.into(),
    )
    .into()
}

/// (Defined in the `bulkhead-macros` crate, documented where `bulkhead`
/// re-exports it.)
#[proc_macro_attribute]
pub fn timeout(args: TokenStream, input: TokenStream) -> TokenStream {
    expand_fn::policy(policies::PolicyKind::Timeout, args.into(), input.into()).into()
}

/// (Defined in the `bulkhead-macros` crate, documented where `bulkhead`
/// re-exports it.)
#[proc_macro_attribute]
pub fn rate_limiter(args: TokenStream, input: TokenStream) -> TokenStream {
    expand_fn::policy(policies::PolicyKind::RateLimiter, args.into(), input.into()).into()
}

/// (Defined in the `bulkhead-macros` crate, documented where `bulkhead`
/// re-exports it.)
#[proc_macro_attribute]
pub fn hedge(args: TokenStream, input: TokenStream) -> TokenStream {
    expand_fn::policy(policies::PolicyKind::Hedge, args.into(), input.into()).into()
}

/// (Defined in the `bulkhead-macros` crate, documented where `bulkhead`
/// re-exports it.)
#[proc_macro_attribute]
pub fn fallback(args: TokenStream, input: TokenStream) -> TokenStream {
    expand_fn::policy(policies::PolicyKind::Fallback, args.into(), input.into()).into()
}

/// (Defined in the `bulkhead-macros` crate, documented where `bulkhead`
/// re-exports it.)
#[proc_macro_attribute]
pub fn chaos(args: TokenStream, input: TokenStream) -> TokenStream {
    expand_fn::policy(policies::PolicyKind::Chaos, args.into(), input.into()).into()
}
