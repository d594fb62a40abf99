//! The chaos policy: faults and latency injected into a share of the
//! calls on purpose, while it is enabled, to see what the other policies
//! and their callers make of them.
//!
//! On a method or a function it is the [`#[chaos]`](macro@crate::chaos)
//! attribute; in code, [`PipelineBuilder::chaos`] with a
//! [`ChaosConfigBuilder`]. [`Registry::chaos`] finds an instance by id: a
//! [`ChaosHandle`], whose [`snapshot`](ChaosHandle::snapshot) is a
//! [`ChaosSnapshot`]. Every key reloads live (`Registry::reload`), so a
//! running service is put under chaos from its configuration and taken out
//! again. Its events are [`ChaosEvent`](crate::events::ChaosEvent)s; an
//! injected fault is `Rejection::Injected`.
//!
//! # Examples
//!
//! ```
//! use bulkhead::{CallError, Pipeline, Registry, RejectionKind};
//!
//! let registry = Registry::new();
//! let payments = Pipeline::builder(&registry, "payments")
//!     .chaos(|c| c.fault_rate(1.0).seed(7)) // disabled until configuration says so
//!     .build()?;
//! assert!(payments.execute(|| Ok::<_, std::io::Error>("paid")).is_ok());
//!
//! registry.reload_toml("[chaos.instances.payments]\nenabled = true")?;
//! let refused = payments.execute(|| Ok::<_, std::io::Error>("paid"));
//! assert!(matches!(refused, Err(CallError::Rejected(r)) if r.kind() == RejectionKind::Injected));
//! assert!(registry.chaos("payments")?.snapshot().enabled);
//! # Ok::<(), bulkhead::RegistryError>(())
//! ```
//!
//! [`PipelineBuilder::chaos`]: crate::pipeline::PipelineBuilder::chaos
//! [`Registry::chaos`]: crate::Registry::chaos

pub use bulkhead_core::{
    Chaos, ChaosConfig, ChaosConfigBuilder, ChaosFault, ChaosLatency, Injection,
};
pub use bulkhead_registry::{ChaosHandle, ChaosSnapshot};
