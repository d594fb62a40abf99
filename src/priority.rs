//! Who is calling: the class of a call ([`Priority`]), by which a bulkhead
//! that fills up refuses the lower classes first (its key `shed_at`, a
//! [`ShedAt`]) and serves its waiters.
//!
//! A call's class comes from, first to last: the innermost [`scope`]
//! (async) or [`with`] (sync) around it; the bulkhead's key `priority`
//! (`#[bulkhead(priority = "critical")]`, or configuration); a tower
//! layer's; else [`Priority::Normal`]. [`current`] reads the class a scope
//! set. A task spawned inside a scope does not inherit it: wrap the
//! spawned future in its own [`scope`].
//!
//! # Examples
//!
//! ```
//! use bulkhead::priority::{self, Priority};
//! use bulkhead::{Pipeline, Registry};
//!
//! let registry = Registry::new();
//! let search = Pipeline::builder(&registry, "search")
//!     .bulkhead(|b| b.max_concurrent(10))
//!     .build()?;
//! // Refused once half the slots are taken (the default `shed_at`).
//! let hits = priority::with(Priority::Sheddable, || {
//!     search.execute(|| Ok::<_, std::io::Error>(3))
//! });
//! assert_eq!(hits.unwrap(), 3);
//! # Ok::<(), bulkhead::RegistryError>(())
//! ```

pub use bulkhead_core::priority::{Prioritized, current, scope, scope_weak, with};
pub use bulkhead_core::{Priority, ShedAt};
