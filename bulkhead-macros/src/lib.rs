//! Attribute macros of the `bulkhead` crate. Use them through the facade:
//! `use bulkhead::{resilient, bulkhead};`.
