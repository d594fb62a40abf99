//! # Implementation details
//!
//! The samples of the window being filled: what every release of an
//! adaptive bulkhead adds, lock-free, and what the call that closes the
//! window takes.
//!
//! ## Layout
//!
//! ```text
//! bound       [count; BUCKETS]  successes that were bound, by hold time
//! free        [count; BUCKETS]  the other successes, by hold time
//! errors      count
//! drops       count
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
//! The hold times of successes are kept as log-linear histograms (HDR
//! histograms' layout): below 32 ns one bucket per nanosecond, then 32
//! buckets per power of two, so a bucket is at most 1/32 of its lower
//! bound wide (1,153 buckets up to `MAX_HOLD`, 9 KiB per class). The window is summarised by percentiles of them (its
//! median, and how far its quartiles spread), which a heavy tail cannot
//! drag the way it drags a mean: Envoy's adaptive concurrency filter
//! summarises its windows the same way. A mean (Little's law needs one)
//! is read from the buckets' midpoints, within 1/64.
//!
//! ## Cost
//!
//! A release makes one atomic addition: a success adds one to its
//! bucket, an error or a drop to its counter. Every counter is a `u64`
//! of its own, so none can overflow in any window a clock can measure,
//! and nothing is ever moved aside.
//!
//! ## Hold times
//!
//! A hold time is the difference of two recent stamps of the bulkhead's
//! timeline: nanoseconds, to within the clock's resolution (at most 5 ms,
//! about 1 ms, on the system clock; exact on a manual clock). One sample
//! counts at most `MAX_HOLD`, 2^40 ns (18 minutes): a longer hold counts
//! as that long.
//!
//! ## Memory ordering
//!
//! The counters are `Relaxed`: they are statistics, read by the closer
//! under the controller's lock, and every access is a read-modify-write of
//! one counter (or a load), so each sample lands in exactly one window: a
//! sample racing the closer's swaps is in this window or in the next,
//! counted exactly once, its hold time with it (they are one counter).

use crate::bulkhead::semaphore::Released;
use crate::loom::atomic::{AtomicU64, Ordering::Relaxed};

use super::CallOutcome;

/// The longest hold time one sample counts.
#[cfg(not(loom))]
const MAX_HOLD: u64 = 1 << 40;
/// Under loom, short: every bucket is an atomic the model explores on each
/// window's close, and a model has a budget of branches (the races are the
/// same with 17 buckets a class as with 1,153).
#[cfg(loom)]
const MAX_HOLD: u64 = 1 << 8;
/// Bits of a hold time below its leading one that pick its bucket: 32
/// buckets per power of two, so a bucket is at most 1/32 of its lower
/// bound wide (loom's models keep two).
#[cfg(not(loom))]
const SUB_BITS: u32 = 5;
#[cfg(loom)]
const SUB_BITS: u32 = 1;
const SUB: u64 = 1 << SUB_BITS;
/// Buckets of a histogram: up to `MAX_HOLD`'s.
pub(crate) const BUCKETS: usize = bucket(MAX_HOLD) + 1;

/// The bucket of a hold time (at most `MAX_HOLD`).
#[inline]
const fn bucket(held: u64) -> usize {
    if held < SUB {
        return held as usize;
    }
    let octave = 63 - held.leading_zeros();
    let within = (held >> (octave - SUB_BITS)) & (SUB - 1);
    ((octave - SUB_BITS + 1) as u64 * SUB + within) as usize
}

/// The hold times bucket `index` holds: `[low, low + width)`.
fn bounds(index: usize) -> (f64, f64) {
    let index = index as u64;
    if index < SUB {
        return (index as f64, 1.0);
    }
    let octave = index / SUB + u64::from(SUB_BITS) - 1;
    let shift = octave - u64::from(SUB_BITS);
    let low = (SUB + index % SUB) << shift;
    (low as f64, (1u64 << shift) as f64)
}

/// A histogram being filled: one counter per bucket, inline (the
/// limiter that holds it is boxed once): a sample's addition is one
/// pointer away from the bulkhead, and its index needs no bounds check.
#[derive(Debug)]
struct Buckets([AtomicU64; BUCKETS]);

impl Default for Buckets {
    fn default() -> Self {
        Buckets(std::array::from_fn(|_| AtomicU64::new(0)))
    }
}

impl Buckets {
    #[inline]
    fn add(&self, held: u64) {
        self.0[bucket(held.min(MAX_HOLD))].fetch_add(1, Relaxed);
    }

    fn peek(&self) -> u64 {
        self.0.iter().map(|count| count.load(Relaxed)).sum()
    }

    /// Moves the counts into `into` (sized to `BUCKETS` if it is not),
    /// leaving zeros.
    fn take_into(&self, into: &mut Histogram) {
        into.size();
        for (to, from) in into.0.iter_mut().zip(self.0.iter()) {
            *to = from.swap(0, Relaxed);
        }
    }

