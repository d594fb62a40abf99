//! Point-in-time views of the registry's policies.

use std::time::Duration;

use bulkhead_core::{
    AdaptiveSnapshot, BudgetState, Bulkhead, CircuitBreaker, CircuitState, Fallback, Hedge,
    HedgeDelay, RateLimiter, RejectionKinds, Retry, Timeout, Traffic,
};

use crate::policy::Policy;
use crate::registry::Registry;
use crate::store::Store;

/// A snapshot of one instance.
trait Instance {
    fn instance(&self) -> &str;
}

/// A bulkhead's state at one moment.
///
/// Its slot fields (`concurrent_calls` to `borrowed`, and `adaptive`) are
/// one reading ([`Bulkhead::occupancy`](bulkhead_core::Bulkhead::occupancy)):
/// they agree with each other whatever changes the limits at the time, so
/// `available <= max_concurrent`, `reserved <= max_concurrent` and
/// `concurrent_calls + available <= max_concurrent` unless `available` is
/// 0. `traffic` is read just after.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BulkheadSnapshot {
    /// The instance id.
    pub instance: String,
    /// Calls holding a slot.
    pub concurrent_calls: u32,
    /// Calls waiting for a slot (0 when `max_wait` is zero).
    pub waiting_calls: u32,
    /// The limit in force: the configured `max_concurrent` (for an
    /// adaptive bulkhead, the limit its algorithm set last; its ceiling is
    /// `adaptive.ceiling`), or less while a fleet resource's share holds it
    /// lower (down to 0).
    pub max_concurrent: u32,
    /// Slots free right now: `max_concurrent - concurrent_calls`, or 0 while
    /// more calls are in flight than a lowered limit allows or while callers
    /// queue on the bulkhead. On a resource whose bulkheads borrow, the
    /// slots beyond `reserved` count only as far as the resource's
    /// unreserved slots are free and nobody queues for them
    /// ([`Bulkhead::available`](bulkhead_core::Bulkhead::available)).
    pub available: u32,
    /// The slots of its resource's budget kept for it now (its `reserved`,
    /// at most `max_concurrent`); off a resource, `max_concurrent`.
    pub reserved: u32,
    /// Calls in flight on borrowed slots: beyond `reserved`, on the
    /// resource's unreserved slots (0 off a resource).
    pub borrowed: u32,
    /// How long a caller may wait for a slot.
    pub max_wait: Duration,
    /// Whether the bulkhead limits anything.
    pub enabled: bool,
    /// Arrivals, admissions, rejections and hold times since the bulkhead
    /// was created, when the registry tracks sizing
    /// (`Registry::builder().track_sizing(true)`); see `Registry::sizing`.
    pub traffic: Option<Traffic>,
    /// What an adaptive bulkhead's algorithm knows (its bounds, its
    /// estimates of the no-load and recent latency, its counts); `None`
    /// unless `adaptive` is on.
    pub adaptive: Option<AdaptiveSnapshot>,
}

impl Instance for BulkheadSnapshot {
    fn instance(&self) -> &str {
        &self.instance
    }
}

impl BulkheadSnapshot {
    pub(crate) fn of(bulkhead: &Bulkhead) -> Self {
        let config = bulkhead.config();
        // One reading: its fields agree with each other while limits change.
        let now = bulkhead.occupancy();
        BulkheadSnapshot {
            instance: bulkhead.instance().to_owned(),
            concurrent_calls: now.concurrent_calls,
            waiting_calls: now.waiting_calls,
            max_concurrent: now.max_concurrent,
            available: now.available,
            reserved: now.reserved,
            borrowed: now.borrowed,
            max_wait: config.max_wait(),
            enabled: config.enabled(),
            traffic: bulkhead.traffic(),
            adaptive: now.adaptive,
        }
    }
}

/// A retry policy's configuration at one moment.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RetrySnapshot {
    /// The instance id.
    pub instance: String,
    /// Attempts allowed, the first call included.
    pub max_attempts: u32,
    /// The wait before the first retry.
    pub wait: Duration,
    /// The factor each further wait is multiplied by.
    pub backoff_multiplier: f64,
    /// The cap on any wait, if any.
    pub max_wait_interval: Option<Duration>,
    /// The randomization factor of waits.
    pub jitter: f64,
    /// Rejection kinds that are not retried.
    pub abort_on: RejectionKinds,
    /// The retry budget's ratio, if the instance has a budget.
    pub budget_ratio: Option<f64>,
    /// The retries per second of the window a budget allows whatever the
    /// first attempts.
    pub budget_min_per_second: u32,
    /// The window a budget counts over.
    pub budget_window: Duration,
    /// The budget's counts over its current window (first attempts,
    /// retries and hedges made, and how many more it allows now), if the
    /// instance has a budget.
    pub budget: Option<BudgetState>,
}

