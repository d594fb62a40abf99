//! The fallback policy: when a call ends with a rejection it covers (or,
//! with `on_error`, any error), another method of the trait answers
//! instead.
//!
//! On a method of a `#[resilient]` trait it is the
//! [`#[fallback]`](macro@crate::fallback) attribute, which names the
//! method. A [`Pipeline`](crate::Pipeline) has none: its fallback is the
//! caller's `Result::or_else` (see the attribute's page).
//! [`Registry::fallback`] finds an instance by id: a [`FallbackHandle`],
//! whose [`snapshot`](FallbackHandle::snapshot) is a [`FallbackSnapshot`].
//! Its events are [`FallbackEvent`](crate::events::FallbackEvent)s.
//!
//! # Examples
//!
//! ```
//! use bulkhead::{Registry, Rejection, RejectionKind, resilient};
//! use bulkhead::fallback::FallbackSnapshot;
//!
//! #[derive(Debug)]
//! pub struct Busy;
//! impl From<Rejection> for Busy {
//!     fn from(_: Rejection) -> Self { Busy }
//! }
//!
//! #[resilient]
//! pub trait Prices {
//!     #[fallback(method = "last_known", on = [BulkheadFull])]
//!     #[bulkhead(max_concurrent = 1)]
//!     fn price(&self, item: &str) -> Result<u32, Busy>;
//!     fn last_known(&self, item: &str) -> Result<u32, Busy>;
//! }
//!
//! struct Shop;
//! impl Prices for Shop {
//!     fn price(&self, _: &str) -> Result<u32, Busy> { Ok(120) }
//!     fn last_known(&self, _: &str) -> Result<u32, Busy> { Ok(100) }
//! }
//!
//! let registry = Registry::new();
//! let prices = ResilientPrices::new(Shop, &registry)?;
//! let id = format!("{}::Prices#price(&str)", module_path!());
//!
//! assert_eq!(prices.price("tea").unwrap(), 120);
//! let _busy = registry.bulkhead(&id)?.bulkhead().try_enter_owned()?;
//! assert_eq!(prices.price("tea").unwrap(), 100); // full: the last known price
//!
//! let snapshot: FallbackSnapshot = registry.fallback(&id)?.snapshot();
//! assert!(snapshot.on.contains(RejectionKind::BulkheadFull) && !snapshot.on_error);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`Registry::fallback`]: crate::Registry::fallback

pub use bulkhead_core::{Fallback, FallbackConfig, FallbackConfigBuilder};
pub use bulkhead_registry::{FallbackHandle, FallbackSnapshot};
