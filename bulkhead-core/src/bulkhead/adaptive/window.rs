//! # Implementation details
//!
//! The samples of the window being filled: what every release of an
//! adaptive bulkhead adds, lock-free, and what the call that closes the
//! window takes.
//!
//! ## Layout
//!
//! ```text
//! bound       | count (12) | Σ hold time, ns (52) |  successes that were bound
//! free        | count (12) | Σ hold time, ns (52) |  the other successes
//! failed      | drops (32) | errors (32)          |
//! spilled     (under a lock) what releases moved out of the three words
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
//! ## Cost
//!
//! A release makes one atomic addition: a success adds its count and its
//! hold time to its class's word at once, an error or a drop adds to
//! `failed`. Nothing else is written unless a counter reached half its
//! room (below).
//!
//! ## Overflow
//!
//! A hold time is the difference of two recent stamps of the bulkhead's
//! timeline: nanoseconds, to within the clock's resolution (at most 5 ms,
//! about 1 ms, on the system clock; exact on a manual clock). One sample
//! adds at most `MAX_HOLD`, 2^40 ns (18 minutes): a longer hold counts
//! as that long.
//!
//! Nothing bounds the calls of a window but time: the controller closes a
//! steady window once it lasted its length (at most `max_window`) and has
//! `min_samples`, or discards it at `max_window`; a probe waits up to four
//! `max_window`s for its samples and up to four more for its slowest
//! calls; `max_window` is the user's; and a window closes only when a
//! release finds it due. One thread releases some 50 million calls a
//! second (the whole call takes 15 to 20 ns), so a one-second window can
//! hold more than 2^25 calls of a class, and their hold times more than
//! 2^52 ns: no split of one word holds both for a window.
//!
//! So a word is *spilled* before it fills: a release whose addition left a
//! success count at 2^11 or more (the sign bit of its word: one test), or
//! an error or drop count at 2^31 or more, moves all three words into
//! `spilled`, swapping each with zero, and adds them there under the lock.
//! That happens once per 2048 successes of a class (every 40 µs or so on
//! a thread calling without pause), an amortised fraction of an
//! instruction per call. A success word's sum needs no test of its own:
//! it is at most its count times 2^40 ns, below 2^52 while the count is
//! below 2^12. Between the addition that reaches half and the swap, only
//! additions already made land above half, and each of their threads
//! spills in turn: a count overflows only if 2^11 of them (or 2^31 errors
//! or drops) pile up before a swap, 2048 threads paused inside a release
//! of the same bulkhead at once.
//!
//! ## Memory ordering
//!
//! The words are `Relaxed`: they are statistics, read by the closer under
//! the controller's lock, and every access is a read-modify-write of one
//! word (or a load), so each sample's count and hold time, added together,
//! are taken together by exactly one swap. A sample (or a spilled batch,
//! on its way to `spilled`) racing the closer lands in this window or in
//! the next: each is counted exactly once, its hold time with its count.

use crate::bulkhead::semaphore::Released;
use crate::loom::atomic::{AtomicU64, Ordering::Relaxed};
use crate::loom::{Mutex, lock};

use super::CallOutcome;

/// Bits of a success word below its count: the sum of its hold times.
const SUM_BITS: u32 = 52;
/// Set in a success word once its count reached 2^11, half its room.
const SUCCESS_HALF: u64 = 1 << 63;
/// Bits of `failed` below the drops: the errors.
const ERROR_BITS: u32 = 32;
/// Set in `failed` once its drops or its errors reached 2^31.
const FAILED_HALF: u64 = 1 << 63 | 1 << 31;
/// The longest hold time one sample adds.
const MAX_HOLD: u64 = 1 << 40;

/// A word holding two counters, the upper one above `SHIFT` bits.
#[derive(Debug)]
struct Packed<const SHIFT: u32>(AtomicU64);

impl<const SHIFT: u32> Packed<SHIFT> {
    const LOW: u64 = (1 << SHIFT) - 1;

    /// `high` and `low` as one addition.
    #[inline]
    const fn delta(high: u64, low: u64) -> u64 {
        high << SHIFT | low
    }

    fn split(word: u64) -> (u64, u64) {
        (word >> SHIFT, word & Self::LOW)
    }

    /// Adds `delta`; whether the sum has a bit of `half` set (a counter
    /// reached half its room).
    #[inline]
    fn add(&self, delta: u64, half: u64) -> bool {
        let after = self.0.fetch_add(delta, Relaxed).wrapping_add(delta);
        after & half != 0
    }

    fn peek(&self) -> (u64, u64) {
        Self::split(self.0.load(Relaxed))
    }

    fn take(&self) -> (u64, u64) {
        Self::split(self.0.swap(0, Relaxed))
    }
}

impl<const SHIFT: u32> Default for Packed<SHIFT> {
    fn default() -> Self {
        Packed(AtomicU64::new(0))
    }
}

/// The counts of a window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) bound: u64,
    pub(crate) free: u64,
    pub(crate) errors: u64,
    pub(crate) drops: u64,
}

impl Counts {
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

impl Taken {
    /// The samples of three words' values (each `(high, low)`).
    fn of(bound: (u64, u64), free: (u64, u64), failed: (u64, u64)) -> Self {
        Taken {
            counts: Counts {
                bound: bound.0,
                free: free.0,
                errors: failed.1,
                drops: failed.0,
            },
            sum_bound: bound.1,
            sum_free: free.1,
        }
    }

