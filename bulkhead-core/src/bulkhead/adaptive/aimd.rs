//! AIMD: Netflix concurrency-limits' `AIMDLimit`, with a latency signal.
//!
//! Published rule (`AIMDLimit.java`):
//!
//! ```text
//! drop or rtt > timeout   → L × backoff_ratio
//! inflight × 2 ≥ L        → L + 1
//! ```
//!
//! with `backoff_ratio` 0.9 and `timeout` 5 s. Without a latency signal
//! below the timeout, a dependency that slows down without failing lets the
//! limit grow to its ceiling; so two windows in a row whose calls at the
//! limit are `rtt_tolerance` times slower than the no-load latency count as
//! congested too, and so does one window with twice that excess (ours,
//! default 1.05: two windows at 5 % over, or one at 10 % over; two,
//! because a cut of a tenth on each noisy window leaves the limit of a
//! noisy dependency far below its capacity). The limit grows only in a window
//! where it bound, by `increase_by` (1, as published), and doubles in slow
//! start; the first congested window of slow start halves it, back to the
//! last limit that was not congested. In slow start, a window whose calls
//! at the limit are past half the tolerance (2.5 % over by default) grows
//! the limit one step instead of doubling it: the limit is near where it
//! settles, and doubling it from there overshot to twice the capacity.

use std::hash::{Hash, Hasher};
use std::time::Duration;

use super::rule::{Step, Window, hash_f64};
use crate::config::{ConfigError, check_positive, check_range};

/// The tunables of [`Adaptive::Aimd`](super::Adaptive::Aimd), built by
/// [`Aimd::builder`].
///
/// # Examples
///
/// ```
/// use bulkhead_core::adaptive::Aimd;
///
/// let aimd = Aimd::builder().backoff_ratio(0.5).increase_by(2).build()?;
/// assert_eq!(aimd.backoff_ratio(), 0.5);
/// # Ok::<(), bulkhead_core::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Aimd {
    backoff_ratio: f64,
    increase_by: u32,
    rtt_tolerance: f64,
    timeout: Duration,
}

impl Aimd {
    /// Our default `rtt_tolerance`, 1.05 (the published AIMD has no latency
    /// signal below its `timeout`).
    pub const DEFAULT_RTT_TOLERANCE: f64 = 1.05;

    /// A builder starting from the defaults.
    pub fn builder() -> AimdBuilder {
        AimdBuilder(Aimd::default())
    }

    /// The factor a congested window multiplies the limit by.
    pub fn backoff_ratio(&self) -> f64 {
        self.backoff_ratio
    }

    /// What a bound, uncongested window adds to the limit.
    pub fn increase_by(&self) -> u32 {
        self.increase_by
    }

    /// How much slower than the no-load latency the calls at the limit may
    /// be before the window counts as congested.
    pub fn rtt_tolerance(&self) -> f64 {
        self.rtt_tolerance
    }

    /// A mean hold time above it counts as a drop.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The rule, for one window.
    pub(crate) fn update(&self, window: &Window) -> Step {
        let limit = window.limit;
        let above = |latency: Option<f64>, tolerance: f64| {
            latency
                .zip(window.no_load)
                .is_some_and(|(latency, no_load)| latency > tolerance * no_load)
        };
        // Twice the excess over the tolerance is congestion at once.
        let clearly = 2.0 * self.rtt_tolerance - 1.0;
        let congested = window.dropping
            || window
                .latency
                .is_some_and(|latency| latency > self.timeout.as_nanos() as f64)
            || above(window.latency, clearly)
            || (above(window.latency, self.rtt_tolerance)
                && above(window.previous, self.rtt_tolerance));
        if congested {
            let ratio = if window.slow_start {
                0.5
            } else {
                self.backoff_ratio
            };
            return Step::Cut(limit * ratio);
        }
        // Past half the tolerance the limit is near where it settles: slow
        // start grows it a step instead of doubling it.
        let near = above(window.latency, (1.0 + self.rtt_tolerance) / 2.0);
        match (window.bound, window.slow_start && window.saturated && !near) {
            (false, _) => Step::Hold,
            (true, true) => Step::Grow(2.0 * limit),
            (true, false) => Step::Grow(limit + f64::from(self.increase_by)),
        }
    }
}

impl Default for Aimd {
    fn default() -> Self {
        Aimd {
            backoff_ratio: 0.9,
            increase_by: 1,
            rtt_tolerance: Self::DEFAULT_RTT_TOLERANCE,
            timeout: Duration::from_secs(5),
        }
    }
}

impl Eq for Aimd {}

