//! Vegas: Netflix concurrency-limits' `VegasLimit`, with probed no-load
//! latency.
//!
//! Published rule (`VegasLimit.java`), per window, with `r = log10root(L)`
//! (`max(1, ⌊log10 L⌋)`):
//!
//! ```text
//! queue = ⌈L × (1 − no_load / latency)⌉
//! drop            → L − r
//! queue ≤ 1 × r   → L + 6 × r      ("aggressive increase when no queuing")
//! queue < 3 × r   → L + r
//! queue > 6 × r   → L − r
//! new = (1 − smoothing) × L + smoothing × new
//! ```
//!
//! The multipliers alpha 3 and beta 6 and the smoothing 1.0 are the
//! published defaults. What we changed: the no-load latency comes from
//! probes at reduced concurrency instead of the running minimum reset to
//! the current latency every `probeMultiplier` updates (which ratchets
//! upward under load, their issue 165); the limit grows only in a window
//! where it bound (theirs grows while `inflight × 2 ≥ L`); and slow start
//! replaces the aggressive increase by `beta` below the threshold of one
//! queued call: while the bulkhead is saturated and below its slow-start
//! threshold, a queue below alpha doubles the limit, and one above beta
//! ends slow start by taking the queue off (`L − queue + alpha`, at least
//! `L / 2`); after it, any queue below alpha grows the limit by one step.
//! (Growing by `beta` in steady state, the limit of a dependency running
//! below capacity jumps past it every few windows; and the queue estimate,
//! `L` times the relative delay, turns latency noise into a few queued
//! calls at `L` in the hundreds, so the published threshold of one call
//! stalls slow start long before the capacity of a large dependency.)

use std::hash::{Hash, Hasher};

use super::rule::{Step, Window, hash_f64, log10_root};
use crate::config::{ConfigError, check_range};

/// The tunables of [`Adaptive::Vegas`](super::Adaptive::Vegas), built by
/// [`Vegas::builder`]. The queue thresholds are multiples of
/// `log10root(limit)`, as published.
///
/// # Examples
///
/// ```
/// use bulkhead_core::adaptive::Vegas;
///
/// let vegas = Vegas::builder().alpha(2.0).beta(4.0).build()?;
/// assert_eq!((vegas.alpha(), vegas.beta()), (2.0, 4.0));
/// # Ok::<(), bulkhead_core::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Vegas {
    alpha: f64,
    beta: f64,
    smoothing: f64,
}

impl Vegas {
    /// A builder starting from the published defaults.
    pub fn builder() -> VegasBuilder {
        VegasBuilder(Vegas::default())
    }

    /// Below this queue (times `log10root(L)`), the limit grows.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Above this queue (times `log10root(L)`), the limit falls.
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// The weight of each window's new limit against the old one.
    pub fn smoothing(&self) -> f64 {
        self.smoothing
    }

    /// The rule, for one window.
    pub(crate) fn update(&self, window: &Window) -> Step {
        let limit = window.limit;
        let r = log10_root(limit);
        let smooth = |new: f64| (1.0 - self.smoothing) * limit + self.smoothing * new;
        if window.dropping {
            return Step::Cut(smooth(limit - r));
        }
        let (Some(latency), Some(no_load)) = (window.latency.filter(|l| *l > 0.0), window.no_load)
        else {
            return Step::Hold;
        };
        let queue = (limit * (1.0 - no_load / latency)).ceil();
        // Ours: slow start doubles while the queue stays below alpha, and
        // ends with the queue taken off at once.
        if window.slow_start && queue > self.beta * r {
            return Step::Cut((limit - queue + self.alpha * r).max(limit / 2.0));
        }
        if window.slow_start && window.saturated && window.bound && queue < self.alpha * r {
            return Step::Grow(2.0 * limit);
        }
        if queue < self.alpha * r {
            if window.bound {
                return Step::Grow(smooth(limit + r));
            }
        } else if queue > self.beta * r {
            return Step::Cut(smooth(limit - r));
        }
        Step::Hold
    }
}

impl Default for Vegas {
    fn default() -> Self {
        Vegas {
            alpha: 3.0,
            beta: 6.0,
            smoothing: 1.0,
        }
    }
}

impl Eq for Vegas {}

impl Hash for Vegas {
    fn hash<H: Hasher>(&self, state: &mut H) {
        for value in [self.alpha, self.beta, self.smoothing] {
            hash_f64(value, state);
        }
    }
}

/// Builds [`Vegas`]; each value is checked by [`build`](Self::build).
#[derive(Debug, Clone, Copy, PartialEq)]
#[must_use]
pub struct VegasBuilder(Vegas);

