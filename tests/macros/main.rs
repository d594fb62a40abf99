//! The attribute macros, tested through the wrappers they generate: the
//! bulkhead rules of SPEC section 3 (B1-B10), the registry's coded errors,
//! the shapes of trait `#[resilient]` accepts, and `#[bulkhead]` on
//! functions with a body.
#![allow(unreachable_pub)]

mod alloc;
mod async_calls;
mod call_time;
mod conditional;
mod functions;
mod ids;
mod registry_errors;
mod shapes;
mod shared;
mod support;
mod sync_calls;

#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;