impl Hash for Aimd {
    fn hash<H: Hasher>(&self, state: &mut H) {
        hash_f64(self.backoff_ratio, state);
        self.increase_by.hash(state);
        hash_f64(self.rtt_tolerance, state);
        self.timeout.hash(state);
    }
}

/// Builds [`Aimd`]; each value is checked by [`build`](Self::build).
#[derive(Debug, Clone, Copy, PartialEq)]
#[must_use]
pub struct AimdBuilder(Aimd);

impl AimdBuilder {
    /// The factor a congested window multiplies the limit by: at least
    /// 0.5 and less than 1 (Netflix's own check); default 0.9, as
    /// published.
    pub fn backoff_ratio(mut self, ratio: f64) -> Self {
        self.0.backoff_ratio = ratio;
        self
    }

    /// What a bound, uncongested window adds to the limit: 1 to 1000,
    /// default 1, as published.
    pub fn increase_by(mut self, increase: u32) -> Self {
        self.0.increase_by = increase;
        self
    }

    /// How much slower than the no-load latency the calls at the limit may
    /// be before the window counts as congested (two in a row): 1 to 10,
    /// default 1.05.
    pub fn rtt_tolerance(mut self, tolerance: f64) -> Self {
        self.0.rtt_tolerance = tolerance;
        self
    }

    /// A mean hold time above it counts as a drop: longer than zero,
    /// default 5 s, as published.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.0.timeout = timeout;
        self
    }

    /// The tunables.
    ///
    /// # Errors
    ///
    /// ATR-008 for a value out of its range.
    pub fn build(self) -> Result<Aimd, ConfigError> {
        let a = self.0;
        if !(a.backoff_ratio >= 0.5 && a.backoff_ratio < 1.0) {
            return Err(ConfigError::NumberOutOfRange {
                key: "backoff_ratio".to_owned(),
                value: a.backoff_ratio.to_string(),
                range: "at least 0.5 and less than 1".to_owned(),
            });
        }
        check_range("increase_by", a.increase_by, 1, 1000)?;
        check_range("rtt_tolerance", a.rtt_tolerance, 1.0, 10.0)?;
        check_positive("timeout", a.timeout)?;
        Ok(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(limit: f64, latency: f64) -> Window {
        Window {
            limit,
            latency: Some(latency),
            no_load: Some(100.0),
            bound: true,
            dropping: false,
            slow_start: false,
            saturated: true,
            previous: Some(latency),
        }
    }

    #[test]
    fn the_published_cases() {
        let aimd = Aimd::default();
        // 20 → 21 when bound and fast; ⌊20 × 0.9⌋ = 18 on a drop.
        assert_eq!(aimd.update(&window(20.0, 100.0)), Step::Grow(21.0));
        let mut dropped = window(20.0, 100.0);
        dropped.dropping = true;
        assert_eq!(aimd.update(&dropped), Step::Cut(18.0));
        // A mean over the 5 s timeout is a drop.
        let slow = window(20.0, 6e9);
        assert_eq!(
            Aimd::builder()
                .rtt_tolerance(10.0)
                .build()
                .unwrap()
                .update(&Window {
                    no_load: Some(1e9),
                    ..slow
                }),
            Step::Cut(18.0)
        );
    }

    #[test]
    fn latency_past_the_tolerance_twice_backs_off_and_slow_start_halves() {
        let aimd = Aimd::default();
        assert_eq!(aimd.update(&window(50.0, 111.0)), Step::Cut(45.0));
        let once = Window {
            previous: Some(100.0),
            ..window(50.0, 108.0)
        };
        assert_eq!(aimd.update(&once), Step::Grow(51.0));
        let clearly = Window {
            previous: Some(100.0),
            ..window(50.0, 111.0)
        };
        assert_eq!(aimd.update(&clearly), Step::Cut(45.0));
        let mut starting = window(80.0, 160.0);
        starting.slow_start = true;
        assert_eq!(aimd.update(&starting), Step::Cut(40.0));
        starting.latency = Some(100.0);
        assert_eq!(aimd.update(&starting), Step::Grow(160.0));
        // Near the tolerance, slow start grows a step instead of doubling.
        starting.latency = Some(103.0);
        assert_eq!(aimd.update(&starting), Step::Grow(81.0));
        starting.bound = false;
        assert_eq!(aimd.update(&starting), Step::Hold);
    }

    #[test]
    fn a_backoff_outside_half_to_one_is_atr_008() {
        for ratio in [0.4, 1.0, f64::NAN] {
            let err = Aimd::builder().backoff_ratio(ratio).build().unwrap_err();
            assert_eq!(err.code(), "ATR-008", "{ratio}");
        }
        assert!(Aimd::builder().backoff_ratio(0.5).build().is_ok());
    }
}
