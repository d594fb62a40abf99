//! The rate limiter: at most `limit_for_period` calls per `refresh_period`.
//!
//! On a method or a function it is the
//! [`#[rate_limiter]`](macro@crate::rate_limiter) attribute; in code,
//! [`PipelineBuilder::rate_limiter`] with a [`RateLimiterConfigBuilder`].
//! [`Registry::rate_limiter`] finds an instance by id: a
//! [`RateLimiterHandle`], whose [`snapshot`](RateLimiterHandle::snapshot)
//! is a [`RateLimiterSnapshot`]. [`AcquirePermit`] is the future of
//! [`RateLimiter::acquire_async`]. Its events are
//! [`RateLimiterEvent`](crate::events::RateLimiterEvent)s.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use bulkhead::{Pipeline, Registry, RejectionKind};
//!
//! let registry = Registry::new();
//! let geocoder = Pipeline::builder(&registry, "geocoder")
//!     .rate_limiter(|r| {
//!         r.limit_for_period(1).refresh_period(Duration::from_secs(3600)).max_wait(Duration::ZERO)
//!     })
//!     .build()?;
//!
//! assert!(geocoder.execute(|| Ok::<_, std::io::Error>(())).is_ok());
//! let refused = geocoder.execute(|| Ok::<_, std::io::Error>(())).unwrap_err();
//! assert_eq!(refused.rejection().map(|r| r.kind()), Some(RejectionKind::RateLimited));
//! assert_eq!(registry.rate_limiter("geocoder")?.snapshot().limit_for_period, 1);
//! # Ok::<(), bulkhead::RegistryError>(())
//! ```
//!
//! [`PipelineBuilder::rate_limiter`]: crate::pipeline::PipelineBuilder::rate_limiter
//! [`Registry::rate_limiter`]: crate::Registry::rate_limiter

pub use bulkhead_core::{AcquirePermit, RateLimiter, RateLimiterConfig, RateLimiterConfigBuilder};
pub use bulkhead_registry::{RateLimiterHandle, RateLimiterSnapshot};
