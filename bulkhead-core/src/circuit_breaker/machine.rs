//! # Implementation details
//!
//! The state machine of a circuit breaker: who is admitted, where outcomes
//! go, and the transitions.
//!
//! ## Paths
//!
//! - *Closed admission*: one `Acquire` load of the state word (see
//!   `state.rs`). No clock, no lock, no allocation.
//! - *Closed record*: one load of the state word (an outcome of an epoch that
//!   is gone is dropped), then the window (`window/`). The thresholds are
//!   checked only when the window asks for it, and the breaker opens through
//!   the mutex.
//! - *Open admission*: a clock read against `open_until`; a rejection
//!   counts in `not_permitted` and publishes an event. Once the wait is
//!   over, the caller takes the mutex and moves the breaker to half-open if
//!   nobody did first (the word it saw is still there): exactly one caller
//!   makes the transition, and everyone then competes for the trials.
//! - *Half-open admission*: a compare-exchange taking one trial from the
//!   word, so at most `permitted_calls_in_half_open` trials are out at once.
//!   A cancelled or ignored trial is given back by the reverse exchange, if
//!   the epoch is still the same.
//! - *Half-open record*: under the mutex, so that the trial that completes
//!   the count decides exactly once.
//! - *Transitions* (`transition.rs`): under the mutex.
//!
//! ## Memory ordering
//!
//! The state word is loaded with `Acquire` before the state's data (window,
//! open deadline) is read; transitions write that data before they publish
//! the word with `Release`. The trial exchanges are `AcqRel`. The
//! `not_permitted` counter, only read for monitoring, is `Relaxed`.

use std::time::{Duration, Instant};

use super::config::CircuitBreakerConfig;
use super::metrics::CircuitBreakerMetrics;
use super::permit::BreakerOutcome;
use super::state::Word;
use super::transition::Transitions;
use super::window::{Counts, Window};
use crate::context::PolicyContext;
use crate::events::{CircuitBreakerEvent, CircuitBreakerEventKind, CircuitState, Event};
use crate::loom::atomic::{AtomicU64, Ordering::*};
use crate::loom::{Mutex, lock};
use crate::rejection::CircuitOpen;

/// What a permit stands for: one word, so that a permit is written and
/// copied as whole words (an async call keeps it across its await; a copy
/// of two half-word stores as one load would stall on store forwarding).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Ticket(u64);

/// What a [`Ticket`] stands for, unpacked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A call of the closed state of this epoch.
    Closed(u32),
    /// A trial call of the half-open state of this epoch.
    Trial(u32),
    /// A call of a disabled breaker, or a permit already used.
    Free,
}

impl Ticket {
    const CLOSED: u64 = 1;
    const TRIAL: u64 = 2;
    const SHIFT: u32 = 2;

    /// A call of a disabled breaker, or a permit already used.
    pub(super) const FREE: Ticket = Ticket(0);

    /// A call of the closed state of `epoch`.
    #[inline]
    pub(super) fn closed(epoch: u32) -> Ticket {
        Ticket(u64::from(epoch) << Self::SHIFT | Self::CLOSED)
    }

    /// A trial call of the half-open state of `epoch`.
    #[inline]
    pub(super) fn trial(epoch: u32) -> Ticket {
        Ticket(u64::from(epoch) << Self::SHIFT | Self::TRIAL)
    }

    #[inline]
    pub(super) fn kind(self) -> Kind {
        let epoch = (self.0 >> Self::SHIFT) as u32;
        match self.0 & (Self::CLOSED | Self::TRIAL) {
            Self::CLOSED => Kind::Closed(epoch),
            Self::TRIAL => Kind::Trial(epoch),
            _ => Kind::Free,
        }
    }
}

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.kind().fmt(f)
    }
}

pub(super) struct Shared {
    pub(super) instance: &'static str,
    pub(super) config: CircuitBreakerConfig,
    pub(super) context: PolicyContext,
    /// The state word: see `state.rs`.
    pub(super) state: AtomicU64,
    /// The closed state's window.
    pub(super) window: Window,
    /// When the open state ends, in nanoseconds since `origin`.
    pub(super) open_until: AtomicU64,
    not_permitted: AtomicU64,
    /// The clock's time when the breaker was created.
    origin: Instant,
    tracks_slow_calls: bool,
    /// Held by every transition and by half-open records.
    pub(super) transitions: Mutex<Transitions>,
}

/// What a threshold check finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Every rate below its threshold.
    Healthy,
    /// A rate at or over its threshold, with fewer calls than the minimum.
    Pending,
    /// A rate at or over its threshold: open.
    Exceeded,
}

impl Shared {
    pub(super) fn new(
        instance: &'static str,
        config: CircuitBreakerConfig,
        context: PolicyContext,
    ) -> Self {
        Shared {
            instance,
            state: AtomicU64::new(Word::new(0, CircuitState::Closed, 0).0),
            window: Window::new(&config),
            open_until: AtomicU64::new(0),
            not_permitted: AtomicU64::new(0),
            origin: context.clock().now(),
            tracks_slow_calls: config.tracks_slow_calls(),
            transitions: Mutex::new(Transitions::default()),
            config,
            context,
        }
    }

