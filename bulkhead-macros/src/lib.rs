//! Attribute macros of the `bulkhead` crate. Use them through the facade:
//! `use bulkhead::{resilient, bulkhead};`, whose documentation describes
//! them with examples.
//!
//! The crate is a pipeline (`codes.rs` lists the errors it reports):
//! `attr.rs` reads the attributes with darling, `ast.rs` builds the typed
//! model, `valid.rs` checks it, `expand.rs` and `expand_fn.rs` generate
//! code, and `fallback.rs` keeps the user's item compiling when there are
//! errors. Only this file touches `proc_macro`.

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
    expand_fn::bulkhead(args.into(), input.into()).into()
}
