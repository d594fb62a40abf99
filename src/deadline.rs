//! A call's deadline: set it around a piece of code with [`scope`] (a
//! future) or [`with`] (a closure), and every call made inside through a
//! pipeline or a generated wrapper cuts its waits to the time left, refuses
//! to start without time left (`RejectionKind::DeadlineExceeded`) and
//! starts no attempt with less than the retry's `min_attempt_time` left.
//!
//! Nesting keeps the earlier deadline. The deadline is an `Instant` on the
//! registry's clock; a task spawned inside a scope does not inherit it
//! (wrap the spawned future in a scope of its own).
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use bulkhead::{deadline, Registry};
//!
//! let registry = Registry::new();
//! let by = registry.clock().now() + Duration::from_millis(250);
//! deadline::with(by, || {
//!     assert_eq!(deadline::current(), Some(by));
//!     assert!(deadline::remaining_on(registry.clock().as_ref()).is_some());
//! });
//! assert_eq!(deadline::current(), None);
//! ```

pub use bulkhead_core::deadline::{Deadlined, current, remaining, remaining_on, scope, with};
