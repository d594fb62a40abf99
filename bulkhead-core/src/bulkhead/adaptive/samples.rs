//! # Implementation details
//!
//! The samples of the window being filled: what every release of an
//! adaptive bulkhead adds, lock-free, and what the call that closes the
//! window takes.
//!
//! ## Layout
//!
//! ```text
//! ok        | bound successes (32) | other successes (32) |
//! failed    | drops (32)           | errors (32)          |
//! sum_bound   Σ hold time of the bound successes, ns
//! sum_free    Σ hold time of the other successes, ns
//! window_end  when the window may close (a stamp of the bulkhead's timeline)
//! from, until only calls admitted from `from` and before `until` are
//!             sampled (during a probe; otherwise every call)
//! ```
//!
//! A success is *bound* if the bulkhead was full or nearly so when it left:
//! the slots held before its release, its own included, were within a
//! tenth of the limit (at least one slot) of the limit. That is read from
//! the value the semaphore's `fetch_sub` replaced, so it costs nothing.
//!
//! ## Cost and overflow
//!
//! A release adds to two words: a success to `ok` and to one of the sums,
//! an error or a drop to `failed` alone. The counts of one window are far
//! below 2^32 (a window lasts at most a second, or until enough calls
//! came); a hold time adds at most 2^40 ns (18 minutes), so the sums of a
//! window cannot overflow.
//!
//! ## Memory ordering
//!
//! Everything is `Relaxed`: the words are statistics, read by the closer
//! under the controller's lock. A sample racing the closer's swaps may
//! land its count in one window and its hold time in the next; each is
//! counted exactly once.

use crate::bulkhead::semaphore::Released;
use crate::loom::atomic::{AtomicU64, Ordering::Relaxed};

use super::CallOutcome;

const LOW: u64 = 1;
const HIGH: u64 = 1 << 32;
/// The longest hold time one sample adds.
const MAX_HOLD: u64 = 1 << 40;

/// The counts of a window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) bound: u64,
    pub(crate) free: u64,
    pub(crate) errors: u64,
    pub(crate) drops: u64,
}

impl Counts {
    fn of(ok: u64, failed: u64) -> Self {
        Counts {
            bound: ok >> 32,
            free: ok & u64::from(u32::MAX),
            errors: failed & u64::from(u32::MAX),
            drops: failed >> 32,
        }
    }

    /// Successes.
    pub(crate) fn ok(&self) -> u64 {
        self.bound + self.free
    }

    /// Every sample.
    pub(crate) fn all(&self) -> u64 {
        self.ok() + self.errors + self.drops
    }
}

/// A window's samples, taken by its closer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Taken {
    pub(crate) counts: Counts,
    pub(crate) sum_bound: u64,
    pub(crate) sum_free: u64,
}

#[derive(Debug)]
pub(crate) struct Samples {
    ok: AtomicU64,
    failed: AtomicU64,
    sum_bound: AtomicU64,
    sum_free: AtomicU64,
    window_end: AtomicU64,
    from: AtomicU64,
    until: AtomicU64,
}

impl Samples {
    /// Adds the sample of a call admitted at `started` that held its slot
    /// for `held` ns and ended with `outcome`; its release found
    /// `released`.
    #[inline]
    pub(crate) fn record(&self, started: u64, held: u64, outcome: CallOutcome, released: Released) {
        if started < self.from.load(Relaxed) || started >= self.until.load(Relaxed) {
            return;
        }
        match outcome {
            CallOutcome::Success => {
                let headroom = (released.max / 10).max(1);
                let bound = released.in_flight.saturating_add(headroom) >= released.max;
                let (count, sum) = if bound {
                    (HIGH, &self.sum_bound)
                } else {
                    (LOW, &self.sum_free)
                };
                self.ok.fetch_add(count, Relaxed);
                sum.fetch_add(held.min(MAX_HOLD), Relaxed);
            }
            CallOutcome::Error => {
                self.failed.fetch_add(LOW, Relaxed);
            }
            CallOutcome::Dropped => {
                self.failed.fetch_add(HIGH, Relaxed);
            }
        }
    }

    /// Whether the window may close at `now`.
    #[inline]
    pub(crate) fn due(&self, now: u64) -> bool {
        now >= self.window_end.load(Relaxed)
    }

    /// The counts so far, without taking them.
    pub(crate) fn peek(&self) -> Counts {
        Counts::of(self.ok.load(Relaxed), self.failed.load(Relaxed))
    }

    /// The mean hold time of the successes so far, without taking them.
    pub(crate) fn mean(&self) -> Option<f64> {
        let ok = Counts::of(self.ok.load(Relaxed), 0).ok();
        let sum = self.sum_bound.load(Relaxed) + self.sum_free.load(Relaxed);
        (ok > 0).then(|| sum as f64 / ok as f64)
    }

    /// Takes the window's samples, leaving an empty window.
    pub(crate) fn take(&self) -> Taken {
        let counts = Counts::of(self.ok.swap(0, Relaxed), self.failed.swap(0, Relaxed));
        Taken {
            counts,
            sum_bound: self.sum_bound.swap(0, Relaxed),
            sum_free: self.sum_free.swap(0, Relaxed),
        }
    }

    /// When the window may close next.
    pub(crate) fn close_at(&self, at: u64) {
        self.window_end.store(at, Relaxed);
    }

    /// Samples only calls admitted in `admitted` (`0..u64::MAX`: every
    /// call).
    pub(crate) fn sample_admitted(&self, admitted: std::ops::Range<u64>) {
        self.from.store(admitted.start, Relaxed);
        self.until.store(admitted.end, Relaxed);
    }
}

impl Default for Samples {
    fn default() -> Self {
        Samples {
            ok: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            sum_bound: AtomicU64::new(0),
            sum_free: AtomicU64::new(0),
            window_end: AtomicU64::new(0),
            from: AtomicU64::new(0),
            until: AtomicU64::new(u64::MAX),
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn released(in_flight: u32, max: u32) -> Released {
        Released { in_flight, max }
    }

    #[test]
    fn successes_near_the_limit_are_bound_and_the_rest_free() {
        let samples = Samples::default();
        samples.record(0, 100, CallOutcome::Success, released(20, 20));
        samples.record(0, 200, CallOutcome::Success, released(18, 20));
        samples.record(0, 300, CallOutcome::Success, released(17, 20));
        samples.record(0, 7, CallOutcome::Error, released(20, 20));
        samples.record(0, 7, CallOutcome::Dropped, released(20, 20));
        let taken = samples.take();
        assert_eq!(
            taken.counts,
            Counts {
                bound: 2,
                free: 1,
                errors: 1,
                drops: 1
            }
        );
        assert_eq!((taken.sum_bound, taken.sum_free), (300, 300));
        assert_eq!(samples.take(), Taken::default());
    }

    #[test]
    fn only_calls_admitted_in_the_span_are_sampled() {
        let samples = Samples::default();
        samples.sample_admitted(10..20);
        samples.record(9, 100, CallOutcome::Success, released(1, 1));
        samples.record(10, 100, CallOutcome::Dropped, released(1, 1));
        samples.record(20, 100, CallOutcome::Success, released(1, 1));
        assert_eq!(samples.peek().all(), 1);
    }

    #[test]
    fn a_hold_time_adds_at_most_its_cap() {
        let samples = Samples::default();
        samples.record(0, u64::MAX, CallOutcome::Success, released(1, 100));
        assert_eq!(samples.take().sum_free, MAX_HOLD);
    }
}
