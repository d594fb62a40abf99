//! Circuit breakers in a registry: [`CircuitBreakerHandle`], [`CircuitBreakerSnapshot`], and the
//! registry's methods named after them.

use bulkhead_core::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerConfigBuilder, CircuitBreakerEvent,
    CircuitBreakerMetrics, CircuitState,
};

use super::{Managed, Policy, inherent_methods, named_methods, policy_methods};
use crate::events::policy_event;
use crate::handle::Handle;
use crate::pipeline::PipelineBuilder;
use bulkhead_core::keys::PolicyKind;

impl Policy for CircuitBreaker {
    type Config = CircuitBreakerConfig;
    type Snapshot = CircuitBreakerSnapshot;
    type Event = CircuitBreakerEvent;

    inherent_methods!();

    fn snapshot(&self) -> CircuitBreakerSnapshot {
        let metrics = self.metrics();
        CircuitBreakerSnapshot {
            instance: Self::instance(self).to_owned(),
            state: self.state(),
            failure_rate: metrics.failure_rate,
            slow_call_rate: metrics.slow_call_rate,
            buffered_calls: metrics.buffered_calls,
            failed_calls: metrics.failed_calls,
            slow_calls: metrics.slow_calls,
            not_permitted_calls: metrics.not_permitted_calls,
            failure_rate_threshold: Self::config(self).failure_rate_threshold(),
        }
    }
}

impl Managed for CircuitBreaker {
    const KIND: PolicyKind = PolicyKind::CircuitBreaker;
    type Spec = CircuitBreakerConfigBuilder;

    policy_methods!(circuit_breakers, with_circuit_breaker);
}

policy_event!(CircuitBreakerEvent => CircuitBreaker);

named_methods! {
    policy: CircuitBreaker, spec: CircuitBreakerConfigBuilder,
    handle: CircuitBreakerHandle, snapshot: CircuitBreakerSnapshot,
    method: circuit_breaker, instance: circuit_breaker_instance, list: circuit_breakers,
    words: "circuit breaker", "circuit breaker", "circuit breakers",
    config: circuit_breaker_config,
}

impl Handle<CircuitBreaker> {
    /// The state now.
    pub fn state(&self) -> CircuitState {
        self.policy.state()
    }

    /// The failure rate of the window, in percent; `None` until the window
    /// holds `minimum_calls` calls.
    pub fn failure_rate(&self) -> Option<f32> {
        self.policy.metrics().failure_rate
    }

    /// The window's counts and rates.
    pub fn metrics(&self) -> CircuitBreakerMetrics {
        self.policy.metrics()
    }

    /// Forces the breaker open until another transition.
    pub fn force_open(&self) {
        self.policy.transition_to_forced_open();
    }

    /// Disables the breaker: every call passes, nothing is recorded.
    pub fn disable(&self) {
        self.policy.transition_to_disabled();
    }

    /// Closes the breaker with an empty window.
    pub fn reset(&self) {
        self.policy.reset();
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

impl PipelineBuilder<'_> {
    /// Adds a circuit breaker (inside the retry).
    pub fn circuit_breaker(
        self,
        f: impl FnOnce(CircuitBreakerConfigBuilder) -> CircuitBreakerConfigBuilder,
    ) -> Self {
        self.with::<CircuitBreaker>(f)
    }
}
