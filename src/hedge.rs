//! The hedge policy: an async call whose attempt has not finished after
//! `delay` gets another, up to `max_hedged` extra, and the first success
//! wins.
//!
//! On a method or a function it is the [`#[hedge]`](macro@crate::hedge)
//! attribute; in code, [`PipelineBuilder::hedge`] with a
//! [`HedgeConfigBuilder`]. [`Registry::hedge`] finds an instance by id: a
//! [`HedgeHandle`], whose [`snapshot`](HedgeHandle::snapshot) is a
//! [`HedgeSnapshot`]. Its events are
//! [`HedgeEvent`](crate::events::HedgeEvent)s; [`Hedged`] is the future of
//! one hedged call, for policies composed by hand.
//!
//! # Examples
//!
//! ```
//! use std::time::Duration;
//! use bulkhead::{Pipeline, Registry};
//! use bulkhead::hedge::{HedgeHandle, HedgeSnapshot};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = Registry::new();
//! let search = Pipeline::builder(&registry, "search")
//!     .hedge(|h| h.max_hedged(1).delay(Duration::from_millis(5)))
//!     .build()?;
//!
//! // The first attempt hangs; the hedge started 5 ms later answers.
//! let mut attempts = 0;
//! let found = search
//!     .execute_async(|| {
//!         attempts += 1;
//!         let first = attempts == 1;
//!         async move {
//!             if first {
//!                 std::future::pending::<()>().await;
//!             }
//!             Ok::<_, std::io::Error>("found")
//!         }
//!     })
//!     .await;
//! assert_eq!(found.unwrap(), "found");
//!
//! let handle: HedgeHandle = registry.hedge("search")?;
//! let snapshot: HedgeSnapshot = handle.snapshot();
//! assert_eq!(snapshot.max_hedged, 1);
//! # Ok(())
//! # }
//! ```
//!
//! [`PipelineBuilder::hedge`]: crate::pipeline::PipelineBuilder::hedge
//! [`Registry::hedge`]: crate::Registry::hedge

pub use bulkhead_core::{Hedge, HedgeConfig, HedgeConfigBuilder, HedgeDelay, Hedged};
pub use bulkhead_registry::{HedgeHandle, HedgeSnapshot};