impl Instance for RetrySnapshot {
    fn instance(&self) -> &str {
        &self.instance
    }
}

impl RetrySnapshot {
    pub(crate) fn of(retry: &Retry) -> Self {
        let config = retry.config();
        RetrySnapshot {
            instance: retry.instance().to_owned(),
            max_attempts: config.max_attempts(),
            wait: config.wait(),
            backoff_multiplier: config.backoff_multiplier(),
            max_wait_interval: config.max_wait_interval(),
            jitter: config.jitter(),
            abort_on: config.abort_on(),
            budget_ratio: config.budget_ratio(),
            budget_min_per_second: config.budget_min_per_second(),
            budget_window: config.budget_window(),
            budget: retry.budget(),
        }
    }
}

/// A hedge policy's configuration at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HedgeSnapshot {
    /// The instance id.
    pub instance: String,
    /// How many extra attempts a call may start.
    pub max_hedged: u32,
    /// How long the attempts of a call run before another is started: a
    /// duration, or a percentile of the first attempts' latency.
    pub delay: HedgeDelay,
    /// The delay a call's hedges would wait now: `delay`, or the estimate
    /// of its percentile (`None` while that warms up).
    pub current_delay: Option<Duration>,
}

impl Instance for HedgeSnapshot {
    fn instance(&self) -> &str {
        &self.instance
    }
}

impl HedgeSnapshot {
    pub(crate) fn of(hedge: &Hedge) -> Self {
        let config = hedge.config();
        HedgeSnapshot {
            instance: hedge.instance().to_owned(),
            max_hedged: config.max_hedged(),
            delay: config.delay(),
            current_delay: hedge.delay(),
        }
    }
}

/// A fallback policy's configuration at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FallbackSnapshot {
    /// The instance id.
    pub instance: String,
    /// The rejections the fallback answers.
    pub on: RejectionKinds,
    /// Whether it answers the method's own errors too.
    pub on_error: bool,
}

impl Instance for FallbackSnapshot {
    fn instance(&self) -> &str {
        &self.instance
    }
}

impl FallbackSnapshot {
    pub(crate) fn of(fallback: &Fallback) -> Self {
        let config = fallback.config();
        FallbackSnapshot {
            instance: fallback.instance().to_owned(),
            on: config.on(),
            on_error: config.on_error(),
        }
    }
}

/// A timeout policy's configuration at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TimeoutSnapshot {
    /// The instance id.
    pub instance: String,
    /// How long a call may take.
    pub duration: Duration,
}

impl Instance for TimeoutSnapshot {
    fn instance(&self) -> &str {
        &self.instance
    }
}

impl TimeoutSnapshot {
    pub(crate) fn of(timeout: &Timeout) -> Self {
        TimeoutSnapshot {
            instance: timeout.instance().to_owned(),
            duration: timeout.duration(),
        }
    }
}

/// A circuit breaker's state at one moment.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CircuitBreakerSnapshot {
    /// The instance id.
    pub instance: String,
    /// Closed, open, half-open, forced open or disabled.
    pub state: CircuitState,
    /// Failed calls in the window, in percent; `None` until the window holds
    /// `minimum_calls` calls.
    pub failure_rate: Option<f32>,
    /// Slow calls in the window, in percent; `None` likewise.
    pub slow_call_rate: Option<f32>,
    /// Calls in the window.
    pub buffered_calls: u32,
    /// Failed calls in the window.
    pub failed_calls: u32,
    /// Slow calls in the window.
    pub slow_calls: u32,
    /// Calls refused since the breaker was created.
    pub not_permitted_calls: u64,
    /// The failure rate at which it opens.
    pub failure_rate_threshold: f32,
}

impl Instance for CircuitBreakerSnapshot {
    fn instance(&self) -> &str {
        &self.instance
    }
}

impl CircuitBreakerSnapshot {
    pub(crate) fn of(breaker: &CircuitBreaker) -> Self {
        let metrics = breaker.metrics();
        CircuitBreakerSnapshot {
            instance: breaker.instance().to_owned(),
            state: breaker.state(),
            failure_rate: metrics.failure_rate,
            slow_call_rate: metrics.slow_call_rate,
            buffered_calls: metrics.buffered_calls,
            failed_calls: metrics.failed_calls,
            slow_calls: metrics.slow_calls,
            not_permitted_calls: metrics.not_permitted_calls,
            failure_rate_threshold: breaker.config().failure_rate_threshold(),
        }
    }
}