    /// The current state.
    pub(super) fn state(&self) -> CircuitState {
        Word(self.state.load(Acquire)).state()
    }

    #[inline]
    pub(super) fn try_acquire(&self) -> Result<Ticket, CircuitOpen> {
        let word = Word(self.state.load(Acquire));
        if word.is_closed() {
            return Ok(Ticket::closed(word.epoch()));
        }
        self.try_acquire_not_closed(word)
    }

    #[cold]
    fn try_acquire_not_closed(&self, mut word: Word) -> Result<Ticket, CircuitOpen> {
        loop {
            match word.state() {
                CircuitState::Closed => return Ok(Ticket::closed(word.epoch())),
                CircuitState::Disabled => return Ok(Ticket::FREE),
                CircuitState::ForcedOpen => return Err(self.reject(CircuitState::ForcedOpen)),
                CircuitState::Open => {
                    // `open_until` was written before the word we loaded.
                    // The wait is over at exactly `open_until`, as every
                    // deadline of a clock (see `wait_in_open`'s docs).
                    if self.nanos() < self.open_until.load(Relaxed) {
                        return Err(self.reject(CircuitState::Open));
                    }
                    self.transition_from(word, CircuitState::HalfOpen);
                    word = Word(self.state.load(Acquire));
                }
                CircuitState::HalfOpen => {
                    let trials = word.trials();
                    if trials == 0 {
                        return Err(self.reject(CircuitState::HalfOpen));
                    }
                    let taken = word.with_trials(trials - 1);
                    match self
                        .state
                        .compare_exchange_weak(word.0, taken.0, AcqRel, Acquire)
                    {
                        Ok(_) => return Ok(Ticket::trial(word.epoch())),
                        Err(actual) => word = Word(actual),
                    }
                }
            }
        }
    }

    #[inline]
    pub(super) fn tracks_slow_calls(&self, ticket: Ticket) -> bool {
        self.tracks_slow_calls && ticket != Ticket::FREE
    }

    /// Records an outcome; `at` is the time it ended on the breaker's
    /// clock, in nanoseconds since `origin`, if the caller has read it (a
    /// time window needs the second).
    ///
    /// The healthy steady state, a closed call's success (not slow) while
    /// the count window holds only successes of its epoch, changes nothing
    /// (see `CountWindow::record`) and returns here, inline, after the
    /// window's three loads; everything else is recorded out of line. The
    /// state word need not be read for it: recorded late, in another state,
    /// the outcome would change nothing either.
    #[inline]
    pub(super) fn record(
        &self,
        ticket: Ticket,
        outcome: BreakerOutcome,
        duration: Option<Duration>,
        at: Option<u64>,
    ) {
        if outcome == BreakerOutcome::Success
            && let Kind::Closed(epoch) = ticket.kind()
            && !self.is_slow(duration)
            && self.window.holds_only_successes(epoch)
        {
            return;
        }
        self.record_out_of_line(ticket, outcome, duration, at);
    }

    /// Whether a call that took `duration` (`None`: not measured) was slow.
    #[inline]
    fn is_slow(&self, duration: Option<Duration>) -> bool {
        duration.is_some_and(|d| d > self.config.slow_call_threshold())
    }

    /// [`record`](Self::record) past its steady-state test.
    #[inline(never)]
    fn record_out_of_line(
        &self,
        ticket: Ticket,
        outcome: BreakerOutcome,
        duration: Option<Duration>,
        at: Option<u64>,
    ) {
        let failed = match outcome {
            BreakerOutcome::Success => false,
            BreakerOutcome::Failure => true,
            BreakerOutcome::Ignored => return self.cancel(ticket),
        };
        let slow = self.is_slow(duration);
        match ticket.kind() {
            Kind::Closed(epoch) => self.record_closed(epoch, failed, slow, at),
            Kind::Trial(epoch) => self.record_trial(epoch, failed, slow),
            Kind::Free => {}
        }
    }

    /// A permit dropped without an outcome (or ignored): gives a trial back.
    #[inline]
    pub(super) fn cancel(&self, ticket: Ticket) {
        if let Kind::Trial(epoch) = ticket.kind() {
            self.give_back_trial(epoch);
        }
    }

    #[inline]
    fn record_closed(&self, epoch: u32, failed: bool, slow: bool, at: Option<u64>) {
        if !Word(self.state.load(Acquire)).is(CircuitState::Closed, epoch) {
            return;
        }
        let mut now = None;
        let mut second = || {
            *now.get_or_insert_with(|| match at {
                Some(at) => second_of(at),
                None => self.second(),
            })
        };
        if self.window.record(epoch, failed, slow, &mut second) {
            self.check_closed(epoch, &mut second);
        }
    }

