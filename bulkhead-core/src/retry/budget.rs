//! # Implementation details
//!
//! A retry budget: over a sliding window of `budget_window`, the retries
//! (and hedges) of one retry instance stay within `budget_ratio` times its
//! first attempts plus `budget_min_per_second` times the window's seconds
//! (tower's `TpsBudget` rule), shared by every caller of the instance,
//! without a lock or an allocation.
//!
//! The window is cut in [`SLOTS`] tenths. Time is counted in *ticks* of a
//! tenth since the epoch of the budget's [`Timeline`], and each tenth keeps
//! two counters, one `AtomicU64` each (first attempts, and retries): the
//! tick it counts for in the high 32 bits, the count in the low 32. The
//! counter of tick `t` lives at index `t % SLOTS`, and holds a count of
//! the window only while its tick is among the last `SLOTS` ticks (or
//! just after them: a reading older than another caller's); a counter
//! found holding any other tick is reset by compare-exchange, so the
//! window slides without anyone sweeping it. Ticks wrap at 2^32 in the
//! word: a counter left alone for 2^31 tenths or more still reads as old
//! (see [`holds`]).
//!
//! - A first attempt adds one to its tenth's counter: a load and a
//!   `fetch_add` (a compare-exchange at the first one of a tenth).
//! - A retry sums the window (`2 * SLOTS` loads) and takes one from the
//!   budget by compare-exchange on its tenth's counter of retries,
//!   re-checking the sum of retries on every attempt of the exchange: two
//!   retries racing for the last unit of the budget cannot both take it.
//!
//! The window moves in tenths: the rule holds over the last ten tenths at
//! the moment of each retry, and counts a first attempt that races with
//! the turn of a tenth in either of the two (the only imprecision).
//!
//! # Memory ordering
//!
//! `Relaxed` throughout: the counters are independent statistics, each
//! read-modify-write is atomic on its own word, and no other memory is
//! published through them. The limit is enforced by the compare-exchange
//! on the retries' counter, which orders the retries of a tenth among
//! themselves.

use std::fmt;
use std::time::Duration;

use crate::clock::Timeline;
use crate::loom::atomic::{AtomicU64, Ordering::Relaxed};

/// Tenths of the window.
pub(crate) const SLOTS: usize = 10;

/// The low 32 bits of a counter: its count.
const COUNT: u64 = u32::MAX as u64;

/// A retry budget; see the module docs.
pub(crate) struct Budget {
    timeline: Timeline,
    /// A tenth of the window, in nanoseconds (at least 1).
    tick: u64,
    ratio: f64,
    /// `budget_min_per_second` times the window's seconds.
    reserve: f64,
    first_attempts: [AtomicU64; SLOTS],
    retries: [AtomicU64; SLOTS],
}

/// The budget's counts over the current window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetState {
    /// First attempts made in the window.
    pub first_attempts: u64,
    /// Retries and hedges made in the window.
    pub retries: u64,
    /// Retries and hedges the budget allows now (`budget_ratio` times the
    /// first attempts plus the minimum, less the retries made), at least 0.
    pub available: u64,
}

impl Budget {
    pub(crate) fn new(
        timeline: Timeline,
        ratio: f64,
        min_per_second: u32,
        window: Duration,
    ) -> Self {
        let window_nanos = u64::try_from(window.as_nanos()).unwrap_or(u64::MAX);
        Budget {
            timeline,
            tick: (window_nanos / SLOTS as u64).max(1),
            ratio,
            reserve: f64::from(min_per_second) * window.as_secs_f64(),
            first_attempts: std::array::from_fn(|_| AtomicU64::new(0)),
            retries: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// The tick of now.
    #[inline]
    fn now(&self) -> u64 {
        self.timeline.recent() / self.tick
    }

    /// Counts a first attempt.
    #[inline]
    pub(crate) fn deposit(&self) {
        let tick = self.now();
        let counter = &self.first_attempts[index(tick)];
        let current = counter.load(Relaxed);
        if holds(current, tick) {
            // Near 2^32 first attempts in a tenth, stop counting rather
            // than carry into the tick.
            if current & COUNT != COUNT {
                counter.fetch_add(1, Relaxed);
            }
        } else {
            self.turn(counter, current, tick);
        }
    }

    /// Starts the tenth `tick` on `counter` (found holding an older one)
    /// with a count of one, or counts in it if another caller started it.
    #[cold]
    fn turn(&self, counter: &AtomicU64, mut current: u64, tick: u64) {
        loop {
            if holds(current, tick) {
                counter.fetch_add(1, Relaxed);
                return;
            }
            match counter.compare_exchange_weak(current, start(tick, 1), Relaxed, Relaxed) {
                Ok(_) => return,
                Err(now) => current = now,
            }
        }
    }

    /// Takes one retry from the budget, if it has room; whether it had.
    pub(crate) fn withdraw(&self) -> bool {
        let tick = self.now();
        let first_attempts = sum(&self.first_attempts, tick, None);
        let allowed = self.ratio * first_attempts as f64 + self.reserve;
        let here = index(tick);
        let counter = &self.retries[here];
        let mut current = counter.load(Relaxed);
        loop {
            let others = sum(&self.retries, tick, Some(here));
            let (count, next) = if holds(current, tick) {
                (current & COUNT, current + 1)
            } else {
                (0, start(tick, 1))
            };
            if (others + count + 1) as f64 > allowed || count == COUNT {
                return false;
            }
            match counter.compare_exchange_weak(current, next, Relaxed, Relaxed) {
                Ok(_) => return true,
                Err(now) => current = now,
            }
        }
    }

    /// The counts of the window now.
    pub(crate) fn state(&self) -> BudgetState {
        let tick = self.now();
        let first_attempts = sum(&self.first_attempts, tick, None);
        let retries = sum(&self.retries, tick, None);
        let allowed = self.ratio * first_attempts as f64 + self.reserve;
        BudgetState {
            first_attempts,
            retries,
            // Saturating: a float cast never wraps.
            available: (allowed - retries as f64).max(0.0) as u64,
        }
    }
}

impl fmt::Debug for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Budget")
            .field("ratio", &self.ratio)
            .field("reserve", &self.reserve)
            .field("state", &self.state())
            .finish()
    }
}