    fn clear(&self) {
        for count in self.0.iter() {
            count.store(0, Relaxed);
        }
    }

    /// Adds the count and the sum of midpoints of its samples to `sums`.
    fn sums(&self, sums: &mut (u64, f64)) {
        for (index, count) in self.0.iter().enumerate() {
            let n = count.load(Relaxed);
            if n > 0 {
                sums.0 += n;
                sums.1 += midpoint(index) * n as f64;
            }
        }
    }
}

/// The hold times of a window's successes (or of a class of them), by
/// bucket. The default is empty and allocates nothing: a controller sizes
/// its own once and takes every window into them.
#[derive(Clone, Default)]
pub(crate) struct Histogram(Box<[u64]>);

impl PartialEq for Histogram {
    /// Equal if they count the same samples in the same buckets, whether
    /// sized or not.
    fn eq(&self, other: &Self) -> bool {
        let at = |h: &Histogram, i: usize| h.0.get(i).copied().unwrap_or(0);
        (0..BUCKETS).all(|i| at(self, i) == at(other, i))
    }
}

impl Eq for Histogram {}

/// The middle of bucket `index`.
fn midpoint(index: usize) -> f64 {
    let (low, width) = bounds(index);
    low + width / 2.0
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(
                self.0
                    .iter()
                    .enumerate()
                    .filter(|(_, count)| **count > 0)
                    .map(|(index, count)| (bounds(index).0, count)),
            )
            .finish()
    }
}

impl Histogram {
    /// A histogram of `BUCKETS` empty buckets.
    pub(crate) fn sized() -> Self {
        Histogram(vec![0; BUCKETS].into_boxed_slice())
    }

    /// Makes it `BUCKETS` long, if it is not.
    fn size(&mut self) {
        if self.0.len() != BUCKETS {
            *self = Histogram::sized();
        }
    }

    /// The histogram of these hold times (tests).
    #[cfg(test)]
    pub(crate) fn of(held: &[u64]) -> Self {
        let mut histogram = Histogram::sized();
        for &h in held {
            histogram.0[bucket(h.min(MAX_HOLD))] += 1;
        }
        histogram
    }

    /// The samples it holds.
    pub(crate) fn count(&self) -> u64 {
        self.0.iter().sum()
    }

    /// Sets it to the sum of `a` and `b` (sized alike).
    fn sum_of(&mut self, a: &Histogram, b: &Histogram) {
        self.size();
        for ((to, a), b) in self.0.iter_mut().zip(a.0.iter()).zip(b.0.iter()) {
            *to = a + b;
        }
    }

    /// The mean hold time, each sample counted at its bucket's midpoint
    /// (within 1/64 of its own); `None` if empty.
    pub(crate) fn mean(&self) -> Option<f64> {
        let count = self.count();
        (count > 0).then(|| {
            let sum: f64 = self
                .0
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(index, n)| midpoint(index) * *n as f64)
                .sum();
            sum / count as f64
        })
    }

    /// The `q`-quantile (`q` in `[0, 1]`), interpolated within its bucket;
    /// `None` if empty. (The rank is at most the count, so a bucket holds
    /// it: counts are exact in an `f64` below 2^53.)
    pub(crate) fn quantile(&self, q: f64) -> Option<f64> {
        let rank = q.clamp(0.0, 1.0) * self.count() as f64;
        let mut below = 0.0;
        for (index, &n) in self.0.iter().enumerate() {
            if n == 0 {
                continue;
            }
            let n = n as f64;
            if below + n >= rank {
                let (low, width) = bounds(index);
                return Some(low + width * ((rank - below) / n).clamp(0.0, 1.0));
            }
            below += n;
        }
        None
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

/// A window's samples, taken by its closer (into the same buffers every
/// window: a closing call allocates nothing).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Taken {
    pub(crate) counts: Counts,
    /// The hold times of the bound successes.
    pub(crate) bound: Histogram,
    /// The hold times of the other successes.
    pub(crate) free: Histogram,
    /// The hold times of every success.
    pub(crate) ok: Histogram,
}

impl Taken {
    /// Buffers for a window's samples.
    pub(crate) fn sized() -> Self {
        Taken {
            counts: Counts::default(),
            bound: Histogram::sized(),
            free: Histogram::sized(),
            ok: Histogram::sized(),
        }
    }
}

