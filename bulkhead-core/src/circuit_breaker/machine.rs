//! # Implementation details
//!
//! The state machine of a circuit breaker: who is admitted, where outcomes
//! go, and the transitions.
//!
//! ## Paths
//!
//! - *Closed admission*: one `Acquire` load of the state word (see
//!   `state.rs`). No clock, no lock, no allocation.
//! - *Closed record*: a success (not slow) while the count window holds
//!   only successes of the ticket's epoch changes nothing, and returns
//!   inline after the window's three loads, without the state word (late
//!   or not, the outcome would change nothing). Anything else is recorded
//!   out of line: one load of the state word (an outcome of an epoch that
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
    /// `slow_call_threshold` in nanoseconds (`u64::MAX` if it holds more):
    /// the composition's durations are nanoseconds, and comparing those
    /// spares each timed call a `Duration` built and compared.
    slow_nanos: u64,
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
            slow_nanos: u64::try_from(config.slow_call_threshold().as_nanos()).unwrap_or(u64::MAX),
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
        let slow = duration.is_some_and(|d| d > self.config.slow_call_threshold());
        self.record_as(ticket, outcome, slow, at);
    }

    /// [`record`](Self::record) of a call that took `took` nanoseconds
    /// (`None`: not measured), as the composition measures them. The same
    /// decision: a duration of `u64` nanoseconds is over the threshold
    /// exactly when that many nanoseconds are over `slow_nanos`.
    #[inline]
    pub(super) fn record_nanos(
        &self,
        ticket: Ticket,
        outcome: BreakerOutcome,
        took: Option<u64>,
        at: Option<u64>,
    ) {
        let slow = took.is_some_and(|took| took > self.slow_nanos);
        self.record_as(ticket, outcome, slow, at);
    }

    /// [`record`](Self::record) once the call is known `slow` or not: the
    /// steady-state test inline, the rest out of line.
    #[inline]
    fn record_as(&self, ticket: Ticket, outcome: BreakerOutcome, slow: bool, at: Option<u64>) {
        if outcome == BreakerOutcome::Success
            && !slow
            && let Kind::Closed(epoch) = ticket.kind()
            && self.window.holds_only_successes(epoch)
        {
            return;
        }
        self.record_out_of_line(ticket, outcome, slow, at);
    }

    /// [`record`](Self::record) past its steady-state test.
    #[inline(never)]
    fn record_out_of_line(
        &self,
        ticket: Ticket,
        outcome: BreakerOutcome,
        slow: bool,
        at: Option<u64>,
    ) {
        let failed = match outcome {
            BreakerOutcome::Success => false,
            BreakerOutcome::Failure => true,
            BreakerOutcome::Ignored => return self.cancel(ticket),
        };
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

    fn elapsed(&self) -> Duration {
        self.context
            .clock()
            .now()
            .saturating_duration_since(self.origin)
    }

    /// Nanoseconds since the breaker was created, on its clock.
    pub(super) fn nanos(&self) -> u64 {
        crate::clock::nanos(self.elapsed())
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

#[cfg(test)]
mod consistency {
    use super::*;

    impl Shared {
        /// Checks the invariants a quiescent breaker keeps.
        pub(in crate::circuit_breaker) fn assert_consistent(&self) {
            let _transitions = lock(&self.transitions);
            let word = Word(self.state.load(Acquire));
            if word.state() == CircuitState::HalfOpen {
                assert!(word.trials() <= self.config.permitted_calls_in_half_open());
            } else {
                assert_eq!(word.trials(), 0, "{:?}", word.state());
            }
            self.window.assert_consistent();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod fast_path_tests {
    //! The steady-state fast path of [`Shared::record`] against the path
    //! without it ([`Shared::record_out_of_line`], which loads the state
    //! word first) and a plain model of the last N outcomes.

    use std::collections::VecDeque;
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
    use crate::clock::ManualClock;
    use crate::events::{EventBus, EventStream};

    const WAIT: Duration = Duration::from_secs(30);

    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            // xorshift64*
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) % n
        }
    }

    fn breaker(config: CircuitBreakerConfig) -> (CircuitBreaker, ManualClock, EventStream) {
        let clock = ManualClock::new();
        let bus = EventBus::new(EventBus::MAX_CAPACITY);
        let events = bus.subscribe();
        let context = PolicyContext::new(Arc::new(clock.clone())).with_events(bus);
        let breaker = CircuitBreaker::with_context("fast-path", config, context);
        (breaker, clock, events)
    }

    fn kinds(events: &mut EventStream) -> Vec<CircuitBreakerEventKind> {
        let kind = |event| match event {
            Event::CircuitBreaker(event) => Some(event.kind),
            _ => None,
        };
        events.drain().filter_map(kind).collect()
    }

    fn word(breaker: &CircuitBreaker) -> Word {
        Word(breaker.shared.state.load(Acquire))
    }

    /// `Exceeded` as `verdict` decides it, for the model's outcomes.
    fn exceeded(model: &VecDeque<(bool, bool)>, minimum: u32) -> bool {
        let calls = model.len() as u32;
        let failed = model.iter().filter(|(failed, _)| *failed).count() as u32;
        let slow = model.iter().filter(|(_, slow)| *slow).count() as u32;
        let rate = |part: u32| part as f32 * 100.0 / calls as f32;
        calls > 0 && calls >= minimum && (rate(failed) >= 50.0 || rate(slow) >= 50.0)
    }

    #[test]
    fn the_fast_path_records_as_the_old_path_and_as_the_last_n_outcomes() {
        let (mut skipped_live, mut skipped_late) = (0, 0);
        for seed in 1..=400u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            let size = 1 + rng.below(5) as u32;
            let minimum = 1 + rng.below(6) as u32;
            let config = CircuitBreakerConfig::builder()
                .sliding_window_size(size)
                .minimum_calls(minimum)
                .permitted_calls_in_half_open(1 + rng.below(3) as u32)
                .failure_rate_threshold(50.0)
                .slow_call_rate_threshold(50.0)
                .slow_call_threshold(Duration::from_secs(1))
                .wait_in_open(WAIT)
                .build()
                .unwrap();
            let closed_minimum = config.closed_minimum();
            // `new` goes through the fast path, `old` around it, `ns`
            // through the composition's (durations in nanoseconds).
            let (new, new_clock, mut new_events) = breaker(config);
            let (old, old_clock, mut old_events) = breaker(config);
            let (ns, ns_clock, mut ns_events) = breaker(config);
            let mut tickets: Vec<Ticket> = Vec::new();
            let mut model: VecDeque<(bool, bool)> = VecDeque::new();
            for step in 0..300 {
                let before = word(&new);
                let op = rng.below(20);
                match op {
                    0..=5 => {
                        let (a, b) = (new.shared.try_acquire(), old.shared.try_acquire());
                        assert_eq!(a.is_ok(), b.is_ok(), "seed {seed} step {step}");
                        assert_eq!(a, ns.shared.try_acquire(), "seed {seed} step {step}");
                        if let (Ok(a), Ok(b)) = (a, b) {
                            assert_eq!(a, b, "seed {seed} step {step}");
                            tickets.push(a);
                        }
                    }
                    6..=15 if !tickets.is_empty() => {
                        // Mostly the newest permit; sometimes a late one.
                        let index = if rng.below(3) == 0 {
                            rng.below(tickets.len() as u64) as usize
                        } else {
                            tickets.len() - 1
                        };
                        let ticket = tickets.swap_remove(index);
                        let outcome = match rng.below(10) {
                            0..=6 => BreakerOutcome::Success,
                            7 | 8 => BreakerOutcome::Failure,
                            _ => BreakerOutcome::Ignored,
                        };
                        let duration = match rng.below(7) {
                            0 => None,
                            1 => Some(Duration::from_secs(2)),
                            2 => Some(Duration::from_secs(1)),
                            // Just over the threshold.
                            3 => Some(Duration::from_nanos(1_000_000_001)),
                            _ => Some(Duration::from_millis(3)),
                        };
                        let slow = duration.is_some_and(|d| d > Duration::from_secs(1));
                        if let Kind::Closed(epoch) = ticket.kind()
                            && outcome == BreakerOutcome::Success
                            && !slow
                            && new.shared.window.holds_only_successes(epoch)
                        {
                            if before.is(CircuitState::Closed, epoch) {
                                skipped_live += 1;
                            } else {
                                skipped_late += 1;
                            }
                        }
                        new.shared.record(ticket, outcome, duration, None);
                        old.shared.record_out_of_line(ticket, outcome, slow, None);
                        let took = duration.map(|d| u64::try_from(d.as_nanos()).unwrap());
                        ns.shared.record_nanos(ticket, outcome, took, None);
                        // The model: an outcome of the current closed state.
                        if let Kind::Closed(epoch) = ticket.kind()
                            && before.is(CircuitState::Closed, epoch)
                            && outcome != BreakerOutcome::Ignored
                        {
                            model.push_back((outcome == BreakerOutcome::Failure, slow));
                            if model.len() > size as usize {
                                model.pop_front();
                            }
                            let opened = word(&new).state() == CircuitState::Open;
                            assert_eq!(
                                opened,
                                exceeded(&model, closed_minimum),
                                "seed {seed} step {step}: {model:?}"
                            );
                        }
                    }
                    16 if !tickets.is_empty() => {
                        let ticket = tickets.swap_remove(rng.below(tickets.len() as u64) as usize);
                        new.shared.cancel(ticket);
                        old.shared.cancel(ticket);
                        ns.shared.cancel(ticket);
                    }
                    17 => {
                        let to = match rng.below(6) {
                            0 | 1 => CircuitState::Closed,
                            2 | 3 => CircuitState::Open,
                            4 => CircuitState::ForcedOpen,
                            _ => CircuitState::Disabled,
                        };
                        new.shared.transition(to);
                        old.shared.transition(to);
                        ns.shared.transition(to);
                    }
                    _ => {
                        new_clock.advance(WAIT);
                        old_clock.advance(WAIT);
                        ns_clock.advance(WAIT);
                    }
                }
                let after = word(&new);
                assert_eq!(after, word(&old), "seed {seed} step {step}");
                assert_eq!(after, word(&ns), "seed {seed} step {step}");
                let (metrics, old_metrics) = (new.metrics(), old.metrics());
                assert_eq!(metrics, old_metrics, "seed {seed} step {step}");
                assert_eq!(metrics, ns.metrics(), "seed {seed} step {step}");
                let new_kinds = kinds(&mut new_events);
                assert_eq!(new_kinds, kinds(&mut old_events));
                assert_eq!(new_kinds, kinds(&mut ns_events));
                if after.epoch() != before.epoch() && after.state() == CircuitState::Closed {
                    model.clear();
                }
                // What a closed (or just opened) breaker shows is the model.
                let shown = after.state() == CircuitState::Closed
                    || (before.state() == CircuitState::Closed
                        && after.state() == CircuitState::Open
                        && op <= 15);
                if shown {
                    let failed = model.iter().filter(|(failed, _)| *failed).count() as u32;
                    let slow = model.iter().filter(|(_, slow)| *slow).count() as u32;
                    assert_eq!(
                        (
                            metrics.buffered_calls,
                            metrics.failed_calls,
                            metrics.slow_calls
                        ),
                        (model.len() as u32, failed, slow),
                        "seed {seed} step {step}"
                    );
                }
                new.shared.assert_consistent();
                old.shared.assert_consistent();
                ns.shared.assert_consistent();
            }
        }
        // Both kinds of skip were exercised.
        assert!(
            skipped_live > 100 && skipped_late > 10,
            "{skipped_live} {skipped_late}"
        );
    }
}
