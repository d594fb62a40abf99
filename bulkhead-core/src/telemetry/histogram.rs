//! A histogram of durations that any number of threads add to at once: one
//! relaxed `fetch_add` on a bucket and one on the sum per sample, no lock,
//! no allocation.
//!
//! # Buckets
//!
//! Two per power of two of nanoseconds, from 1,024 ns (about 1 µs) to
//! 2^42 ns (about 73 minutes): bucket 0 holds every sample up to 1,024 ns,
//! then each octave `[2^k, 2^(k+1))` is split at `1.5 × 2^k`, and the last
//! bucket holds everything from 2^42 ns on. A bucket's upper bound is at
//! most 1.5 times its lower one, so a quantile read from the buckets is
//! within that factor of the true one (interpolated inside a bucket,
//! typically much closer).

use std::time::Duration;

// Plain `std` atomics, under loom too: independent counters, nothing to model.
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The lowest octave split in two: 2^10 ns.
const FIRST_OCTAVE: u32 = 10;
/// The octaves split in two: 2^10 to 2^42 ns.
const OCTAVES: u32 = 32;
/// How many buckets a histogram has: the first, two per octave, the last.
pub(crate) const BUCKETS: usize = 2 + 2 * OCTAVES as usize;

/// The bucket of a duration of `nanos`.
#[inline]
pub(crate) fn bucket(nanos: u64) -> usize {
    if nanos <= 1 << FIRST_OCTAVE {
        return 0;
    }
    let octave = 63 - nanos.leading_zeros();
    if octave >= FIRST_OCTAVE + OCTAVES {
        return BUCKETS - 1;
    }
    // The bit below the leading one: the upper half of the octave.
    let upper = (nanos >> (octave - 1)) & 1;
    1 + 2 * (octave - FIRST_OCTAVE) as usize + upper as usize
}

/// The upper bound of bucket `index`, inclusive (`None` for the last,
/// unbounded one).
pub(crate) fn upper_bound(index: usize) -> Option<u64> {
    match index {
        0 => Some(1 << FIRST_OCTAVE),
        i if i >= BUCKETS - 1 => None,
        i => {
            let octave = FIRST_OCTAVE + ((i - 1) / 2) as u32;
            let base = 1u64 << octave;
            // Samples are whole nanoseconds: `[2^k, 1.5 × 2^k)` ends at
            // `1.5 × 2^k - 1`, `[1.5 × 2^k, 2^(k+1))` at `2^(k+1) - 1`.
            Some(if (i - 1) % 2 == 0 {
                base + base / 2 - 1
            } else {
                2 * base - 1
            })
        }
    }
}

/// The lower bound of bucket `index`, inclusive.
fn lower_bound(index: usize) -> u64 {
    match index {
        0 => 0,
        i => upper_bound(i - 1).map_or(u64::MAX, |bound| bound + 1),
    }
}

/// The atomic counts behind a [`HistogramSnapshot`].
#[derive(Debug)]
pub(crate) struct Histogram {
    buckets: [AtomicU64; BUCKETS],
    sum_nanos: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            sum_nanos: AtomicU64::new(0),
        }
    }
}

impl Histogram {
    /// Adds a sample of `nanos`.
    #[inline]
    pub(crate) fn record(&self, nanos: u64) {
        self.buckets[bucket(nanos)].fetch_add(1, Relaxed);
        self.sum_nanos.fetch_add(nanos, Relaxed);
    }

    /// The counts as they are now (each bucket read on its own: a sample
    /// recorded meanwhile may be in the sum and not yet in its bucket).
    pub(crate) fn read(&self) -> HistogramSnapshot {
        HistogramSnapshot {
            counts: std::array::from_fn(|i| self.buckets[i].load(Relaxed)),
            sum_nanos: self.sum_nanos.load(Relaxed),
        }
    }
}

/// A reading of a histogram of durations: how many samples fell in each of
/// its fixed buckets, and their sum.
///
/// The buckets are the same for every histogram: bucket 0 holds samples up
/// to 1.024 µs, then two per power of two of nanoseconds (each bound 1.5
/// or 1.33 times the one before) up to 2^42 ns (about 73 minutes), and the
/// last bucket everything longer. Readings are cumulative since the
/// histogram was made; [`since`](Self::since) gives an interval's.
///
/// ```
/// use std::time::Duration;
/// use bulkhead_core::HistogramSnapshot;
///
/// let empty = HistogramSnapshot::default();
/// assert_eq!(empty.count(), 0);
/// assert_eq!(empty.quantile(0.99), None);
/// assert_eq!(empty.buckets().count(), HistogramSnapshot::BUCKETS);
/// // The first bucket holds everything up to 1.024 µs.
/// assert_eq!(empty.buckets().next(), Some((Some(Duration::from_nanos(1024)), 0)));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct HistogramSnapshot {
    counts: [u64; BUCKETS],
    sum_nanos: u64,
}

