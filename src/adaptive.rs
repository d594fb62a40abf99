//! Adaptive limits: a bulkhead whose algorithm moves its limit between
//! `min_concurrent` and `max_concurrent` from the hold times of its calls
//! ([`Adaptive`]: `off`, `aimd`, `vegas` or `gradient2`); each algorithm's
//! tunables ([`Aimd`], [`Vegas`], [`Gradient2`]) and what they share
//! ([`Sampling`]); what a snapshot shows of it ([`AdaptiveSnapshot`]); how
//! a call tells it how it ended ([`CallOutcome`]); and the [`Room`] of a
//! resource's budget it grows into. The [adaptive guide] explains the
//! algorithms and their measurements.
//!
//! # Examples
//!
//! ```
//! use bulkhead::adaptive::Gradient2;
//! use bulkhead::{Adaptive, Pipeline, Registry};
//!
//! let registry = Registry::new();
//! let search = Pipeline::builder(&registry, "search")
//!     .bulkhead(|b| {
//!         b.max_concurrent(200)
//!             .adaptive(Adaptive::Gradient2)
//!             .gradient2(Gradient2::builder().rtt_tolerance(1.2).build().unwrap())
//!     })
//!     .build()?;
//! let snapshot = registry.bulkhead("search")?.snapshot();
//! assert_eq!(snapshot.max_concurrent, 20); // the limit in force: initial_concurrent
//! assert_eq!(snapshot.adaptive.unwrap().ceiling, 200);
//! # drop(search);
//! # Ok::<(), bulkhead::RegistryError>(())
//! ```
//!
//! [adaptive guide]: crate::guide::adaptive

pub use bulkhead_core::adaptive::{
    Adaptive, AdaptiveSnapshot, Aimd, AimdBuilder, CallOutcome, Gradient2, Gradient2Builder, Room,
    Sampling, SamplingBuilder, Vegas, VegasBuilder,
};
