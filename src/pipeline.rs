//! Policies composed in code: [`PipelineBuilder`], the builder of a
//! [`Pipeline`](crate::Pipeline), and what lies beneath it for policies
//! built by hand: [`Policies`], the policies of one call in their fixed
//! order, [`Classifier`] and [`ErrorPredicate`], which of a call's errors
//! are retried or recorded, and [`PolicyContext`], the clock and event bus
//! a policy built outside a registry runs on.
//!
//! The order, and what follows from it, is the
//! [composition guide](crate::guide::composition).
//!
//! # Examples
//!
//! ```
//! use bulkhead::{Pipeline, Registry};
//! use bulkhead::pipeline::PipelineBuilder;
//!
//! fn with_limits(builder: PipelineBuilder<'_>) -> PipelineBuilder<'_> {
//!     builder.bulkhead(|b| b.max_concurrent(4)).retry(|r| r.max_attempts(2))
//! }
//!
//! let registry = Registry::new();
//! let inventory = with_limits(Pipeline::builder(&registry, "inventory")).build()?;
//! assert!(inventory.policies().bulkhead().is_some() && inventory.policies().retry().is_some());
//! # Ok::<(), bulkhead::RegistryError>(())
//! ```

pub use bulkhead_core::{Classifier, ErrorPredicate, Policies, PolicyContext};
pub use bulkhead_registry::{KeyedPipelineBuilder, PipelineBuilder};