impl Default for HistogramSnapshot {
    fn default() -> Self {
        HistogramSnapshot {
            counts: [0; BUCKETS],
            sum_nanos: 0,
        }
    }
}

impl std::fmt::Debug for HistogramSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HistogramSnapshot")
            .field("count", &self.count())
            .field("sum", &self.sum())
            .field("p50", &self.quantile(0.5))
            .field("p99", &self.quantile(0.99))
            .finish()
    }
}

impl HistogramSnapshot {
    /// How many buckets every histogram has.
    pub const BUCKETS: usize = BUCKETS;

    /// How many samples it holds.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The sum of its samples, modulo 2^64 ns (584 years): a histogram's
    /// cumulative sum wraps past that (a busy instance of long calls gets
    /// there in days), and [`since`](Self::since) and
    /// [`merge`](Self::merge) wrap with it, so an interval's sum stays
    /// right across the wrap.
    pub fn sum(&self) -> Duration {
        Duration::from_nanos(self.sum_nanos)
    }

    /// The mean of its samples, if it has any.
    pub fn mean(&self) -> Option<Duration> {
        let count = self.count();
        (count > 0).then(|| Duration::from_nanos(self.sum_nanos / count))
    }

    /// Each bucket, first to last: its upper bound (inclusive; `None` for
    /// the last, which has none) and how many samples fell in it (not
    /// cumulative: Prometheus's `le` buckets are the running sums).
    pub fn buckets(&self) -> impl ExactSizeIterator<Item = (Option<Duration>, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .map(|(i, &count)| (upper_bound(i).map(Duration::from_nanos), count))
    }

    /// A value to stand for the samples of bucket `index` when they are
    /// replayed into another histogram (an exporter's): the geometric middle
    /// of its bounds, within a factor of 1.23 of any sample in it (1 µs for
    /// the first bucket, 2^42 ns for the last).
    pub fn representative(index: usize) -> Duration {
        let nanos = match (index, upper_bound(index)) {
            (0, _) => 1 << FIRST_OCTAVE,
            (_, None) => lower_bound(index),
            (i, Some(upper)) => {
                let lower = lower_bound(i) as f64;
                (lower * (upper + 1) as f64).sqrt() as u64
            }
        };
        Duration::from_nanos(nanos)
    }

