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
//!
//! Below a limit of 240 the thresholds are a share of the limit instead of
//! `alpha` and `beta` calls: `alpha × L / 120` and `beta × L / 120` (2.5 %
//! and 5 % of the limit with the defaults) when that is less than the
//! published `alpha × r` and `beta × r`, and the queue estimate is not
//! rounded up. The limit settles with its queue between the two, so the
//! published 3 to 6 calls kept it 3 to 6 calls above the dependency's
//! capacity: 1.3 times a capacity of 20, twice a capacity of 5. A share of
//! the limit is the relative delay Gradient2's and AIMD's tolerance
//! (1.05) allow; and rounding up turns any latency above the no-load one,
//! noise included, into a queued call, the whole allowance of a small
//! limit. In slow start a queue between the two grows the limit one step.

use std::hash::{Hash, Hasher};

use super::rule::{Step, Window, hash_f64, log10_root};
use crate::config::{ConfigError, check_range};

/// The tunables of [`Adaptive::Vegas`](super::Adaptive::Vegas), built by
/// [`Vegas::builder`]. The queue thresholds are multiples of
/// `log10root(limit)`, as published, or of `limit / 120` below a limit of
/// 240 if that is smaller.
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

    /// Below this queue (times `log10root(L)`, or `L / 120` if smaller), the
    /// limit grows.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Above this queue (times `log10root(L)`, or `L / 120` if smaller), the
    /// limit falls.
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// The weight of each window's new limit against the old one.
    pub fn smoothing(&self) -> f64 {
        self.smoothing
    }

    /// The queue below which the limit grows and the queue above which it
    /// falls, at `limit`: `alpha` and `beta` times `log10root(limit)` as
    /// published, or times `limit / 120` if that is smaller (ours: a share
    /// of a small limit, 2.5 % and 5 % of it with the defaults).
    pub(crate) fn thresholds(&self, limit: f64) -> (f64, f64) {
        let share = log10_root(limit).min(limit / SMALL_LIMIT);
        let alpha = self.alpha * share;
        (alpha, self.beta * share)
    }

    /// The rule, for one window.
    pub(crate) fn update(&self, window: &Window) -> Step {
        let limit = window.limit;
        let r = log10_root(limit);
        let (alpha, beta) = self.thresholds(limit);
        let smooth = |new: f64| (1.0 - self.smoothing) * limit + self.smoothing * new;
        if window.dropping {
            return Step::Cut(smooth(limit - r));
        }
        let (Some(latency), Some(no_load)) = (window.latency.filter(|l| *l > 0.0), window.no_load)
        else {
            return Step::Hold;
        };
        let queue = limit * (1.0 - no_load / latency);
        // Ours: slow start doubles while the queue stays below alpha, and
        // ends with the queue taken off at once.
        if window.slow_start && queue > beta {
            return Step::Cut((limit - queue + alpha).max(limit / 2.0));
        }
        if window.slow_start && window.saturated && window.bound && queue < alpha {
            return Step::Grow(2.0 * limit);
        }
        if queue > beta {
            return Step::Cut(smooth(limit - r));
        }
        // Between alpha and beta Vegas settles: it holds, or in slow start
        // grows a step.
        match (window.bound, queue < alpha || window.slow_start) {
            (true, true) => Step::Grow(smooth(limit + r)),
            _ => Step::Hold,
        }
    }
}

/// The queue thresholds are `alpha` and `beta` times the limit over this,
/// where that is less than the published allowance (see
/// [`Vegas::thresholds`]).
const SMALL_LIMIT: f64 = 120.0;

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
    /// The queue (times `log10root(L)`, or `L / 120` if smaller) below
    /// which the limit grows by one step: 0 to 100, default 3, as
    /// published.
    pub fn alpha(mut self, alpha: f64) -> Self {
        self.0.alpha = alpha;
        self
    }

    /// The queue (times `log10root(L)`, or `L / 120` if smaller) above
    /// which the limit falls by one step: 0 to 100, at least `alpha`;
    /// default 6, as published.
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
        // L = 20, no-load 100 ms, 150 ms: queue 20 × 1/3 = 6.7 > beta
        // (6 × 20 / 120 = 1).
        assert_eq!(
            Vegas::default().update(&window(20.0, 150.0)),
            Step::Cut(19.0)
        );
    }

    #[test]
    fn the_published_allowance_holds_from_a_limit_of_240_and_a_share_below() {
        let vegas = Vegas::default();
        // A twentieth and a tenth of a small limit...
        assert_eq!(vegas.thresholds(20.0), (0.5, 1.0));
        assert_eq!(vegas.thresholds(60.0), (1.5, 3.0));
        // ...and 3 and 6 times log10root(L) from 240 on, as published.
        assert_eq!(vegas.thresholds(240.0), (6.0, 12.0));
        assert_eq!(vegas.thresholds(500.0), (6.0, 12.0));
        assert_eq!(vegas.thresholds(1000.0), (9.0, 18.0));
    }

    #[test]
    fn below_alpha_grows_a_step_and_between_alpha_and_beta_holds() {
        let vegas = Vegas::default();
        assert_eq!(vegas.update(&window(20.0, 100.0)), Step::Grow(21.0));
        // 20 × (1 − 100/102) = 0.39: below alpha (0.5).
        assert_eq!(vegas.update(&window(20.0, 102.0)), Step::Grow(21.0));
        // 20 × (1 − 100/104) = 0.77: between alpha and beta (1).
        assert_eq!(vegas.update(&window(20.0, 104.0)), Step::Hold);
        // 20 × (1 − 100/110) = 1.8: above beta. (The published 3 and 6
        // calls, a quarter of the limit, let it grow and hold here.)
        assert_eq!(vegas.update(&window(20.0, 110.0)), Step::Cut(19.0));
    }

    #[test]
    fn steps_scale_with_log10_root_above_100() {
        // L = 200: r = 2, alpha and beta 5 and 10; 200 × (1 − 100/120) = 33.
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
        // 20 × (1 − 100/101) = 0.2 < 0.5: double.
        assert_eq!(vegas.update(&starting(20.0, 101.0)), Step::Grow(40.0));
        // 80 × (1 − 100/160) = 30 > 4: 80 − 30 + 2.
        assert_eq!(vegas.update(&starting(80.0, 160.0)), Step::Cut(52.0));
        // 0.77, between alpha and beta: one step.
        assert_eq!(vegas.update(&starting(20.0, 104.0)), Step::Grow(21.0));
        // Not saturated: one step, as after slow start.
        let filling = Window {
            saturated: false,
            ..starting(20.0, 101.0)
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
