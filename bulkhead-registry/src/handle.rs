//! Handles to live policy instances.

use bulkhead_core::{
    Bulkhead, BulkheadEvent, CircuitBreaker, CircuitBreakerConfig, CircuitBreakerEvent,
    CircuitBreakerMetrics, CircuitState, EventBus, RateLimiter, RateLimiterConfig,
    RateLimiterEvent, Retry, RetryConfig, RetryEvent, Timeout, TimeoutConfig, TimeoutEvent,
};

use crate::error::RegistryError;
use crate::events::{InstanceEvents, PolicyEvent};
use crate::registry::Registry;
use crate::snapshot::{
    BulkheadSnapshot, CircuitBreakerSnapshot, RateLimiterSnapshot, RetrySnapshot, TimeoutSnapshot,
};

/// A view of one bulkhead of a registry, from
/// [`Registry::bulkhead`](crate::Registry::bulkhead).
///
/// Cheap to clone; reads are lock-free.
#[derive(Debug, Clone)]
pub struct BulkheadHandle {
    bulkhead: Bulkhead,
    /// Its registry: its bus, and its budgets for `set_max_concurrent`.
    registry: Registry,
}

impl BulkheadHandle {
    pub(crate) fn new(bulkhead: Bulkhead, registry: Registry) -> Self {
        BulkheadHandle { bulkhead, registry }
    }

    /// Starts receiving this instance's events: its rejections and limit
    /// changes. Admitted calls publish nothing.
    ///
    /// The stream holds only this instance's events of this policy; it never
    /// slows a caller down (see [`InstanceEvents`]).
    pub fn subscribe(&self) -> InstanceEvents<BulkheadEvent> {
        InstanceEvents::new(self.registry.subscribe(), self.bulkhead.instance())
    }

    /// The instance id.
    pub fn instance(&self) -> &str {
        self.bulkhead.instance()
    }

    /// Calls holding a slot now.
    pub fn concurrent_calls(&self) -> u32 {
        self.bulkhead.concurrent_calls()
    }

    /// Calls waiting for a slot now (0 when `max_wait` is zero). For
    /// monitoring only: by the time you read it, it may have changed.
    pub fn waiting_calls(&self) -> u32 {
        self.bulkhead.waiting_calls()
    }

    /// The current limit.
    pub fn max_concurrent(&self) -> u32 {
        self.bulkhead.max_concurrent()
    }

    /// The bulkhead's state now.
    pub fn snapshot(&self) -> BulkheadSnapshot {
        BulkheadSnapshot::of(&self.bulkhead)
    }

    /// Changes the limit at once; see [`Bulkhead::set_max_concurrent`] for
    /// what happens to calls in flight and to waiters. A `LimitChanged`
    /// event is published.
    ///
    /// The change lasts until the next [`Registry::reload`], which puts
    /// every limit back to what the configuration says. A bulkhead on a
    /// resource stays within the resource's budget: unlike
    /// [`Bulkhead::set_max_concurrent`] on [`bulkhead`](Self::bulkhead),
    /// which knows nothing of budgets, this checks it.
    ///
    /// # Errors
    ///
    /// - ATR-003 if `max_concurrent` is out of range;
    /// - REG-010 if the bulkheads on its resource would then need more
    ///   slots than the resource's budget.
    ///
    /// The limit is then unchanged.
    ///
    /// It is serialised with declarations and reloads: it waits while
    /// another thread has a [`Registry::declare`] batch open. On the thread
    /// that holds the batch it runs at once, and the bulkheads the batch
    /// declared count against the budget.
    pub fn set_max_concurrent(&self, max_concurrent: u32) -> Result<(), RegistryError> {
        self.registry
            .set_max_concurrent(&self.bulkhead, max_concurrent)
    }

    /// The bulkhead itself, to enter it directly.
    pub fn bulkhead(&self) -> &Bulkhead {
        &self.bulkhead
    }
}