    fn add(&mut self, other: &Taken) {
        self.counts.bound += other.counts.bound;
        self.counts.free += other.counts.free;
        self.counts.errors += other.counts.errors;
        self.counts.drops += other.counts.drops;
        self.sum_bound += other.sum_bound;
        self.sum_free += other.sum_free;
    }
}

#[derive(Debug)]
pub(crate) struct Samples {
    bound: Packed<SUM_BITS>,
    free: Packed<SUM_BITS>,
    failed: Packed<ERROR_BITS>,
    spilled: Mutex<Taken>,
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
        let half = match outcome {
            CallOutcome::Success => {
                let headroom = (released.max / 10).max(1);
                let bound = released.in_flight.saturating_add(headroom) >= released.max;
                let word = if bound { &self.bound } else { &self.free };
                word.add(
                    Packed::<SUM_BITS>::delta(1, held.min(MAX_HOLD)),
                    SUCCESS_HALF,
                )
            }
            CallOutcome::Error => self
                .failed
                .add(Packed::<ERROR_BITS>::delta(0, 1), FAILED_HALF),
            CallOutcome::Dropped => self
                .failed
                .add(Packed::<ERROR_BITS>::delta(1, 0), FAILED_HALF),
        };
        if half {
            self.spill();
        }
    }

    /// Moves the words into `spilled`, before a counter overflows.
    #[cold]
    #[inline(never)]
    fn spill(&self) {
        let words = self.take_words();
        lock(&self.spilled).add(&words);
    }

    /// Whether the window may close at `now`.
    #[inline]
    pub(crate) fn due(&self, now: u64) -> bool {
        now >= self.window_end.load(Relaxed)
    }

    /// The samples so far, without taking them.
    fn peek_all(&self) -> Taken {
        let mut all = Taken::of(self.bound.peek(), self.free.peek(), self.failed.peek());
        all.add(&lock(&self.spilled));
        all
    }

    /// The counts so far, without taking them.
    pub(crate) fn peek(&self) -> Counts {
        self.peek_all().counts
    }

    /// The mean hold time of the successes so far, without taking them.
    pub(crate) fn mean(&self) -> Option<f64> {
        let all = self.peek_all();
        let ok = all.counts.ok();
        (ok > 0).then(|| (all.sum_bound + all.sum_free) as f64 / ok as f64)
    }

    fn take_words(&self) -> Taken {
        Taken::of(self.bound.take(), self.free.take(), self.failed.take())
    }

    /// Takes the window's samples, leaving an empty window.
    pub(crate) fn take(&self) -> Taken {
        let mut taken = self.take_words();
        taken.add(&std::mem::take(&mut *lock(&self.spilled)));
        taken
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

    /// Samples whose words already hold `bound` bound successes that held
    /// their slots for `sum` ns in all (a test's way to a word about to
    /// spill).
    #[cfg(all(test, loom))]
    pub(crate) fn holding_bound(bound: u64, sum: u64) -> Self {
        Samples {
            bound: Packed(AtomicU64::new(Packed::<SUM_BITS>::delta(bound, sum))),
            ..Samples::default()
        }
    }
}

impl Default for Samples {
    fn default() -> Self {
        Samples {
            bound: Packed::default(),
            free: Packed::default(),
            failed: Packed::default(),
            spilled: Mutex::new(Taken::default()),
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

    #[test]
    fn full_words_spill_and_every_sample_is_taken_once() {
        let samples = Samples::default();
        let n = 3 * (1 << 12) + 5;
        for i in 0..n {
            samples.record(0, i, CallOutcome::Success, released(20, 20));
            samples.record(0, 2 * i, CallOutcome::Success, released(1, 20));
        }
        let spilled = *lock(&samples.spilled);
        assert!(spilled.counts.bound > 0, "the words spilled");
        assert_eq!(samples.peek().ok(), 2 * n);
        let taken = samples.take();
        assert_eq!((taken.counts.bound, taken.counts.free), (n, n));
        let sum = n * (n - 1) / 2;
        assert_eq!((taken.sum_bound, taken.sum_free), (sum, 2 * sum));
        assert_eq!(samples.take(), Taken::default());
    }

    #[test]
    fn a_counter_at_half_its_room_asks_for_a_spill() {
        type Failed = Packed<ERROR_BITS>;
        let errors = Failed::default();
        assert!(!errors.add(Failed::delta(0, (1 << 31) - 1), FAILED_HALF));
        assert!(errors.add(Failed::delta(0, 1), FAILED_HALF), "errors");
        let drops = Failed::default();
        assert!(!drops.add(Failed::delta((1 << 31) - 1, 0), FAILED_HALF));
        assert!(drops.add(Failed::delta(1, 0), FAILED_HALF), "drops");
        // The longest holds: the sum stays in its bits while the count
        // reaches half its room.
        type Success = Packed<SUM_BITS>;
        let successes = Success::default();
        let longest = Success::delta(1, MAX_HOLD);
        for _ in 0..(1 << 11) - 1 {
            assert!(!successes.add(longest, SUCCESS_HALF));
        }
        assert!(successes.add(longest, SUCCESS_HALF), "successes");
        assert_eq!(successes.take(), (1 << 11, (1 << 11) * MAX_HOLD));
    }
}
