//! The attribute macros, tested through the wrappers they generate: the
//! bulkhead rules B1-B10 (`docs/bulkhead.md`), the composition rules
//! (`docs/composition.md`) with `#[retry]`, `#[circuit_breaker]`, `#[timeout]`,
//! `#[rate_limiter]`, `#[hedge]`, `#[fallback]` and `#[chaos]`, the registry's coded errors, the shapes of trait
//! `#[resilient]` accepts, the policy attributes on functions with a
//! body, what the generators emit to declare a set of policies, written by
//! hand (`generated_specs`), and wrapped traits under the registry's
//! configuration: reloads and resource budgets (`registry_config`).
#![allow(unreachable_pub)]

mod alloc;
mod async_calls;
mod call_time;
mod chaos;
mod chaos_composed;
mod composition;
mod conditional;
#[path = "../support/counting.rs"]
mod counting;
mod dyn_traits;
mod fallback;
mod functions;
mod generated_specs;
mod hedging;
mod ids;
mod keyed;
mod policy_functions;
mod policy_registry;
mod registry_config;
mod registry_errors;
mod shapes;
mod shared;
mod support;
mod sync_calls;