/// A view of one retry policy of a registry, from
/// [`Registry::retry`](crate::Registry::retry).
#[derive(Debug, Clone)]
pub struct RetryHandle {
    retry: Retry,
    /// The registry's bus, which the policy publishes to.
    events: Option<EventBus>,
}

impl RetryHandle {
    pub(crate) fn new(retry: Retry) -> Self {
        RetryHandle {
            retry,
            events: None,
        }
    }

    /// The same handle, subscribing to `events`, the bus its registry's
    /// policies publish to.
    pub(crate) fn with_events(mut self, events: &EventBus) -> Self {
        self.events = Some(events.clone());
        self
    }

    /// Starts receiving this instance's events: its retries, and calls that
    /// succeeded after a retry, exhausted their attempts or were aborted.
    /// Admitted calls publish nothing.
    ///
    /// The stream holds only this instance's events of this policy; it never
    /// slows a caller down (see [`InstanceEvents`]).
    pub fn subscribe(&self) -> InstanceEvents<RetryEvent> {
        subscribe(self.events.as_ref(), self.retry.instance())
    }

    /// The instance id.
    pub fn instance(&self) -> &str {
        self.retry.instance()
    }

    /// The configuration.
    pub fn config(&self) -> RetryConfig {
        self.retry.config()
    }

    /// The policy's state now.
    pub fn snapshot(&self) -> RetrySnapshot {
        RetrySnapshot::of(&self.retry)
    }

    /// The policy itself.
    pub fn retry(&self) -> &Retry {
        &self.retry
    }
}

/// A view of one timeout policy of a registry, from
/// [`Registry::timeout`](crate::Registry::timeout).
#[derive(Debug, Clone)]
pub struct TimeoutHandle {
    timeout: Timeout,
    /// The registry's bus, which the policy publishes to.
    events: Option<EventBus>,
}

impl TimeoutHandle {
    pub(crate) fn new(timeout: Timeout) -> Self {
        TimeoutHandle {
            timeout,
            events: None,
        }
    }

    /// The same handle, subscribing to `events`, the bus its registry's
    /// policies publish to.
    pub(crate) fn with_events(mut self, events: &EventBus) -> Self {
        self.events = Some(events.clone());
        self
    }

    /// Starts receiving this instance's events: its calls that timed out, and
    /// sync calls that overran. Admitted calls publish nothing.
    ///
    /// The stream holds only this instance's events of this policy; it never
    /// slows a caller down (see [`InstanceEvents`]).
    pub fn subscribe(&self) -> InstanceEvents<TimeoutEvent> {
        subscribe(self.events.as_ref(), self.timeout.instance())
    }

    /// The instance id.
    pub fn instance(&self) -> &str {
        self.timeout.instance()
    }

    /// The configuration.
    pub fn config(&self) -> TimeoutConfig {
        self.timeout.config()
    }

    /// The policy's state now.
    pub fn snapshot(&self) -> TimeoutSnapshot {
        TimeoutSnapshot::of(&self.timeout)
    }

    /// The policy itself.
    pub fn timeout(&self) -> &Timeout {
        &self.timeout
    }
}

/// A view of one rate limiter of a registry, from
/// [`Registry::rate_limiter`](crate::Registry::rate_limiter).
#[derive(Debug, Clone)]
pub struct RateLimiterHandle {
    limiter: RateLimiter,
    /// The registry's bus, which the policy publishes to.
    events: Option<EventBus>,
}

impl RateLimiterHandle {
    pub(crate) fn new(limiter: RateLimiter) -> Self {
        RateLimiterHandle {
            limiter,
            events: None,
        }
    }

    /// The same handle, subscribing to `events`, the bus its registry's
    /// policies publish to.
    pub(crate) fn with_events(mut self, events: &EventBus) -> Self {
        self.events = Some(events.clone());
        self
    }

