//! Sizing bulkheads from live traffic with Little's law (concurrency =
//! arrival rate × how long each call holds its slot): [`SizingReport`],
//! what `registry.sizing()` returns, one [`BulkheadSizing`] per bulkhead
//! with its [`Diagnosis`]; [`Traffic`], a bulkhead's counters; and
//! [`DEFAULT_HEADROOM`], the margin recommendations add; [`SharedPool`],
//! a resource's budget shared by bulkheads that reserve part of it and
//! borrow the rest (a registry keeps one per resource, in its [`Pools`]).
//!
//! Tracking is off by default (it costs two clock reads and two atomic
//! additions per admitted call): `Registry::builder().track_sizing(true)`.
//!
//! # Examples
//!
//! ```
//! use bulkhead::{Pipeline, Registry};
//! use bulkhead::sizing::{Diagnosis, SizingReport};
//!
//! let registry = Registry::builder().track_sizing(true).build();
//! let reports = Pipeline::builder(&registry, "reports").bulkhead(|b| b.max_concurrent(2)).build()?;
//! reports.execute(|| Ok::<_, std::io::Error>(())).unwrap();
//!
//! let report: SizingReport = registry.sizing();
//! let sizing = report.bulkhead("reports").unwrap();
//! assert_eq!(sizing.traffic.unwrap().admitted, 1);
//! assert_ne!(sizing.diagnosis, Diagnosis::NotTracked);
//! # Ok::<(), bulkhead::RegistryError>(())
//! ```

pub use bulkhead_core::{Pools, SharedPool, Traffic};
pub use bulkhead_registry::{BulkheadSizing, DEFAULT_HEADROOM, Diagnosis, SizingReport};
