//! The circuit breaker: stops calling a dependency that keeps failing (or
//! keeps being slow), and tries it again after a while.
//!
//! On a method or a function it is the
//! [`#[circuit_breaker]`](macro@crate::circuit_breaker) attribute; in code,
//! [`PipelineBuilder::circuit_breaker`] with a
//! [`CircuitBreakerConfigBuilder`]. [`Registry::circuit_breaker`] finds an
//! instance by id: a [`CircuitBreakerHandle`], which shows its
//! [`CircuitState`] and [`CircuitBreakerMetrics`] and can force it open or
//! reset it. A call made by hand asks for a [`BreakerPermit`] and records
//! its [`BreakerOutcome`] on it. Its events are
//! [`CircuitBreakerEvent`](crate::events::CircuitBreakerEvent)s.
//!
//! # Examples
//!
//! ```
//! use bulkhead::{CallError, Pipeline, Registry, Rejection};
//! use bulkhead::circuit_breaker::CircuitState;
//!
//! let registry = Registry::new();
//! let payments = Pipeline::builder(&registry, "payments")
//!     .circuit_breaker(|c| c.minimum_calls(2).sliding_window_size(2))
//!     .build()?;
//!
//! for _ in 0..2 {
//!     assert!(payments.execute(|| Err::<(), _>("down")).is_err());
//! }
//! // Two failures out of two: open, and the next call is not made.
//! let refused = payments.execute(|| Ok::<_, &str>(()));
//! assert!(matches!(refused, Err(CallError::Rejected(Rejection::CircuitOpen(_)))));
//! assert_eq!(registry.circuit_breaker("payments")?.state(), CircuitState::Open);
//! # Ok::<(), bulkhead::RegistryError>(())
//! ```
//!
//! [`PipelineBuilder::circuit_breaker`]: crate::pipeline::PipelineBuilder::circuit_breaker
//! [`Registry::circuit_breaker`]: crate::Registry::circuit_breaker

pub use bulkhead_core::{
    BreakerOutcome, BreakerPermit, CircuitBreaker, CircuitBreakerConfig,
    CircuitBreakerConfigBuilder, CircuitBreakerMetrics, CircuitState, OwnedBreakerPermit,
    SlidingWindow,
};
pub use bulkhead_registry::{CircuitBreakerHandle, CircuitBreakerSnapshot};
