//! The circuit breaker: stops calling a dependency that keeps failing (or
//! keeps being slow), and tries it again after a while.
//!
//! [`CircuitBreaker`] is Resilience4j's state machine:
//!
//! - *closed*: calls pass and their outcomes fill a sliding window (the last
//!   N calls, or the last N seconds); once it holds `minimum_calls` calls and
//!   the failure rate or the slow-call rate reaches its threshold, it opens;
//! - *open*: calls are rejected with [`CircuitOpen`] until `wait_in_open` has
//!   passed on the breaker's clock, then it is half-open;
//! - *half-open*: `permitted_calls_in_half_open` trial calls pass; their
//!   outcomes close it again, or open it for another wait;
//! - *forced open* and *disabled*, set by an operator, reject or admit every
//!   call and record nothing.
//!
//! A call asks for a [`BreakerPermit`] and records its [`BreakerOutcome`] on it.
//!
//! - `config.rs`: [`CircuitBreakerConfig`], its builder, [`SlidingWindow`];
//! - `permit.rs`: [`BreakerPermit`], [`OwnedBreakerPermit`], [`BreakerOutcome`];
//! - `metrics.rs`: [`CircuitBreakerMetrics`];
//! - `machine.rs`: admission and recording;
//! - `transition.rs`: the state changes;
//! - `state.rs`: the atomic state word;
//! - `window/`: the count and time sliding windows.

mod config;
mod machine;
mod metrics;
mod permit;
mod state;
mod transition;
mod window;

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, loom))]
mod loom_tests;

pub use config::{CircuitBreakerConfig, CircuitBreakerConfigBuilder, SlidingWindow};
pub use metrics::CircuitBreakerMetrics;
pub use permit::{BreakerOutcome, BreakerPermit, OwnedBreakerPermit};

use std::fmt;
use std::sync::Arc;

use crate::clock::Clock;
use crate::context::{PolicyContext, policy_getters};
use crate::events::CircuitState;
use crate::intern::intern;
use crate::rejection::CircuitOpen;
use machine::Shared;

/// A circuit breaker: rejects calls to a dependency while too many recent
/// calls to it failed or were slow.
///
/// Cheap to clone; clones share one state. Every state change publishes a
/// `StateTransition` event, every rejection a `Rejected` one.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use bulkhead_core::{
///     CircuitBreaker, CircuitBreakerConfig, CircuitState, ManualClock, BreakerOutcome, PolicyContext,
/// };
///
/// let config = CircuitBreakerConfig::builder()
///     .sliding_window_size(4)
///     .minimum_calls(4)
///     .wait_in_open(Duration::from_secs(30))
///     .permitted_calls_in_half_open(1)
///     .build()?;
/// let clock = ManualClock::new();
/// let context = PolicyContext::new(Arc::new(clock.clone()));
/// let breaker = CircuitBreaker::with_context("payments", config, context);
///
/// for outcome in [BreakerOutcome::Success, BreakerOutcome::Failure, BreakerOutcome::Success, BreakerOutcome::Failure] {
///     breaker.try_acquire()?.record(outcome, None);
/// }
/// assert_eq!(breaker.state(), CircuitState::Open);  // 50% of 4 calls failed
/// let rejected = breaker.try_acquire().unwrap_err();
/// assert_eq!(rejected.instance(), "payments");
///
/// clock.advance(Duration::from_secs(30));
/// let trial = breaker.try_acquire()?;                // the one trial call
/// assert_eq!(breaker.state(), CircuitState::HalfOpen);
/// trial.record(BreakerOutcome::Success, None);
/// assert_eq!(breaker.state(), CircuitState::Closed);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct CircuitBreaker {
    shared: Arc<Shared>,
}

impl CircuitBreaker {
    /// A circuit breaker on the system clock that publishes no events.
    ///
    /// The instance id is interned: each distinct id is kept for the life of
    /// the process. Ids are meant to name the dependencies of a program, a
    /// bounded set; do not build one per request.
    pub fn new(instance: &str, config: CircuitBreakerConfig) -> Self {
        CircuitBreaker::with_context(instance, config, PolicyContext::default())
    }

