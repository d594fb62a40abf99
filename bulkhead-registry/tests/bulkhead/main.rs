//! The bulkhead through the registry: the bulkhead rules B1-B12
//! (`bulkhead_rules`), hand-offs to queued callers (`waiters`), adaptive
//! limits (`adaptive`) and their fair shares of a budget's room
//! (`fair_room`), calls that allocate nothing (`alloc`), threads and
//! tasks under stress (`stress`) and snapshots taken while bulkheads churn
//! (`snapshot_churn`).
//!
//! The binary installs a counting global allocator (`support/counting.rs`)
//! for `alloc`; it counts per thread, so the other tests do not disturb its
//! measurements.

mod adaptive;
mod alloc;
mod bulkhead_rules;
#[path = "../support/counting.rs"]
mod counting;
mod fair_room;
mod snapshot_churn;
mod stress;
#[path = "../support/mod.rs"]
mod support;
mod waiters;