    /// Starts receiving this instance's events: its rejections. Admitted calls
    /// publish nothing.
    ///
    /// The stream holds only this instance's events of this policy; it never
    /// slows a caller down (see [`InstanceEvents`]).
    pub fn subscribe(&self) -> InstanceEvents<RateLimiterEvent> {
        subscribe(self.events.as_ref(), self.limiter.instance())
    }

    /// The instance id.
    pub fn instance(&self) -> &str {
        self.limiter.instance()
    }

    /// The configuration.
    pub fn config(&self) -> RateLimiterConfig {
        self.limiter.config()
    }

    /// Permits left in this period (negative while later ones are reserved).
    pub fn available_permits(&self) -> i64 {
        self.limiter.available_permits()
    }

    /// The limiter's state now.
    pub fn snapshot(&self) -> RateLimiterSnapshot {
        RateLimiterSnapshot::of(&self.limiter)
    }

    /// The limiter itself.
    pub fn rate_limiter(&self) -> &RateLimiter {
        &self.limiter
    }
}

/// A view of one circuit breaker of a registry, from
/// [`Registry::circuit_breaker`](crate::Registry::circuit_breaker), with the
/// operator's controls.
#[derive(Debug, Clone)]
pub struct CircuitBreakerHandle {
    breaker: CircuitBreaker,
    /// The registry's bus, which the policy publishes to.
    events: Option<EventBus>,
}

impl CircuitBreakerHandle {
    pub(crate) fn new(breaker: CircuitBreaker) -> Self {
        CircuitBreakerHandle {
            breaker,
            events: None,
        }
    }

    /// The same handle, subscribing to `events`, the bus its registry's
    /// policies publish to.
    pub(crate) fn with_events(mut self, events: &EventBus) -> Self {
        self.events = Some(events.clone());
        self
    }

    /// Starts receiving this instance's events: its state transitions and
    /// rejections. Admitted calls publish nothing.
    ///
    /// The stream holds only this instance's events of this policy; it never
    /// slows a caller down (see [`InstanceEvents`]).
    pub fn subscribe(&self) -> InstanceEvents<CircuitBreakerEvent> {
        subscribe(self.events.as_ref(), self.breaker.instance())
    }

    /// The instance id.
    pub fn instance(&self) -> &str {
        self.breaker.instance()
    }

    /// The configuration.
    pub fn config(&self) -> CircuitBreakerConfig {
        self.breaker.config()
    }

    /// The state now.
    pub fn state(&self) -> CircuitState {
        self.breaker.state()
    }

    /// The failure rate of the window, in percent; `None` until the window
    /// holds `minimum_calls` calls.
    pub fn failure_rate(&self) -> Option<f32> {
        self.breaker.metrics().failure_rate
    }

    /// The window's counts and rates.
    pub fn metrics(&self) -> CircuitBreakerMetrics {
        self.breaker.metrics()
    }

    /// The breaker's state now.
    pub fn snapshot(&self) -> CircuitBreakerSnapshot {
        CircuitBreakerSnapshot::of(&self.breaker)
    }

    /// Forces the breaker open until another transition.
    pub fn force_open(&self) {
        self.breaker.transition_to_forced_open();
    }

    /// Disables the breaker: every call passes, nothing is recorded.
    pub fn disable(&self) {
        self.breaker.transition_to_disabled();
    }

    /// Closes the breaker with an empty window.
    pub fn reset(&self) {
        self.breaker.reset();
    }

    /// The breaker itself.
    pub fn circuit_breaker(&self) -> &CircuitBreaker {
        &self.breaker
    }
}

/// A subscription to `instance`'s events on `events`; without a bus, a
/// stream that has ended (nothing is published for the policy).
fn subscribe<E: PolicyEvent>(events: Option<&EventBus>, instance: &str) -> InstanceEvents<E> {
    let stream = match events {
        Some(events) => events.subscribe(),
        None => EventBus::new(1).subscribe(),
    };
    InstanceEvents::new(stream, instance)
}
