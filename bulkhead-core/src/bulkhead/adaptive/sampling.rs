//! [`Sampling`]: how every algorithm gathers and judges its samples.

use std::hash::{Hash, Hasher};
use std::time::Duration;

use super::rule::hash_f64;
use crate::config::{ConfigError, check_positive, check_range};

/// How an adaptive bulkhead gathers samples into windows, judges drops and
/// errors, and probes for the no-load latency, whatever the algorithm;
/// built by [`Sampling::builder`].
///
/// A window lasts twice the no-load latency, at least `min_window` and at
/// most `max_window`, and holds at least `min_samples` calls. A window that
/// has fewer by `max_window` is discarded, as Netflix's `WindowedLimit`
/// does, unless its calls say something: drops over `drop_tolerance` (at
/// least three) close it at once, and if its limit bound it waits up to
/// four `max_window`s for its calls, then closes with what it has (at least
/// three). Every `probe_interval` (give or take a quarter, drawn from a
/// generator seeded by the instance id, so runs repeat) the limit is cut to
/// three quarters for one window, and the mean hold time of the calls
/// admitted during that window measures the no-load latency.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use bulkhead_core::adaptive::Sampling;
///
/// let sampling = Sampling::builder()
///     .errors_as_drops(true)
///     .probe_interval(Duration::from_secs(60))
///     .build()?;
/// assert!(sampling.errors_as_drops());
/// # Ok::<(), bulkhead_core::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    min_window: Duration,
    max_window: Duration,
    min_samples: u32,
    drop_tolerance: f64,
    errors_as_drops: bool,
    probe_interval: Duration,
}

impl Sampling {
    /// A builder starting from the defaults.
    pub fn builder() -> SamplingBuilder {
        SamplingBuilder(Sampling::default())
    }

    /// The shortest window.
    pub fn min_window(&self) -> Duration {
        self.min_window
    }

    /// The longest window.
    pub fn max_window(&self) -> Duration {
        self.max_window
    }

    /// The fewest calls a window needs.
    pub fn min_samples(&self) -> u32 {
        self.min_samples
    }

    /// The share of a window's calls that may be dropped before the window
    /// counts as congested.
    pub fn drop_tolerance(&self) -> f64 {
        self.drop_tolerance
    }

    /// Whether calls that returned an error count as dropped.
    pub fn errors_as_drops(&self) -> bool {
        self.errors_as_drops
    }

    /// How often the no-load latency is measured again, on average.
    pub fn probe_interval(&self) -> Duration {
        self.probe_interval
    }
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling {
            min_window: Duration::from_millis(100),
            max_window: Duration::from_secs(1),
            min_samples: 20,
            drop_tolerance: 0.01,
            errors_as_drops: false,
            probe_interval: Duration::from_secs(30),
        }
    }
}

impl Eq for Sampling {}

impl Hash for Sampling {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.min_window.hash(state);
        self.max_window.hash(state);
        self.min_samples.hash(state);
        hash_f64(self.drop_tolerance, state);
        self.errors_as_drops.hash(state);
        self.probe_interval.hash(state);
    }
}

/// Builds [`Sampling`]; each value is checked by [`build`](Self::build).
#[derive(Debug, Clone, Copy, PartialEq)]
#[must_use]
pub struct SamplingBuilder(Sampling);

impl SamplingBuilder {
    /// The shortest window: longer than zero, default 100 ms (Netflix's
    /// `WindowedLimit`: 1 s, too slow to follow a change within seconds).
    pub fn min_window(mut self, window: Duration) -> Self {
        self.0.min_window = window;
        self
    }

    /// The longest window: at least `min_window`, default 1 s, as
    /// published.
    pub fn max_window(mut self, window: Duration) -> Self {
        self.0.max_window = window;
        self
    }

    /// The fewest calls a window needs: 1 to 100000, default 20 (published:
    /// 10).
    pub fn min_samples(mut self, samples: u32) -> Self {
        self.0.min_samples = samples;
        self
    }

    /// The share of a window's calls that may be dropped (timed out or
    /// cancelled) before the window counts as congested: at least 0 and
    /// less than 1, default 0.01 (published: any drop).
    pub fn drop_tolerance(mut self, tolerance: f64) -> Self {
        self.0.drop_tolerance = tolerance;
        self
    }

    /// Whether calls that returned an error count as dropped (default
    /// false: errors are counted and reported, and their hold times, which
    /// are not the dependency's service time, are left out of latency).
    pub fn errors_as_drops(mut self, errors_as_drops: bool) -> Self {
        self.0.errors_as_drops = errors_as_drops;
        self
    }

    /// How often the no-load latency is measured again, on average: longer
    /// than zero, default 30 s.
    pub fn probe_interval(mut self, interval: Duration) -> Self {
        self.0.probe_interval = interval;
        self
    }

    /// The tunables.
    ///
    /// # Errors
    ///
    /// ATR-008 for a value out of its range.
    pub fn build(self) -> Result<Sampling, ConfigError> {
        let s = self.0;
        check_positive("min_window", s.min_window)?;
        if s.max_window < s.min_window {
            return Err(ConfigError::NumberOutOfRange {
                key: "max_window".to_owned(),
                value: humantime::format_duration(s.max_window).to_string(),
                range: format!(
                    "at least min_window ({})",
                    humantime::format_duration(s.min_window)
                ),
            });
        }
        check_range("min_samples", s.min_samples, 1, 100_000)?;
        if !(s.drop_tolerance >= 0.0 && s.drop_tolerance < 1.0) {
            return Err(ConfigError::NumberOutOfRange {
                key: "drop_tolerance".to_owned(),
                value: s.drop_tolerance.to_string(),
                range: "at least 0 and less than 1".to_owned(),
            });
        }
        check_positive("probe_interval", s.probe_interval)?;
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_values_are_atr_008() {
        let builds = [
            Sampling::builder().min_window(Duration::ZERO).build(),
            Sampling::builder()
                .max_window(Duration::from_millis(50))
                .build(),
            Sampling::builder().min_samples(0).build(),
            Sampling::builder().drop_tolerance(1.0).build(),
            Sampling::builder().probe_interval(Duration::ZERO).build(),
        ];
        for built in builds {
            assert_eq!(built.unwrap_err().code(), "ATR-008");
        }
    }
}