    #[cold]
    fn check_closed(&self, epoch: u32, second: &mut impl FnMut() -> u32) {
        let counts = self.window.counts(epoch, second);
        match self.verdict(counts, self.config.closed_minimum()) {
            Verdict::Exceeded => {
                let closed = Word::new(epoch, CircuitState::Closed, 0);
                self.transition_from(closed, CircuitState::Open);
            }
            verdict => self.window.set_pending(verdict == Verdict::Pending),
        }
    }

    fn record_trial(&self, epoch: u32, failed: bool, slow: bool) {
        let mut transitions = lock(&self.transitions);
        let word = Word(self.state.load(Acquire));
        if !word.is(CircuitState::HalfOpen, epoch) {
            return;
        }
        transitions.trials.record(failed, slow);
        let minimum = self.config.half_open_minimum();
        if transitions.trials.calls >= minimum {
            let to = match self.verdict(transitions.trials, minimum) {
                Verdict::Exceeded => CircuitState::Open,
                Verdict::Healthy | Verdict::Pending => CircuitState::Closed,
            };
            self.transition_locked(&mut transitions, word, to);
        }
    }

    fn give_back_trial(&self, epoch: u32) {
        let permitted = self.config.permitted_calls_in_half_open();
        let mut word = Word(self.state.load(Acquire));
        while word.is(CircuitState::HalfOpen, epoch) && word.trials() < permitted {
            let given = word.with_trials(word.trials() + 1);
            match self
                .state
                .compare_exchange_weak(word.0, given.0, AcqRel, Acquire)
            {
                Ok(_) => return,
                Err(actual) => word = Word(actual),
            }
        }
    }

    pub(super) fn verdict(&self, counts: Counts, minimum: u32) -> Verdict {
        let over = counts.calls > 0
            && (counts.failure_rate() >= self.config.failure_rate_threshold()
                || counts.slow_call_rate() >= self.config.slow_call_rate_threshold());
        match (over, counts.calls >= minimum) {
            (false, _) => Verdict::Healthy,
            (true, false) => Verdict::Pending,
            (true, true) => Verdict::Exceeded,
        }
    }

    pub(super) fn metrics(&self) -> CircuitBreakerMetrics {
        let transitions = lock(&self.transitions);
        // No transition can happen while we hold the lock.
        let word = Word(self.state.load(Acquire));
        let (counts, minimum) = match word.state() {
            CircuitState::Closed => (
                self.window.counts(word.epoch(), &mut || self.second()),
                self.config.closed_minimum(),
            ),
            CircuitState::HalfOpen => (transitions.trials, self.config.half_open_minimum()),
            _ => transitions.frozen,
        };
        drop(transitions);
        CircuitBreakerMetrics::new(counts, minimum, self.not_permitted.load(Relaxed))
    }

    pub(super) fn reject(&self, state: CircuitState) -> CircuitOpen {
        self.not_permitted.fetch_add(1, Relaxed);
        self.publish(CircuitBreakerEventKind::Rejected { state });
        CircuitOpen::new(self.instance)
    }

    pub(super) fn publish(&self, kind: CircuitBreakerEventKind) {
        let instance = self.instance;
        self.context
            .publish(|at| Event::CircuitBreaker(CircuitBreakerEvent::new(instance, kind, at)));
    }

    /// Checks the invariants a quiescent breaker keeps.
    #[cfg(test)]
    pub(super) fn assert_consistent(&self) {
        let _transitions = lock(&self.transitions);
        let word = Word(self.state.load(Acquire));
        if word.state() == CircuitState::HalfOpen {
            assert!(word.trials() <= self.config.permitted_calls_in_half_open());
        } else {
            assert_eq!(word.trials(), 0, "{:?}", word.state());
        }
        self.window.assert_consistent();
    }

    fn elapsed(&self) -> Duration {
        self.context
            .clock()
            .now()
            .saturating_duration_since(self.origin)
    }

    /// Nanoseconds since the breaker was created, on its clock.
    pub(super) fn nanos(&self) -> u64 {
        u64::try_from(self.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// The current second, counted from 1 at the breaker's creation, from
    /// a recent reading of the clock (a window's seconds need no more).
    pub(super) fn second(&self) -> u32 {
        self.second_at(self.context.clock().recent())
    }

    /// The second `at` falls in, counted from 1 at the breaker's creation.
    fn second_at(&self, at: Instant) -> u32 {
        let since = at.saturating_duration_since(self.origin).as_nanos();
        second_of(u64::try_from(since).unwrap_or(u64::MAX))
    }

    /// The clock's time when the breaker was created.
    pub(super) fn origin(&self) -> Instant {
        self.origin
    }
}

/// The second `nanos` after the breaker's creation falls in, counted from 1.
#[inline]
fn second_of(nanos: u64) -> u32 {
    let second = (nanos / 1_000_000_000).saturating_add(1);
    u32::try_from(second).unwrap_or(u32::MAX)
}
