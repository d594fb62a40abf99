//! # Implementation details
//!
//! How a circuit breaker changes state.
//!
//! Every transition happens with the breaker's mutex held, which orders the
//! transitions and the events they publish: subscribers see them in the
//! order they happened. A transition
//!
//! 1. computes the new state's data: an empty window (closed), the deadline
//!    of the wait (open), the trial counts (half-open), and what metrics
//!    show while open (the window or trials that opened it);
//! 2. swaps in the new state word, with the next epoch and, for half-open,
//!    `permitted_calls_in_half_open` trials (`Release`: a caller that loads
//!    it sees step 1);
//! 3. publishes `StateTransition` unless the state stays the same.
//!
//! Transitions the breaker makes itself ([`Shared::transition_from`]) first
//! check that the state word is still exactly the one they decided on: of
//! two callers that find the wait over, or two failures that both find the
//! threshold reached, one moves the breaker and the other does nothing.

use super::machine::Shared;
use super::state::Word;
use super::window::Counts;
use crate::events::{CircuitBreakerEventKind, CircuitState};
use crate::loom::atomic::Ordering::*;
use crate::loom::lock;

/// The data only transitions and the half-open state touch, under the
/// breaker's mutex.
#[derive(Debug, Default)]
pub(super) struct Transitions {
    /// The outcomes of the current half-open state's trial calls.
    pub(super) trials: Counts,
    /// What metrics show while open, forced open or disabled, with its
    /// minimum number of calls.
    pub(super) frozen: (Counts, u32),
}

impl Shared {
    /// Moves the breaker to `to`, whatever its state: an operator's action.
    /// A breaker already in `to` starts that state afresh (an empty window,
    /// a new wait) without an event, as in Resilience4j.
    pub(super) fn transition(&self, to: CircuitState) {
        let mut transitions = lock(&self.transitions);
        let word = Word(self.state.load(Acquire));
        self.transition_locked(&mut transitions, word, to);
    }

    /// Moves the breaker from exactly `expected` to `to`; does nothing if
    /// someone else moved it first.
    pub(super) fn transition_from(&self, expected: Word, to: CircuitState) {
        let mut transitions = lock(&self.transitions);
        let word = Word(self.state.load(Acquire));
        if word == expected {
            self.transition_locked(&mut transitions, word, to);
        }
    }

    /// Moves the breaker from `from`, the current word, to `to`; call with
    /// the mutex held, `transitions` being the data it guards.
    pub(super) fn transition_locked(
        &self,
        transitions: &mut Transitions,
        from: Word,
        to: CircuitState,
    ) {
        let epoch = from.next_epoch();
        let mut trials = 0;
        match to {
            CircuitState::Closed => self.window.reset(epoch),
            CircuitState::Open => {
                transitions.frozen = match from.state() {
                    CircuitState::Closed => (
                        self.window.counts(from.epoch(), &mut || self.second()),
                        self.config.closed_minimum(),
                    ),
                    CircuitState::HalfOpen => (transitions.trials, self.config.half_open_minimum()),
                    CircuitState::Open => transitions.frozen,
                    _ => Default::default(),
                };
                let wait = u64::try_from(self.config.wait_in_open().as_nanos()).unwrap_or(u64::MAX);
                let until = self.nanos().saturating_add(wait);
                self.open_until.store(until, Relaxed);
            }
            CircuitState::HalfOpen => {
                transitions.trials = Counts::default();
                trials = self.config.permitted_calls_in_half_open();
            }
            _ => transitions.frozen = Default::default(),
        }
        // A swap, not a store: the trial exchanges must not succeed on the
        // word it replaces. (Any read-modify-write reads the latest value,
        // but loom 0.7 may let one read past a plain store; see
        // `crate::loom`.)
        self.state.swap(Word::new(epoch, to, trials).0, Release);
        let from = from.state();
        if from != to {
            self.publish(CircuitBreakerEventKind::StateTransition { from, to });
        }
    }
}