/// Where the counter of `tick` lives.
#[inline]
fn index(tick: u64) -> usize {
    (tick % SLOTS as u64) as usize
}

/// A counter of `tick` holding `count`.
#[inline]
fn start(tick: u64, count: u64) -> u64 {
    (tick << 32) | count
}

/// The tick a counter's value counts for (its low 32 bits).
#[inline]
fn tick_of(value: u64) -> u32 {
    (value >> 32) as u32
}

/// Whether a counter holding `value` counts for `tick` or a tenth just
/// after it (a caller whose reading is older than another's counts in the
/// newer tenth).
///
/// Ticks are kept in 32 bits: "just after" is less than [`SLOTS`] on, so
/// that a counter left alone for 2^31 tenths or more (25 days for a 10 ms
/// window) is not read as newer. It would be misread only if left alone
/// for a multiple of 2^32 tenths to within `SLOTS` of them.
#[inline]
fn holds(value: u64, tick: u64) -> bool {
    tick_of(value).wrapping_sub(tick as u32) < SLOTS as u32
}

/// The counts of `counters` in the window ending at `tick`, but for the
/// counter at `except`.
fn sum(counters: &[AtomicU64; SLOTS], tick: u64, except: Option<usize>) -> u64 {
    counters
        .iter()
        .enumerate()
        .filter(|(i, _)| Some(*i) != except)
        .map(|(_, counter)| counter.load(Relaxed))
        // In the window, or from a reading just newer than ours.
        .filter(|value| in_window(*value, tick))
        .map(|value| value & COUNT)
        .sum()
}