impl VegasBuilder {
    /// The queue (times `log10root(L)`) below which the limit grows by
    /// one step: 0 to 100, default 3, as published.
    pub fn alpha(mut self, alpha: f64) -> Self {
        self.0.alpha = alpha;
        self
    }

    /// The queue (times `log10root(L)`) above which the limit falls by
    /// one step: 0 to 100, at least `alpha`; default 6, as published.
    pub fn beta(mut self, beta: f64) -> Self {
        self.0.beta = beta;
        self
    }

    /// The weight of each window's new limit against the old one: more
    /// than 0, at most 1; default 1, as published.
    pub fn smoothing(mut self, smoothing: f64) -> Self {
        self.0.smoothing = smoothing;
        self
    }

    /// The tunables.
    ///
    /// # Errors
    ///
    /// ATR-008 for a value out of its range, or `beta` below `alpha`.
    pub fn build(self) -> Result<Vegas, ConfigError> {
        let v = self.0;
        check_range("alpha", v.alpha, 0.0, 100.0)?;
        check_range("beta", v.beta, v.alpha, 100.0)?;
        check_range("smoothing", v.smoothing, f64::MIN_POSITIVE, 1.0)?;
        Ok(v)
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
            previous: None,
        }
    }

    #[test]
    fn a_queue_above_beta_takes_one_step_down() {
        // L = 20, no-load 100 ms, 150 ms: queue ⌈20 × 1/3⌉ = 7 > 6.
        assert_eq!(
            Vegas::default().update(&window(20.0, 150.0)),
            Step::Cut(19.0)
        );
    }

    #[test]
    fn no_queue_grows_by_one_step_and_a_short_one_too() {
        let vegas = Vegas::default();
        assert_eq!(vegas.update(&window(20.0, 100.0)), Step::Grow(21.0));
        // ⌈20 × (1 − 100/110)⌉ = 2: below alpha.
        assert_eq!(vegas.update(&window(20.0, 110.0)), Step::Grow(21.0));
        // ⌈20 × (1 − 100/120)⌉ = 4: between alpha and beta.
        assert_eq!(vegas.update(&window(20.0, 120.0)), Step::Hold);
    }

    #[test]
    fn steps_scale_with_log10_root_above_100() {
        // L = 200: r = 2, so alpha 6, beta 12; ⌈200 × (1 − 100/120)⌉ = 34.
        assert_eq!(
            Vegas::default().update(&window(200.0, 120.0)),
            Step::Cut(198.0)
        );
        assert_eq!(
            Vegas::default().update(&window(200.0, 100.0)),
            Step::Grow(202.0)
        );
    }

    #[test]
    fn slow_start_doubles_below_alpha_and_takes_the_queue_off_above_beta() {
        let vegas = Vegas::default();
        let starting = |limit, latency| Window {
            slow_start: true,
            ..window(limit, latency)
        };
        // ⌈20 × (1 − 100/110)⌉ = 2 < 3: double.
        assert_eq!(vegas.update(&starting(20.0, 110.0)), Step::Grow(40.0));
        // ⌈80 × (1 − 100/160)⌉ = 30 > 6: 80 − 30 + 3.
        assert_eq!(vegas.update(&starting(80.0, 160.0)), Step::Cut(53.0));
        // ⌈20 × (1 − 100/120)⌉ = 4: between alpha and beta, hold.
        assert_eq!(vegas.update(&starting(20.0, 120.0)), Step::Hold);
        // Not saturated: one step, as after slow start.
        let filling = Window {
            saturated: false,
            ..starting(20.0, 110.0)
        };
        assert_eq!(vegas.update(&filling), Step::Grow(21.0));
    }

    #[test]
    fn an_unbound_limit_does_not_grow_and_drops_step_down() {
        let vegas = Vegas::default();
        let mut idle = window(20.0, 100.0);
        idle.bound = false;
        assert_eq!(vegas.update(&idle), Step::Hold);
        idle.dropping = true;
        assert_eq!(vegas.update(&idle), Step::Cut(19.0));
    }

    #[test]
    fn smoothing_weighs_the_new_limit() {
        let vegas = Vegas::builder().smoothing(0.5).build().unwrap();
        assert_eq!(vegas.update(&window(20.0, 150.0)), Step::Cut(19.5));
    }

    #[test]
    fn beta_below_alpha_is_atr_008() {
        let err = Vegas::builder().alpha(5.0).beta(4.0).build().unwrap_err();
        assert_eq!(err.code(), "ATR-008");
    }
}
