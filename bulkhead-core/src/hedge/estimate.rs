//! # Implementation details
//!
//! A running estimate of a percentile of the first attempts' latency, for
//! a hedge whose `delay` is a percentile (`"p90"`): one atomic word, no
//! allocation, no lock, deterministic (no random numbers).
//!
//! The estimate moves by stochastic gradient descent on the quantile loss,
//! in the logarithm of the latency: an observation above it raises it by
//! `q` steps, one below lowers it by `1 - q` steps, so that it settles
//! where a fraction `q` of the observations fall below it (the expected
//! move, `q * P(above) - (1 - q) * P(below)`, is zero there). A step is a
//! sixteenth of an octave: from a first observation the estimate reaches a
//! latency ten times as long in about sixty observations above it, and
//! then hovers around the percentile, within about 15% of it when the
//! latencies are spread evenly (closer when they bunch, as a slow tail's
//! do).
//!
//! What is observed costs nothing on the fast path: an attempt that
//! finishes at its first poll is below (the hedge did not read the clock);
//! one still pending then is measured from that first poll when it
//! finishes (one clock reading); one dropped because a hedge won is above
//! (it ran past the delay, which is the estimate). Until [`WARM_UP`]
//! observations, and one that measured a latency, there is no estimate and
//! no hedge.
//!
//! The word holds the estimate's base-2 logarithm in nanoseconds, in
//! 1/65536ths of an octave, or [`NONE`] before the first measured latency.
//! Updates are compare-exchange loops (`Relaxed`: the word publishes
//! nothing else); an observation lost to a race is an observation fewer.

use std::fmt;
use std::time::Duration;

use crate::loom::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

/// Observations before the estimate is used.
pub(crate) const WARM_UP: u32 = 20;

/// One octave, in the word's units.
const OCTAVE: f64 = 65536.0;

/// A step, in the word's units: a sixteenth of an octave.
const STEP: f64 = OCTAVE / 16.0;

/// No estimate yet.
const NONE: u64 = u64::MAX;

/// The running estimate of one percentile.
pub(crate) struct Estimate {
    /// How far an observation above raises the estimate, and one below
    /// lowers it.
    up: u64,
    down: u64,
    level: AtomicU64,
    /// Observations, counted up to [`WARM_UP`].
    seen: AtomicU32,
}

impl Estimate {
    /// An estimate of the `quantile` (0.9 for p90), with no observation.
    pub(crate) fn new(quantile: f64) -> Self {
        Estimate {
            up: (STEP * quantile).round() as u64,
            down: (STEP * (1.0 - quantile)).round() as u64,
            level: AtomicU64::new(NONE),
            seen: AtomicU32::new(0),
        }
    }

    /// The estimate, once warmed up: the delay of a hedge.
    pub(crate) fn delay(&self) -> Option<Duration> {
        if self.seen.load(Relaxed) < WARM_UP {
            return None;
        }
        match self.level.load(Relaxed) {
            NONE => None,
            level => {
                let nanos = (level as f64 / OCTAVE).exp2();
                // Saturating: a float cast never wraps.
                Some(Duration::from_nanos(nanos as u64))
            }
        }
    }

    /// An attempt that finished before the estimate (at its first poll).
    pub(crate) fn below(&self) {
        self.count();
        let down = self.down;
        let _ = self
            .level
            .fetch_update(Relaxed, Relaxed, |level| match level {
                NONE => None,
                level => Some(level.saturating_sub(down)),
            });
    }

    /// An attempt that ran past the estimate (dropped after a hedge won).
    pub(crate) fn above(&self) {
        self.count();
        let up = self.up;
        let _ = self
            .level
            .fetch_update(Relaxed, Relaxed, |level| match level {
                NONE => None,
                level => Some(level.saturating_add(up).min(NONE - 1)),
            });
    }

    /// An attempt that took `took`.
    pub(crate) fn observe(&self, took: Duration) {
        self.count();
        let measured = level_of(took);
        let (up, down) = (self.up, self.down);
        let _ = self
            .level
            .fetch_update(Relaxed, Relaxed, |level| match level {
                NONE => Some(measured),
                level if measured > level => Some(level.saturating_add(up).min(NONE - 1)),
                level if measured < level => Some(level.saturating_sub(down)),
                _ => None,
            });
    }

    fn count(&self) {
        if self.seen.load(Relaxed) < WARM_UP {
            self.seen.fetch_add(1, Relaxed);
        }
    }
}

/// `took` in the word's units.
fn level_of(took: Duration) -> u64 {
    let nanos = took.as_nanos().max(1) as f64;
    (nanos.log2() * OCTAVE) as u64
}

impl fmt::Debug for Estimate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Estimate")
            .field("delay", &self.delay())
            .field("seen", &self.seen.load(Relaxed))
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn there_is_no_estimate_until_it_has_warmed_up_on_a_measured_latency() {
        let estimate = Estimate::new(0.9);
        for _ in 0..100 {
            estimate.below();
        }
        assert_eq!(estimate.delay(), None, "nothing measured yet");
        estimate.observe(10 * MS);
        let delay = estimate.delay().unwrap();
        assert!(delay.abs_diff(10 * MS) < MS / 10, "{delay:?}");
        let fresh = Estimate::new(0.9);
        for _ in 0..WARM_UP - 1 {
            fresh.observe(10 * MS);
        }
        assert_eq!(fresh.delay(), None, "still warming up");
        fresh.observe(10 * MS);
        assert!(fresh.delay().is_some());
    }

    /// The estimate after `n` observations cycling through `latencies` in
    /// a fixed, shuffled order.
    fn settled(quantile: f64, latencies: &[Duration], n: usize) -> Duration {
        let estimate = Estimate::new(quantile);
        let len = latencies.len();
        for i in 0..n {
            estimate.observe(latencies[(i * 37) % len]);
        }
        estimate.delay().unwrap()
    }

    #[test]
    fn it_settles_on_the_percentile_of_what_it_sees() {
        // Latencies 1 ms to 100 ms, evenly: p90 is 90 ms, p50 50 ms.
        let latencies: Vec<Duration> = (1..=100).map(|ms| ms * MS).collect();
        for n in [20_000, 20_001, 20_037] {
            let p90 = settled(0.9, &latencies, n);
            assert!((75 * MS..=105 * MS).contains(&p90), "p90 {p90:?} after {n}");
        }
        let p50 = settled(0.5, &latencies, 20_000);
        assert!((40 * MS..=60 * MS).contains(&p50), "p50 {p50:?}");
    }

    #[test]
    fn a_slow_tail_puts_p90_at_the_usual_latency_and_p99_in_the_tail() {
        // Nine calls in ten take 5 ms, one 100 ms.
        let mut latencies = vec![5 * MS; 9];
        latencies.push(100 * MS);
        let p90 = settled(0.9, &latencies, 10_000);
        assert!((5 * MS..=7 * MS).contains(&p90), "p90 {p90:?}");
        let p95 = settled(0.95, &latencies, 10_000);
        assert!(p95 > 20 * MS, "p95 {p95:?} is in the tail");
    }

    #[test]
    fn attempts_dropped_above_and_finished_at_once_below_move_it() {
        let estimate = Estimate::new(0.9);
        for _ in 0..WARM_UP {
            estimate.observe(10 * MS);
        }
        let before = estimate.delay().unwrap();
        estimate.above();
        assert!(estimate.delay().unwrap() > before);
        for _ in 0..20 {
            estimate.below();
        }
        assert!(estimate.delay().unwrap() < before);
    }
}
