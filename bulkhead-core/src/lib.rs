//! The policies of [`bulkhead`](https://docs.rs/bulkhead): the bulkhead
//! semaphore, clocks, rejections and events, and the table of every
//! policy's configuration keys ([`keys`]). No registry and no macros live
//! here; most users depend on the `bulkhead` facade instead.
//!
//! ```
//! use std::time::Duration;
//! use bulkhead_core::{Bulkhead, BulkheadConfig};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = BulkheadConfig::builder()
//!     .max_concurrent(2)
//!     .max_wait(Duration::from_millis(250))
//!     .build()?;
//! let reports = Bulkhead::new("reports", config);
//!
//! let sync_slot = reports.enter()?;               // sync callers block up to max_wait
//! let async_slot = reports.enter_async().await?;  // async callers never block a thread
//! assert_eq!(reports.concurrent_calls(), 2);
//! assert!(reports.try_enter().is_err());          // full: rejected at once
//! drop((sync_slot, async_slot));
//! # Ok(())
//! # }
//! ```

// Three modules hold `unsafe`, each block with its SAFETY comment: the
// `Sync` of a cell (`compose/one_task.rs`), the keyed bulkhead's nodes
// (`keyed/`) and the time-stamp counter (`clock/tsc.rs`); it is denied
// everywhere else.
#![deny(unsafe_code)]

mod bulkhead;
mod chaos;
mod circuit_breaker;
mod clock;
mod compose;
mod config;
mod context;
pub mod deadline;
mod events;
mod fallback;
mod hedge;
mod intern;
pub mod keys;
// A keyed bulkhead's permits point at their key's node, which a sweep
// frees once idle: the crate's second `unsafe`, each block with its
// SAFETY comment, modelled by loom (`keyed::loom_tests`) and run under
// Miri (`keyed::tests`).
#[allow(unsafe_code)]
mod keyed;
mod loom;
pub mod priority;
#[cfg(loom)]
#[doc(hidden)]
pub use loom::explore_remaps;
mod rate_limiter;
mod rejection;
mod retry;
mod telemetry;
mod timeout;

pub use bulkhead::adaptive::{Adaptive, AdaptiveSnapshot, CallOutcome};
pub use bulkhead::{
    Bulkhead, BulkheadConfig, BulkheadConfigBuilder, BulkheadPermit, ClassOccupancy, Enter,
    EnterError, Occupancy, OwnedBulkheadPermit, Pools, SharedPool, Traffic,
};

/// Adaptive limits: the algorithms a bulkhead's `adaptive` key chooses,
/// their tunables, and the [`Room`](adaptive::Room) of a resource's budget
/// they grow into.
///
/// ```
/// use bulkhead_core::adaptive::{Gradient2, Sampling};
/// use bulkhead_core::{Adaptive, BulkheadConfig};
///
/// let config = BulkheadConfig::builder()
///     .max_concurrent(200)
///     .adaptive(Adaptive::Gradient2)
///     .min_concurrent(4)
///     .gradient2(Gradient2::builder().rtt_tolerance(1.5).build()?)
///     .sampling(Sampling::builder().min_samples(40).build()?)
///     .build()?;
/// assert_eq!(config.adaptive(), Adaptive::Gradient2);
/// # Ok::<(), bulkhead_core::ConfigError>(())
/// ```
pub mod adaptive {
    pub use crate::bulkhead::adaptive::{
        Adaptive, AdaptiveSnapshot, Aimd, AimdBuilder, CallOutcome, Gradient2, Gradient2Builder,
        Room, Sampling, SamplingBuilder, Vegas, VegasBuilder,
    };
}
pub use bulkhead_keys::QueueDiscipline;
pub use bulkhead_keys::{
    ConfigError, Priority, ShedAt, check_limit, check_range, parse_bool, parse_duration,
};
pub use chaos::{Chaos, ChaosConfig, ChaosConfigBuilder, ChaosFault, ChaosLatency, Injection};
pub use circuit_breaker::{
    BreakerOutcome, BreakerPermit, CircuitBreaker, CircuitBreakerConfig,
    CircuitBreakerConfigBuilder, CircuitBreakerMetrics, OwnedBreakerPermit, SlidingWindow,
};
pub use clock::{Clock, ManualClock, RecentTime, Sleep, SystemClock, sleep_blocking};
pub use compose::{Classifier, ErrorPredicate, Lend, Lent, Policies};
pub use context::PolicyContext;
pub use events::{
    BulkheadEvent, BulkheadEventKind, ChaosEvent, ChaosEventKind, CircuitBreakerEvent,
    CircuitBreakerEventKind, CircuitState, Event, EventBus, EventStream, EventVisitor,
    FallbackEvent, FallbackEventKind, FleetShareChanged, FleetShareReason, GiveUpReason,
    HedgeEvent, HedgeEventKind, KeyRefusal, RateLimiterEvent, RateLimiterEventKind, RetryEvent,
    RetryEventKind, TimeoutEvent, TimeoutEventKind,
};
pub use fallback::{Fallback, FallbackConfig, FallbackConfigBuilder};
pub use hedge::{Hedge, HedgeConfig, HedgeConfigBuilder, HedgeDelay, Hedged};
pub use keyed::{KeyLimits, KeyOccupancy, KeyedBulkhead, KeyedEnter, KeyedSnapshot};
pub use rate_limiter::{AcquirePermit, RateLimiter, RateLimiterConfig, RateLimiterConfigBuilder};
pub use rejection::{
    BulkheadFull, CallError, CallTimeout, CircuitOpen, DeadlineExceeded, InjectedFault,
    RateLimited, Rejection, RejectionKind, RejectionKinds,
};
pub use retry::{
    AttemptFailure, BudgetState, Pushback, Retry, RetryConfig, RetryConfigBuilder, RetryState,
};
pub use telemetry::{
    AttemptHook, AttemptRecord, HistogramKind, HistogramSnapshot, InstanceHistogram,
    InstanceTelemetry, Outcome, TelemetryHub, WaitOutcome,
};
pub use timeout::{Timeout, TimeoutConfig, TimeoutConfigBuilder, TimeoutFuture};