/// A rate limiter's state at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RateLimiterSnapshot {
    /// The instance id.
    pub instance: String,
    /// Permits each refresh period brings.
    pub limit_for_period: u32,
    /// The length of a period.
    pub refresh_period: Duration,
    /// How long a caller may wait for a permit.
    pub max_wait: Duration,
    /// Permits left in this period; negative while callers hold reservations
    /// in later periods.
    pub available_permits: i64,
    /// Callers waiting for a reserved permit.
    pub waiting_calls: u32,
}

impl Instance for RateLimiterSnapshot {
    fn instance(&self) -> &str {
        &self.instance
    }
}

impl RateLimiterSnapshot {
    pub(crate) fn of(limiter: &RateLimiter) -> Self {
        let config = limiter.config();
        RateLimiterSnapshot {
            instance: limiter.instance().to_owned(),
            limit_for_period: config.limit_for_period(),
            refresh_period: config.refresh_period(),
            max_wait: config.max_wait(),
            available_permits: limiter.available_permits(),
            waiting_calls: limiter.waiting_calls(),
        }
    }
}

impl Registry {
    /// Every policy's state now.
    pub fn snapshot(&self) -> RegistrySnapshot {
        let stores = self.stores();
        RegistrySnapshot {
            bulkheads: sorted(&stores.bulkheads, BulkheadSnapshot::of),
            retries: sorted(&stores.retries, RetrySnapshot::of),
            timeouts: sorted(&stores.timeouts, TimeoutSnapshot::of),
            rate_limiters: sorted(&stores.rate_limiters, RateLimiterSnapshot::of),
            circuit_breakers: sorted(&stores.circuit_breakers, CircuitBreakerSnapshot::of),
            hedges: sorted(&stores.hedges, HedgeSnapshot::of),
            fallbacks: sorted(&stores.fallbacks, FallbackSnapshot::of),
            fleets: self.fleet_snapshots(),
        }
    }
}

/// The snapshot `of` each instance of `store`, sorted by instance id.
fn sorted<P: Policy, S: Instance>(store: &Store<P>, of: fn(&P) -> S) -> Vec<S> {
    let mut snapshots: Vec<S> = store.policies().iter().map(of).collect();
    snapshots.sort_by(|a, b| a.instance().cmp(b.instance()));
    snapshots
}

/// Every policy of a registry at one moment, each list sorted by instance id.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct RegistrySnapshot {
    pub(crate) bulkheads: Vec<BulkheadSnapshot>,
    pub(crate) retries: Vec<RetrySnapshot>,
    pub(crate) timeouts: Vec<TimeoutSnapshot>,
    pub(crate) rate_limiters: Vec<RateLimiterSnapshot>,
    pub(crate) circuit_breakers: Vec<CircuitBreakerSnapshot>,
    pub(crate) hedges: Vec<HedgeSnapshot>,
    pub(crate) fallbacks: Vec<FallbackSnapshot>,
    pub(crate) fleets: Vec<crate::fleet::FleetSnapshot>,
}

impl RegistrySnapshot {
    /// The bulkheads, sorted by instance id.
    pub fn bulkheads(&self) -> &[BulkheadSnapshot] {
        &self.bulkheads
    }

    /// The retry policies, sorted by instance id.
    pub fn retries(&self) -> &[RetrySnapshot] {
        &self.retries
    }

    /// The timeout policies, sorted by instance id.
    pub fn timeouts(&self) -> &[TimeoutSnapshot] {
        &self.timeouts
    }

    /// The circuit breakers, sorted by instance id.
    pub fn circuit_breakers(&self) -> &[CircuitBreakerSnapshot] {
        &self.circuit_breakers
    }

    /// The rate limiters, sorted by instance id.
    pub fn rate_limiters(&self) -> &[RateLimiterSnapshot] {
        &self.rate_limiters
    }

    /// The hedge policies, sorted by instance id.
    pub fn hedges(&self) -> &[HedgeSnapshot] {
        &self.hedges
    }

    /// The fallback policies, sorted by instance id.
    pub fn fallbacks(&self) -> &[FallbackSnapshot] {
        &self.fallbacks
    }

    /// The shares of the fleet resources, sorted by resource (none without
    /// a fleet crate such as `bulkhead-fleet`: see [`crate::fleet`]).
    pub fn fleets(&self) -> &[crate::fleet::FleetSnapshot] {
        &self.fleets
    }
}
