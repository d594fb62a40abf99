//! [`CircuitBreakerHandle`]: one circuit breaker of a registry, with the
//! operator's controls.

use bulkhead_core::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerEvent, CircuitBreakerMetrics, CircuitState,
    EventBus,
};

use crate::events::InstanceEvents;
use crate::snapshot::CircuitBreakerSnapshot;

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
        InstanceEvents::on_bus(self.events.as_ref(), self.breaker.instance())
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