/// Whether a counter holding `value` counts in the window ending at
/// `tick`: one of its last [`SLOTS`] tenths, or a tenth just after it (see
/// [`holds`]).
#[inline]
fn in_window(value: u64, tick: u64) -> bool {
    let age = (tick as u32).wrapping_sub(tick_of(value));
    age < SLOTS as u32 || holds(value, tick)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::clock::ManualClock;

    const SECOND: Duration = Duration::from_secs(1);

    fn budget(ratio: f64, min_per_second: u32) -> (Budget, ManualClock) {
        let clock = ManualClock::new();
        let timeline = Timeline::new(Arc::new(clock.clone()));
        let budget = Budget::new(timeline, ratio, min_per_second, 10 * SECOND);
        (budget, clock)
    }

    fn withdrawn(budget: &Budget, tries: u32) -> u32 {
        (0..tries).filter(|_| budget.withdraw()).count() as u32
    }

    #[test]
    fn the_minimum_alone_allows_its_rate_times_the_window() {
        let (budget, _clock) = budget(0.0, 10);
        assert_eq!(withdrawn(&budget, 1000), 100);
        let state = budget.state();
        assert_eq!((state.retries, state.available), (100, 0));
    }

    #[test]
    fn first_attempts_earn_their_ratio() {
        let (budget, _clock) = budget(0.2, 0);
        for _ in 0..1000 {
            budget.deposit();
        }
        assert_eq!(withdrawn(&budget, 1000), 200);
        assert_eq!(
            budget.state(),
            BudgetState {
                first_attempts: 1000,
                retries: 200,
                available: 0
            }
        );
    }

    #[test]
    fn a_tenth_leaves_the_window_once_the_window_has_passed_it() {
        let (budget, clock) = budget(1.0, 0);
        for _ in 0..50 {
            budget.deposit();
        }
        assert_eq!(withdrawn(&budget, 100), 50);
        clock.advance(SECOND);
        for _ in 0..10 {
            budget.deposit();
        }
        assert_eq!(withdrawn(&budget, 100), 10, "the first tenth is still in");
        // Nine seconds later the first tenth is out: 10 deposits and 10
        // retries are left, and nothing is available.
        clock.advance(9 * SECOND);
        assert_eq!(budget.state().first_attempts, 10);
        assert_eq!(budget.state().retries, 10);
        assert_eq!(withdrawn(&budget, 100), 0);
        clock.advance(SECOND);
        assert_eq!(
            budget.state(),
            BudgetState {
                first_attempts: 0,
                retries: 0,
                available: 0
            }
        );
    }

    #[test]
    fn a_counter_left_for_a_whole_turn_of_the_window_starts_again() {
        let (budget, clock) = budget(1.0, 0);
        for _ in 0..5 {
            budget.deposit();
        }
        clock.advance(10 * SECOND);
        budget.deposit();
        assert_eq!(budget.state().first_attempts, 1, "the old count was reset");
        assert_eq!(withdrawn(&budget, 5), 1);
    }

    #[test]
    fn counters_left_alone_for_billions_of_tenths_are_old_not_new() {
        // A 10 ms window: 2^31 tenths are 25 days, 2^32 about 50.
        let clock = ManualClock::new();
        let timeline = Timeline::new(Arc::new(clock.clone()));
        let budget = Budget::new(timeline, 1.0, 0, Duration::from_millis(10));
        for _ in 0..1000 {
            budget.deposit();
        }
        assert_eq!(withdrawn(&budget, 5), 5);
        let day = 24 * 3600 * SECOND;
        for days in [30, 25, 60, 100] {
            clock.advance(days * day);
            let state = budget.state();
            assert_eq!(
                (state.first_attempts, state.retries),
                (0, 0),
                "{days} days on"
            );
            assert_eq!(withdrawn(&budget, 10), 0, "nothing earned: no retry");
            budget.deposit();
            assert_eq!(budget.state().first_attempts, 1, "counted afresh");
            assert_eq!(withdrawn(&budget, 10), 1);
        }
    }

    #[test]
    fn retries_racing_for_the_last_units_take_no_more_than_the_budget() {
        let (budget, _clock) = budget(0.5, 0);
        for _ in 0..10_000 {
            budget.deposit();
        }
        let budget = Arc::new(budget);
        let taken: u32 = (0..8)
            .map(|_| {
                let budget = Arc::clone(&budget);
                std::thread::spawn(move || withdrawn(&budget, 2000))
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|thread| thread.join().unwrap())
            .sum();
        assert_eq!(taken, 5000);
    }

    #[test]
    fn a_tiny_window_still_has_ticks() {
        let clock = ManualClock::new();
        let timeline = Timeline::new(Arc::new(clock.clone()));
        let budget = Budget::new(timeline, 1.0, 0, Duration::from_nanos(3));
        budget.deposit();
        assert!(budget.withdraw());
        clock.advance(Duration::from_nanos(20));
        assert!(!budget.withdraw());
    }
}

/// Model checks of the budget's races. Run with `RUSTFLAGS="--cfg loom"
/// cargo test -p bulkhead-core --release --lib --target-dir target/loom
/// budget`.
#[cfg(all(test, loom))]
mod loom_tests {
    use std::sync::Arc;

    use loom::thread;

    use super::*;
    use crate::clock::ManualClock;

    fn budget(clock: &ManualClock, ratio: f64) -> Arc<Budget> {
        let timeline = Timeline::new(Arc::new(clock.clone()));
        Arc::new(Budget::new(timeline, ratio, 0, Duration::from_secs(10)))
    }

    #[test]
    fn two_retries_racing_for_the_last_unit_take_it_once() {
        loom::model(|| {
            let clock = ManualClock::new();
            let budget = budget(&clock, 1.0);
            budget.deposit();
            let other = {
                let budget = Arc::clone(&budget);
                thread::spawn(move || budget.withdraw())
            };
            let here = budget.withdraw();
            let there = other.join().unwrap();
            assert!(here ^ there, "exactly one retry: {here} {there}");
        });
    }

    #[test]
    fn first_attempts_racing_with_the_turn_of_a_tenth_are_all_counted() {
        loom::model(|| {
            let clock = ManualClock::new();
            let budget = budget(&clock, 1.0);
            budget.deposit();
            // The next time the index of tick 0 comes round, its old count
            // must be replaced, not added to.
            clock.advance(Duration::from_secs(10));
            let other = {
                let budget = Arc::clone(&budget);
                thread::spawn(move || budget.deposit())
            };
            budget.deposit();
            other.join().unwrap();
            assert_eq!(budget.state().first_attempts, 2);
        });
    }
}
