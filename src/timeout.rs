//! The timeout policy: a call that takes longer than `duration` ends with
//! `Rejection::Timeout`.
//!
//! On a method or a function it is the [`#[timeout]`](macro@crate::timeout)
//! attribute; in code, [`PipelineBuilder::timeout`] with a
//! [`TimeoutConfigBuilder`]. [`Registry::timeout`] finds an instance by id:
//! a [`TimeoutHandle`], whose [`snapshot`](TimeoutHandle::snapshot) is a
//! [`TimeoutSnapshot`]. An async call runs inside a [`TimeoutFuture`],
//! dropped at its deadline. Its events are
//! [`TimeoutEvent`](crate::events::TimeoutEvent)s.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use bulkhead::{Pipeline, Registry};
//! use bulkhead::timeout::TimeoutSnapshot;
//!
//! let registry = Registry::new();
//! let render = Pipeline::builder(&registry, "render")
//!     .timeout(|t| t.duration(Duration::from_millis(250)))
//!     .build()?;
//! assert_eq!(render.execute(|| Ok::<_, std::io::Error>("page")).unwrap(), "page");
//!
//! let snapshot: TimeoutSnapshot = registry.timeout("render")?.snapshot();
//! assert_eq!(snapshot.duration, Duration::from_millis(250));
//! # Ok::<(), bulkhead::RegistryError>(())
//! ```
//!
//! [`PipelineBuilder::timeout`]: crate::pipeline::PipelineBuilder::timeout
//! [`Registry::timeout`]: crate::Registry::timeout

pub use bulkhead_core::{Timeout, TimeoutConfig, TimeoutConfigBuilder, TimeoutFuture};
pub use bulkhead_registry::{TimeoutHandle, TimeoutSnapshot};
