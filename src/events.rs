//! What policies report: an [`Event`] per rejection, limit change, retry,
//! breaker transition, timeout, rate-limiter refusal, hedge, fallback or chaos
//! answer (admitted calls publish nothing), one type of event and of event
//! kind per policy; and [`FleetShareChanged`] when a fleet resource's share
//! moves (feature `redis`).
//!
//! `registry.subscribe()` returns an [`EventStream`] of every instance's
//! events; a handle's `subscribe()` returns [`InstanceEvents`] of one
//! instance, typed by its policy ([`PolicyEvent`]). Each subscriber reads
//! its own bounded buffer: one that falls behind loses the oldest events
//! (and counts them), and none ever slows a caller. Policies built outside
//! a registry publish on an [`EventBus`].
//!
//! # Examples
//!
//! ```
//! use bulkhead::{Pipeline, Registry};
//! use bulkhead::events::{BulkheadEvent, BulkheadEventKind, Event};
//!
//! let registry = Registry::new();
//! let reports = Pipeline::builder(&registry, "reports")
//!     .bulkhead(|b| b.max_concurrent(1))
//!     .build()?;
//! let mut events = registry.subscribe();
//!
//! let handle = registry.bulkhead("reports")?;
//! let _held = handle.bulkhead().try_enter()?;
//! assert!(reports.execute(|| Ok::<_, std::io::Error>(())).is_err());
//!
//! match events.try_recv() {
//!     Some(Event::Bulkhead(BulkheadEvent { instance, kind: BulkheadEventKind::Rejected { .. }, .. })) => {
//!         assert_eq!(instance, "reports")
//!     }
//!     other => panic!("{other:?}"),
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub use bulkhead_core::{
    BulkheadEvent, BulkheadEventKind, ChaosEvent, ChaosEventKind, CircuitBreakerEvent,
    CircuitBreakerEventKind, Event, EventBus, EventStream, EventVisitor, FallbackEvent,
    FallbackEventKind, FleetShareChanged, FleetShareReason, GiveUpReason, HedgeEvent,
    HedgeEventKind, KeyRefusal, RateLimiterEvent, RateLimiterEventKind, RetryEvent, RetryEventKind,
    TimeoutEvent, TimeoutEventKind,
};
pub use bulkhead_registry::{InstanceEvents, PolicyEvent};