    /// The `q` quantile (`0.0..=1.0`, clamped) of its samples, interpolated
    /// linearly inside the bucket it falls in; `None` without samples. An
    /// estimate within the bucket's bounds (a factor of 1.5 at most); a
    /// quantile in the last bucket is its lower bound, 2^42 ns.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        let count = self.count();
        if count == 0 {
            return None;
        }
        let q = if q.is_nan() { 1.0 } else { q.clamp(0.0, 1.0) };
        // The rank of the sample wanted, from 1.
        let rank = ((q * count as f64).ceil() as u64).clamp(1, count);
        let mut below = 0;
        for (i, &n) in self.counts.iter().enumerate() {
            if below + n >= rank {
                let lower = lower_bound(i);
                let Some(upper) = upper_bound(i) else {
                    return Some(Duration::from_nanos(lower));
                };
                let into = (rank - below) as f64 / n as f64;
                let nanos = lower as f64 + into * (upper - lower) as f64;
                return Some(Duration::from_nanos(nanos as u64));
            }
            below += n;
        }
        None
    }

    /// What was added between `earlier` (a reading of the same histogram)
    /// and this reading.
    #[must_use]
    pub fn since(&self, earlier: &HistogramSnapshot) -> HistogramSnapshot {
        HistogramSnapshot {
            counts: std::array::from_fn(|i| self.counts[i].saturating_sub(earlier.counts[i])),
            // The atomic sum wraps: so does the difference.
            sum_nanos: self.sum_nanos.wrapping_sub(earlier.sum_nanos),
        }
    }

    /// The samples of both (of two histograms of the same thing).
    pub fn merge(&mut self, other: &HistogramSnapshot) {
        for (mine, theirs) in self.counts.iter_mut().zip(other.counts.iter()) {
            *mine = mine.saturating_add(*theirs);
        }
        // Wrapping, as the sums themselves: `since` then undoes it.
        self.sum_nanos = self.sum_nanos.wrapping_add(other.sum_nanos);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn every_sample_falls_within_its_buckets_bounds() {
        let mut samples = vec![0, 1, 1023, 1024, 1025, 1535, 1536, 2047, 2048, u64::MAX];
        samples.extend((0..64).map(|shift| 1u64 << shift));
        samples.extend((1..64).map(|shift| (1u64 << shift) - 1));
        samples.extend((1..63).map(|shift| (1u64 << shift) + (1u64 << (shift - 1))));
        for nanos in samples {
            let i = bucket(nanos);
            assert!(i < BUCKETS);
            assert!(lower_bound(i) <= nanos, "{nanos} below bucket {i}");
            if let Some(upper) = upper_bound(i) {
                assert!(nanos <= upper, "{nanos} above bucket {i} ({upper})");
            }
        }
    }

    #[test]
    fn buckets_tile_the_line_without_gaps() {
        for i in 1..BUCKETS {
            assert_eq!(lower_bound(i), upper_bound(i - 1).unwrap() + 1);
            assert_eq!(bucket(lower_bound(i)), i);
            if let Some(upper) = upper_bound(i) {
                assert_eq!(bucket(upper), i);
                // Each bound at most 1.5 times the one before.
                assert!(upper as f64 <= 1.5 * lower_bound(i) as f64 + 1.0);
            }
        }
        assert_eq!(upper_bound(BUCKETS - 1), None);
        assert_eq!(lower_bound(BUCKETS - 1), 1 << 42);
    }

    #[test]
    fn counts_sum_and_quantiles_follow_the_samples() {
        let histogram = Histogram::default();
        // 90 samples of 100 µs, 10 of 10 ms.
        for _ in 0..90 {
            histogram.record(100_000);
        }
        for _ in 0..10 {
            histogram.record(10_000_000);
        }
        let reading = histogram.read();
        assert_eq!(reading.count(), 100);
        assert_eq!(
            reading.sum(),
            Duration::from_nanos(90 * 100_000 + 10 * 10_000_000)
        );
        let p50 = reading.quantile(0.5).unwrap();
        let p99 = reading.quantile(0.99).unwrap();
        assert!(
            Duration::from_micros(66) < p50 && p50 <= Duration::from_micros(150),
            "{p50:?}"
        );
        assert!(
            Duration::from_micros(6_600) < p99 && p99 <= Duration::from_millis(15),
            "{p99:?}"
        );
        assert_eq!(reading.buckets().map(|(_, n)| n).sum::<u64>(), 100);

        let later = {
            histogram.record(1_000);
            histogram.read()
        };
        let interval = later.since(&reading);
        assert_eq!(interval.count(), 1);
        assert_eq!(
            interval.buckets().next(),
            Some((Some(Duration::from_nanos(1024)), 1))
        );
        let mut merged = reading.clone();
        merged.merge(&interval);
        assert_eq!(merged, later);
    }

    #[test]
    fn representatives_lie_in_their_buckets() {
        for i in 0..BUCKETS {
            let r = HistogramSnapshot::representative(i).as_nanos() as u64;
            assert_eq!(bucket(r), i, "bucket {i}: {r}");
        }
    }

    #[test]
    fn an_intervals_sum_is_right_across_the_wrap_of_the_cumulative_sum() {
        let histogram = Histogram::default();
        histogram.record(u64::MAX - 10);
        let before = histogram.read();
        histogram.record(100);
        let after = histogram.read();
        let interval = after.since(&before);
        assert_eq!(interval.count(), 1);
        assert_eq!(interval.sum(), Duration::from_nanos(100));

        // Merged with another histogram's readings, likewise.
        let other = Histogram::default();
        other.record(7);
        let mut merged_before = before.clone();
        merged_before.merge(&other.read());
        other.record(5);
        let mut merged_after = after.clone();
        merged_after.merge(&other.read());
        let interval = merged_after.since(&merged_before);
        assert_eq!(interval.count(), 2);
        assert_eq!(interval.sum(), Duration::from_nanos(105));
    }

    #[test]
    fn quantiles_of_odd_inputs_are_defined() {
        let histogram = Histogram::default();
        histogram.record(u64::MAX);
        let reading = histogram.read();
        assert_eq!(
            reading.quantile(f64::NAN),
            Some(Duration::from_nanos(1 << 42))
        );
        assert_eq!(reading.quantile(-3.0), Some(Duration::from_nanos(1 << 42)));
        assert_eq!(reading.mean(), Some(Duration::from_nanos(u64::MAX)));
    }
}
