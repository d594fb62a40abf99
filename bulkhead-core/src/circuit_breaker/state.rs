//! # Implementation details
//!
//! The state word of a circuit breaker: which state it is in, since which
//! transition, and how many half-open trial calls are left, in one 64-bit
//! atomic so that admitting a call is one load (closed) or one
//! compare-exchange (half-open).
//!
//! ```text
//!  63                 35 34     32 31                      0
//! +---------------------+---------+-------------------------+
//! | epoch               | state   | trial calls left        |
//! +---------------------+---------+-------------------------+
//! ```
//!
//! - *epoch* counts transitions, modulo 2^29. A permit remembers the epoch it
//!   was admitted in; an outcome recorded after the breaker moved on belongs
//!   to a state that no longer exists and is dropped (a closed-state call
//!   that ends after the breaker opened and closed again does not count in
//!   the new window, and a trial call of an old half-open state is not a
//!   trial of the new one). The windows are tagged with it too (see
//!   `window/count.rs` and `window/time.rs`), so that an outcome that passed
//!   this check just before a reset counts nowhere after it.
//! - *state* is a [`CircuitState`].
//! - *trial calls left* is only non-zero in half-open: taking a trial is a
//!   compare-exchange decrementing it, giving one back (a cancelled or
//!   ignored trial) one incrementing it, both refused if the epoch changed.
//!
//! Only transitions change the epoch or the state, and every transition
//! stores a whole new word with the breaker's mutex held.

use crate::events::CircuitState;

const TRIALS_MASK: u64 = u32::MAX as u64;
const STATE_SHIFT: u32 = 32;
const STATE_MASK: u64 = 0b111;
const EPOCH_SHIFT: u32 = 35;
/// Epochs wrap at 2^29: they fit, with three flag bits, in a window slot.
pub(super) const EPOCH_MASK: u32 = (1 << 29) - 1;

/// One value of the state word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Word(pub(super) u64);

impl Word {
    pub(super) fn new(epoch: u32, state: CircuitState, trials: u32) -> Word {
        let code = match state {
            CircuitState::Closed => 0,
            CircuitState::Open => 1,
            CircuitState::HalfOpen => 2,
            CircuitState::ForcedOpen => 3,
            CircuitState::Disabled => 4,
        };
        Word(u64::from(epoch & EPOCH_MASK) << EPOCH_SHIFT | code << STATE_SHIFT | u64::from(trials))
    }

    #[inline]
    pub(super) fn epoch(self) -> u32 {
        (self.0 >> EPOCH_SHIFT) as u32
    }

    #[inline]
    pub(super) fn state(self) -> CircuitState {
        match (self.0 >> STATE_SHIFT) & STATE_MASK {
            0 => CircuitState::Closed,
            1 => CircuitState::Open,
            2 => CircuitState::HalfOpen,
            3 => CircuitState::ForcedOpen,
            _ => CircuitState::Disabled,
        }
    }

    #[inline]
    pub(super) fn is_closed(self) -> bool {
        (self.0 >> STATE_SHIFT) & STATE_MASK == 0
    }

    /// Half-open trial calls left (0 in every other state).
    pub(super) fn trials(self) -> u32 {
        (self.0 & TRIALS_MASK) as u32
    }

    /// The same word with `trials` trial calls left.
    pub(super) fn with_trials(self, trials: u32) -> Word {
        Word(self.0 & !TRIALS_MASK | u64::from(trials))
    }

    /// The epoch the next transition gives the breaker.
    pub(super) fn next_epoch(self) -> u32 {
        self.epoch().wrapping_add(1) & EPOCH_MASK
    }

    /// Whether `self` is the state `state` of epoch `epoch`, whatever the
    /// trials left.
    #[inline]
    pub(super) fn is(self, state: CircuitState, epoch: u32) -> bool {
        self.state() == state && self.epoch() == epoch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_without_overlapping() {
        let states = [
            CircuitState::Closed,
            CircuitState::Open,
            CircuitState::HalfOpen,
            CircuitState::ForcedOpen,
            CircuitState::Disabled,
        ];
        for state in states {
            for (epoch, trials) in [(0, 0), (EPOCH_MASK, u32::MAX), (12345, 7)] {
                let word = Word::new(epoch, state, trials);
                assert_eq!(word.state(), state);
                assert_eq!(word.epoch(), epoch);
                assert_eq!(word.trials(), trials);
                assert_eq!(word.is_closed(), state == CircuitState::Closed);
                assert!(word.is(state, epoch));
                assert_eq!(word.with_trials(3).trials(), 3);
                assert!(word.with_trials(3).is(state, epoch));
            }
        }
    }

    #[test]
    fn epochs_wrap_at_29_bits() {
        let last = Word::new(EPOCH_MASK, CircuitState::Closed, 0);
        assert_eq!(last.next_epoch(), 0);
        assert_eq!(
            Word::new(EPOCH_MASK + 2, CircuitState::Closed, 0).epoch(),
            1
        );
    }
}
