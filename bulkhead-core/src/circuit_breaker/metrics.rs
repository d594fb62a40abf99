//! What a circuit breaker reports about the calls it saw:
//! [`CircuitBreakerMetrics`].

use super::window::Counts;

/// A snapshot of what a circuit breaker counts, from
/// [`CircuitBreaker::metrics`](super::CircuitBreaker::metrics).
///
/// The calls are those of the current state: the sliding window when closed,
/// the trial calls when half-open, and, while open, what opened it (the
/// window, or the trials that failed). Forced-open and disabled breakers
/// count nothing. Rates are percentages, `None` until `minimum_calls` calls
/// were recorded (the trial calls, in half-open).
///
/// # Examples
///
/// ```
/// use bulkhead_core::{CircuitBreaker, CircuitBreakerConfig, BreakerOutcome};
///
/// let config = CircuitBreakerConfig::builder().minimum_calls(2).build()?;
/// let breaker = CircuitBreaker::new("ledger", config);
/// breaker.try_acquire()?.record(BreakerOutcome::Success, None);
/// assert_eq!(breaker.metrics().failure_rate, None); // one call: too few
/// breaker.try_acquire()?.record(BreakerOutcome::Success, None);
/// let metrics = breaker.metrics();
/// assert_eq!(metrics.failure_rate, Some(0.0));
/// assert_eq!(metrics.buffered_calls, 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct CircuitBreakerMetrics {
    /// The percentage of recorded calls that failed, once there are enough.
    pub failure_rate: Option<f32>,
    /// The percentage of recorded calls that were slow, once there are
    /// enough.
    pub slow_call_rate: Option<f32>,
    /// The calls recorded (ignored and cancelled ones are not).
    pub buffered_calls: u32,
    /// Of which failures.
    pub failed_calls: u32,
    /// Of which slow calls, successful or not.
    pub slow_calls: u32,
    /// The calls rejected since the breaker was created, in every state.
    pub not_permitted_calls: u64,
}

impl CircuitBreakerMetrics {
    pub(super) fn new(counts: Counts, minimum: u32, not_permitted_calls: u64) -> Self {
        let enough = counts.calls > 0 && counts.calls >= minimum;
        CircuitBreakerMetrics {
            failure_rate: enough.then(|| counts.failure_rate()),
            slow_call_rate: enough.then(|| counts.slow_call_rate()),
            buffered_calls: counts.calls,
            failed_calls: counts.failed,
            slow_calls: counts.slow,
            not_permitted_calls,
        }
    }
}
