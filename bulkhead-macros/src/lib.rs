//! Attribute macros of the `bulkhead` crate. Use them through the facade:
//! `use bulkhead::{resilient, bulkhead};`, whose documentation describes
//! them with examples.
//!
//! The crate is a pipeline (see `codes` for the errors it reports):
//! [`attr`](crate::attr) reads the attributes with darling,
//! [`ast`](crate::ast) builds the typed model, [`valid`](crate::valid) checks
//! it, [`expand`](crate::expand) and [`expand_fn`](crate::expand_fn) generate
//! code, and [`fallback`](crate::fallback) keeps the user's item compiling
//! when there are errors. Only this file touches `proc_macro`.

#![forbid(unsafe_code)]

mod ast;
mod attr;
mod codes;
mod expand;
mod expand_fn;
mod fallback;
mod ids;
mod valid;

use proc_macro::TokenStream;

/// Generates `Resilient<Trait><D>`, which implements the trait around a
/// delegate `D: Trait` and runs each method annotated with `#[bulkhead(...)]`
/// under its bulkhead. See the `bulkhead` crate's documentation.
#[proc_macro_attribute]
pub fn resilient(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::resilient(args.into(), input.into()).into()
}

/// Runs a method of a `#[resilient]` trait, or the body of a function, under
/// a bulkhead. See the `bulkhead` crate's documentation.
#[proc_macro_attribute]
pub fn bulkhead(args: TokenStream, input: TokenStream) -> TokenStream {
    expand_fn::bulkhead(args.into(), input.into()).into()
}
