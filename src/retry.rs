//! The retry policy: a failed call is tried again, up to `max_attempts`
//! attempts in all, after a delay that can grow and be randomized.
//!
//! On a method or a function it is the [`#[retry]`](macro@crate::retry)
//! attribute; in code, [`PipelineBuilder::retry`] with a
//! [`RetryConfigBuilder`]. [`Registry::retry`] finds an instance by id: a
//! [`RetryHandle`], whose [`snapshot`](RetryHandle::snapshot) is a
//! [`RetrySnapshot`], with the retry budget's counts as a [`BudgetState`].
//! Its events are [`RetryEvent`](crate::events::RetryEvent)s.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use bulkhead::{Pipeline, Registry};
//! use bulkhead::retry::{RetryHandle, RetrySnapshot};
//!
//! let registry = Registry::new();
//! let lookups = Pipeline::builder(&registry, "lookups")
//!     .retry(|r| r.max_attempts(2).wait(Duration::from_millis(1)))
//!     .build()?;
//!
//! let mut calls = 0;
//! let found = lookups.execute(|| {
//!     calls += 1;
//!     if calls == 1 { Err("flaky") } else { Ok("found") }
//! });
//! assert_eq!(found.unwrap(), "found"); // the second attempt
//!
//! let handle: RetryHandle = registry.retry("lookups")?;
//! let snapshot: RetrySnapshot = handle.snapshot();
//! assert_eq!(snapshot.max_attempts, 2);
//! # Ok::<(), bulkhead::RegistryError>(())
//! ```
//!
//! [`PipelineBuilder::retry`]: crate::pipeline::PipelineBuilder::retry
//! [`Registry::retry`]: crate::Registry::retry

pub use bulkhead_core::{BudgetState, Pushback, Retry, RetryConfig, RetryConfigBuilder};
pub use bulkhead_registry::{RetryHandle, RetrySnapshot};