#[derive(Debug)]
pub(crate) struct Samples {
    bound: Buckets,
    free: Buckets,
    errors: AtomicU64,
    drops: AtomicU64,
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
                let buckets = if bound { &self.bound } else { &self.free };
                buckets.add(held);
            }
            CallOutcome::Error => {
                self.errors.fetch_add(1, Relaxed);
            }
            CallOutcome::Dropped => {
                self.drops.fetch_add(1, Relaxed);
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
        Counts {
            bound: self.bound.peek(),
            free: self.free.peek(),
            errors: self.errors.load(Relaxed),
            drops: self.drops.load(Relaxed),
        }
    }

    /// The mean hold time of the successes so far, without taking them.
    pub(crate) fn mean(&self) -> Option<f64> {
        let mut sums = (0, 0.0);
        self.bound.sums(&mut sums);
        self.free.sums(&mut sums);
        (sums.0 > 0).then(|| sums.1 / sums.0 as f64)
    }

    /// Takes the window's samples into `into`, leaving an empty window.
    pub(crate) fn take_into(&self, into: &mut Taken) {
        self.bound.take_into(&mut into.bound);
        self.free.take_into(&mut into.free);
        into.ok.sum_of(&into.bound, &into.free);
        into.counts = Counts {
            bound: into.bound.count(),
            free: into.free.count(),
            errors: self.errors.swap(0, Relaxed),
            drops: self.drops.swap(0, Relaxed),
        };
    }

    /// Takes the window's samples (tests).
    #[cfg(test)]
    pub(crate) fn take(&self) -> Taken {
        let mut taken = Taken::default();
        self.take_into(&mut taken);
        taken
    }

    /// Drops the window's samples.
    pub(crate) fn clear(&self) {
        self.bound.clear();
        self.free.clear();
        self.errors.store(0, Relaxed);
        self.drops.store(0, Relaxed);
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
            bound: Buckets::default(),
            free: Buckets::default(),
            errors: AtomicU64::new(0),
            drops: AtomicU64::new(0),
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
        Released {
            in_flight,
            max,
            pooled: false,
        }
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
        assert_eq!(taken.bound, Histogram::of(&[100, 200]));
        assert_eq!(taken.free, Histogram::of(&[300]));
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
    fn a_hold_time_counts_at_most_its_cap() {
        let samples = Samples::default();
        samples.record(0, u64::MAX, CallOutcome::Success, released(1, 100));
        let taken = samples.take();
        assert_eq!(taken.free, Histogram::of(&[MAX_HOLD]));
        assert_eq!(
            taken.free.quantile(1.0),
            Some(MAX_HOLD as f64 * (1.0 + 1.0 / SUB as f64))
        );
    }

    #[test]
    fn every_hold_time_falls_in_its_bucket_and_the_buckets_tile_the_line() {
        let mut end = 0.0;
        for index in 0..BUCKETS {
            let (low, width) = bounds(index);
            assert_eq!(low, end, "bucket {index} starts where the last ended");
            assert!(width <= (low / SUB as f64).max(1.0), "bucket {index}");
            end = low + width;
            for held in [low as u64, (low + width) as u64 - 1] {
                assert_eq!(bucket(held), index, "{held} ns");
            }
        }
        assert_eq!(bucket(MAX_HOLD), BUCKETS - 1);
    }

    #[test]
    fn quantiles_and_the_mean_are_within_a_bucket_of_the_exact_ones() {
        // 1, 2, .., 10 000 µs.
        let held: Vec<u64> = (1..=10_000u64).map(|i| i * 1000).collect();
        let histogram = Histogram::of(&held);
        assert_eq!(histogram.count(), 10_000);
        for (q, exact) in [(0.5, 5.0e6), (0.25, 2.5e6), (0.99, 9.9e6), (0.0, 1.0e3)] {
            let got = histogram.quantile(q).unwrap();
            assert!(
                (got / exact - 1.0).abs() <= 1.0 / 32.0,
                "q {q}: {got} vs {exact}"
            );
        }
        let mean = histogram.mean().unwrap();
        assert!((mean / 5.0005e6 - 1.0).abs() <= 1.0 / 64.0, "mean {mean}");
        assert_eq!(Histogram::default().quantile(0.5), None);
        assert_eq!(Histogram::default().mean(), None);
    }

    #[test]
    fn a_heavy_tail_moves_the_mean_and_not_the_median() {
        let mut held = vec![100_000u64; 99];
        held.push(100_000_000);
        let histogram = Histogram::of(&held);
        let median = histogram.quantile(0.5).unwrap();
        assert!((median / 100_000.0 - 1.0).abs() <= 1.0 / 32.0, "{median}");
        assert!(histogram.mean().unwrap() > 10.0 * median);
    }

    #[test]
    fn many_samples_of_each_kind_are_each_taken_once() {
        let samples = Samples::default();
        let n = 3 * (1 << 12) + 5;
        for i in 0..n {
            samples.record(0, i, CallOutcome::Success, released(20, 20));
            samples.record(0, 2 * i, CallOutcome::Success, released(1, 20));
            samples.record(0, i, CallOutcome::Error, released(1, 20));
        }
        assert_eq!(samples.peek().ok(), 2 * n);
        let taken = samples.take();
        assert_eq!((taken.counts.bound, taken.counts.free), (n, n));
        assert_eq!(taken.counts.errors, n);
        assert_eq!(samples.take(), Taken::default());
    }
}
