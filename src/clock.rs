//! Time as the policies see it: the [`Clock`] trait, the real
//! [`SystemClock`] and the [`Sleep`] future of a wait on a clock. The
//! test-driven clock, [`ManualClock`], is at the crate's root.
//!
//! Every deadline a policy keeps (a wait for a bulkhead slot, a retry
//! delay, an open breaker's wait, a timeout, a rate-limiter period) is
//! measured on the registry's clock, never on the wall clock directly: a
//! registry built with a `ManualClock` makes all of them deterministic.
//!
//! # Examples
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use bulkhead::{ManualClock, Registry};
//! use bulkhead::clock::{Clock, SystemClock};
//!
//! let clock = ManualClock::new();
//! let registry = Registry::builder().clock(clock.clone()).build();
//! let start = registry.clock().now();
//! clock.advance(Duration::from_secs(30));
//! assert_eq!(registry.clock().now() - start, Duration::from_secs(30));
//!
//! let real: Arc<dyn Clock> = Arc::new(SystemClock);
//! assert!(real.now() <= real.now());
//! ```
//!
//! [`ManualClock`]: crate::ManualClock

pub use bulkhead_core::{Clock, RecentTime, Sleep, SystemClock};