    /// A circuit breaker measuring time (the open state's wait, a time
    /// window's seconds) on the context's clock, and publishing its events
    /// to the context's bus.
    pub fn with_context(
        instance: &str,
        config: CircuitBreakerConfig,
        context: PolicyContext,
    ) -> Self {
        CircuitBreaker {
            shared: Arc::new(Shared::new(intern(instance), config, context)),
        }
    }

    /// The clock it measures windows and waits on.
    pub(crate) fn clock(&self) -> &Arc<dyn Clock> {
        self.shared.context.clock()
    }

    /// The clock's time when it was created: a time window counts its
    /// seconds from there.
    pub(crate) fn origin(&self) -> std::time::Instant {
        self.shared.origin()
    }

    /// The current state.
    ///
    /// An open breaker whose wait is over stays open until the next call
    /// asks for a permit (as in Resilience4j without automatic transition).
    pub fn state(&self) -> CircuitState {
        self.shared.state()
    }

    /// What the breaker counts now: see [`CircuitBreakerMetrics`].
    ///
    /// Takes the breaker's lock briefly and, for a time window, scans it: for
    /// monitoring, not for every call.
    pub fn metrics(&self) -> CircuitBreakerMetrics {
        self.shared.metrics()
    }

    /// Asks to make one call.
    ///
    /// Closed (and disabled), this is one atomic load: no clock read, no
    /// lock, no allocation. Open, it reads the clock: once `wait_in_open` has
    /// passed (from exactly `wait_in_open` after the opening on) the breaker
    /// turns half-open (one caller makes the transition) and the call
    /// competes for a trial. Half-open, at most
    /// `permitted_calls_in_half_open` trial permits are out at once.
    ///
    /// # Errors
    ///
    /// [`CircuitOpen`] if the breaker is open, forced open, or half-open with
    /// no trial left; the rejection is counted and publishes a `Rejected`
    /// event.
    #[inline]
    pub fn try_acquire(&self) -> Result<BreakerPermit<'_>, CircuitOpen> {
        let ticket = self.shared.try_acquire()?;
        Ok(BreakerPermit::new(&self.shared, ticket))
    }

    /// Like [`try_acquire`](Self::try_acquire), with a permit that can move
    /// to another thread or task.
    ///
    /// # Errors
    ///
    /// [`CircuitOpen`], as for [`try_acquire`](Self::try_acquire).
    pub fn try_acquire_owned(&self) -> Result<OwnedBreakerPermit, CircuitOpen> {
        let permit = self.try_acquire()?;
        Ok(OwnedBreakerPermit::new(self, permit))
    }

    /// Closes the breaker with an empty window.
    pub fn transition_to_closed(&self) {
        self.shared.transition(CircuitState::Closed);
    }

    /// Opens the breaker for `wait_in_open`, after which it turns half-open
    /// as if it had opened by itself. Already open, it starts a new wait.
    pub fn transition_to_open(&self) {
        self.shared.transition(CircuitState::Open);
    }

    /// Opens the breaker until an operator moves it again: every call is
    /// rejected and nothing is recorded.
    pub fn transition_to_forced_open(&self) {
        self.shared.transition(CircuitState::ForcedOpen);
    }

    /// Disables the breaker until an operator moves it again: every call
    /// passes and nothing is recorded.
    pub fn transition_to_disabled(&self) {
        self.shared.transition(CircuitState::Disabled);
    }

    /// Back to closed with an empty window, whatever the state: the same as
    /// [`transition_to_closed`](Self::transition_to_closed) (Resilience4j's
    /// `reset` also publishes a reset event, which this crate has no kind
    /// for). The not-permitted count is kept.
    pub fn reset(&self) {
        self.shared.transition(CircuitState::Closed);
    }
}

policy_getters!(CircuitBreaker: CircuitBreakerConfig);

impl fmt::Debug for CircuitBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreaker")
            .field("instance", &self.shared.instance)
            .field("state", &self.state())
            .field("config", &self.shared.config)
            .finish()
    }
}
