//! The registry of [`bulkhead`](https://docs.rs/bulkhead): named policy
//! instances and their configuration ([`Registry`]), handles and snapshots to
//! watch them ([`BulkheadHandle`], [`RegistrySnapshot`]), [`PolicySpecs`] to
//! declare a set of policies together, and [`Pipeline`] to build policies in
//! code. Most users depend on the `bulkhead` facade.
//!
//! ```
//! use bulkhead_registry::{Pipeline, Registry};
//!
//! let registry = Registry::new();
//! let render = Pipeline::builder(&registry, "renderer")
//!     .bulkhead(|b| b.max_concurrent(10))
//!     .build()?;
//! let report = render.execute(|| Ok::<_, std::io::Error>("report"));
//! assert!(report.is_ok());
//!
//! let snapshot = registry.snapshot();
//! assert_eq!(snapshot.bulkheads()[0].instance, "renderer");
//! # Ok::<(), bulkhead_registry::RegistryError>(())
//! ```

#![forbid(unsafe_code)]
#![cfg_attr(bulkhead_docsrs, feature(doc_cfg))]

mod budget;
mod error;
mod events;
pub mod fleet;
mod function;
mod handle;
mod keyed;
#[cfg(any(
    feature = "metrics",
    feature = "tracing",
    feature = "opentelemetry",
    feature = "dashboard"
))]
#[cfg_attr(
    bulkhead_docsrs,
    doc(cfg(any(
        feature = "metrics",
        feature = "tracing",
        feature = "opentelemetry",
        feature = "dashboard"
    )))
)]
pub mod observe;
mod pipeline;
mod policy;
mod registry;
mod sizing;
mod snapshot;
mod source;
mod specs;
mod store;
#[cfg(feature = "tower")]
#[cfg_attr(bulkhead_docsrs, doc(cfg(feature = "tower")))]
pub mod tower;

pub use error::{ConfigSourceError, Conflict, RegistryError};
pub use events::{InstanceEvents, PolicyEvent};
#[doc(hidden)]
pub use function::{FnPolicy, FunctionPolicy, MethodPolicy};
pub use handle::Handle;
pub use keyed::{BulkheadKey, KeyedBulkheadBuilder, KeyedBulkheadSnapshot, TopKey};
pub use pipeline::{KeyedPipeline, KeyedPipelineBuilder, Pipeline, PipelineBuilder};
pub use policy::{
    BulkheadHandle, BulkheadSnapshot, ChaosHandle, ChaosSnapshot, CircuitBreakerHandle,
    CircuitBreakerSnapshot, FallbackHandle, FallbackSnapshot, HedgeHandle, HedgeSnapshot, Policy,
    RateLimiterHandle, RateLimiterSnapshot, RetryHandle, RetrySnapshot, TimeoutHandle,
    TimeoutSnapshot,
};
pub use registry::Registry;
pub use registry::builder::RegistryBuilder;
pub use registry::declare::Declarations;
pub use sizing::{BulkheadSizing, DEFAULT_HEADROOM, Diagnosis, SizingReport};
pub use snapshot::RegistrySnapshot;
pub use specs::PolicySpecs;
pub use store::{Change, DEFAULT_CONFIG, KeyChange};
