//! Where the retry delay is computed: exponential backoff, then the cap,
//! then jitter (as Resilience4j's `ofExponentialRandomBackoff` does, so
//! that callers whose backoff reached the cap still spread out).
//!
//! Every step saturates: a delay too large for a [`Duration`] becomes
//! [`Duration::MAX`] (before the cap), and nothing here panics, whatever the
//! attempt number.

use std::time::Duration;

use super::config::RetryConfig;

/// The delay after the `failed_attempt`-th attempt failed (1 for the first
/// call), given `unit`, a random number in `0.0..1.0` that picks where in
/// the jitter range the delay falls.
pub(crate) fn delay(config: &RetryConfig, failed_attempt: u32, unit: f64) -> Duration {
    let exponent = i32::try_from(failed_attempt.saturating_sub(1)).unwrap_or(i32::MAX);
    let backoff = scale(config.wait(), config.backoff_multiplier().powi(exponent));
    let capped = match config.max_wait_interval() {
        Some(cap) => backoff.min(cap),
        None => backoff,
    };
    jitter(capped, config.jitter(), unit)
}

/// `delay` moved uniformly within `jitter` of itself: `unit = 0` gives
/// `delay * (1 - jitter)`, `unit` close to 1 gives close to
/// `delay * (1 + jitter)`.
pub(crate) fn jitter(delay: Duration, jitter: f64, unit: f64) -> Duration {
    if jitter == 0.0 {
        return delay;
    }
    let unit = unit.clamp(0.0, 1.0);
    scale(delay, 1.0 + jitter * (2.0 * unit - 1.0))
}

/// `duration * factor`, saturating at [`Duration::MAX`]; zero for a negative
/// or NaN product. A factor of exactly 1 keeps the duration to the
/// nanosecond.
fn scale(duration: Duration, factor: f64) -> Duration {
    if duration.is_zero() || factor == 1.0 {
        return duration;
    }
    let secs = duration.as_secs_f64() * factor;
    if secs >= 0.0 {
        Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
    } else {
        Duration::ZERO
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rejection::RejectionKind;

    fn config(wait_ms: u64, multiplier: f64, cap_ms: Option<u64>, jitter: f64) -> RetryConfig {
        RetryConfig::builder()
            .wait(Duration::from_millis(wait_ms))
            .backoff_multiplier(multiplier)
            .max_wait_interval(cap_ms.map(Duration::from_millis))
            .jitter(jitter)
            .abort_on([RejectionKind::CircuitOpen])
            .build()
            .unwrap()
    }

    fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    #[test]
    fn a_multiplier_of_one_waits_the_same_every_time() {
        let config = config(500, 1.0, None, 0.0);
        for attempt in [1, 2, 3, 10, u32::MAX] {
            assert_eq!(delay(&config, attempt, 0.7), ms(500), "attempt {attempt}");
        }
    }

    #[test]
    fn exponential_backoff_grows_until_the_cap() {
        let config = config(100, 2.0, Some(1000), 0.0);
        let delays: Vec<_> = (1..=6).map(|n| delay(&config, n, 0.0)).collect();
        assert_eq!(
            delays,
            [ms(100), ms(200), ms(400), ms(800), ms(1000), ms(1000)]
        );
    }

    #[test]
    fn huge_attempts_saturate_instead_of_panicking() {
        let uncapped = config(100, 10.0, None, 1.0);
        assert_eq!(delay(&uncapped, u32::MAX, 0.99), Duration::MAX);
        assert_eq!(delay(&uncapped, 1_000, 0.5), Duration::MAX);
        let capped = config(100, 10.0, Some(60_000), 1.0);
        assert_eq!(delay(&capped, u32::MAX, 0.5), ms(60_000));
        assert_eq!(delay(&capped, u32::MAX, 1.0), ms(120_000));
        assert_eq!(
            delay(&capped, u32::MAX, 0.0),
            Duration::ZERO,
            "jitter 1 spans from zero"
        );
        let zero = config(0, 10.0, None, 1.0);
        assert_eq!(delay(&zero, u32::MAX, 0.5), Duration::ZERO);
        assert_eq!(scale(ms(1), f64::NAN), Duration::ZERO);
        assert_eq!(scale(ms(1), f64::INFINITY), Duration::MAX);
        assert_eq!(scale(Duration::MAX, 2.0), Duration::MAX);
    }

    #[test]
    fn jitter_stays_within_its_bounds_for_every_draw() {
        let base = ms(1000);
        for factor in [0.1, 0.5, 1.0] {
            let low = scale(base, 1.0 - factor);
            let high = scale(base, 1.0 + factor);
            for i in 0..=1000 {
                let unit = f64::from(i) / 1000.0;
                let d = jitter(base, factor, unit);
                assert!(low <= d && d <= high, "{d:?} for unit {unit}");
            }
            assert_eq!(jitter(base, factor, 0.0), low);
            assert_eq!(jitter(base, factor, 1.0), high);
        }
        assert_eq!(jitter(base, 0.0, 0.9), base);
    }

    #[test]
    fn the_cap_applies_before_jitter_so_capped_delays_still_spread() {
        let config = config(100, 2.0, Some(1000), 0.5);
        // Attempt 12: the backoff (204.8 s) is capped to 1 s, then jittered.
        assert_eq!(delay(&config, 12, 0.0), ms(500));
        assert_eq!(delay(&config, 12, 0.5), ms(1000));
        assert_eq!(delay(&config, 12, 1.0), ms(1500));
        let distinct: std::collections::BTreeSet<_> = (0..200)
            .map(|i| delay(&config, 12, f64::from(i) / 200.0))
            .collect();
        assert_eq!(distinct.len(), 200, "every draw its own delay");
    }
}
