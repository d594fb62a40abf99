//! Where the retry delay is computed: exponential backoff, then the range
//! jitter draws from, cut at the cap so that no delay exceeds
//! `max_wait_interval`.
//!
//! With backoff `b`, jitter `j` and cap `c`, the delay is drawn uniformly
//! from
//!
//! ```text
//! [min(b, c) * (1 - j),  min(b * (1 + j), c)]
//! ```
//!
//! - while `b * (1 + j) <= c` that is `b`'s whole jitter range, untouched;
//! - once `b >= c` it is `[c * (1 - j), c]`: callers whose backoff reached
//!   the cap still spread out, below it (Resilience4j caps the randomized
//!   delay instead, which puts a share of them at exactly the cap);
//! - in between, `b`'s range cut at the cap.
//!
//! Both ends only grow with `b`, so delays never shrink from one attempt to
//! the next on average. Every step saturates: a delay too large for a
//! [`Duration`] becomes [`Duration::MAX`] (before the cap), and nothing here
//! panics, whatever the attempt number.

use std::time::Duration;

use super::config::RetryConfig;

/// The delay after the `failed_attempt`-th attempt failed (1 for the first
/// call), given `unit`, a random number in `0.0..1.0` that picks where in
/// the delay's range it falls (0: the shortest).
pub(crate) fn delay(config: &RetryConfig, failed_attempt: u32, unit: f64) -> Duration {
    let exponent = i32::try_from(failed_attempt.saturating_sub(1)).unwrap_or(i32::MAX);
    let backoff = scale(config.wait(), config.backoff_multiplier().powi(exponent));
    let (shortest, longest) = range(backoff, config.jitter(), config.max_wait_interval());
    between(shortest, longest, unit)
}

/// The shortest and longest delay for `backoff`: its jitter range, cut at
/// `cap` (see the module's docs).
fn range(backoff: Duration, jitter: f64, cap: Option<Duration>) -> (Duration, Duration) {
    let shortest = scale(backoff, 1.0 - jitter);
    let longest = scale(backoff, 1.0 + jitter);
    match cap {
        Some(cap) => (shortest.min(scale(cap, 1.0 - jitter)), longest.min(cap)),
        None => (shortest, longest),
    }
}

/// The point `unit` of the way from `shortest` to `longest`, never outside
/// them (a `unit` outside `0.0..=1.0`, or NaN, is taken as the nearest end).
fn between(shortest: Duration, longest: Duration, unit: f64) -> Duration {
    if shortest >= longest || unit.is_nan() || unit <= 0.0 {
        return shortest;
    }
    let span = (longest - shortest).as_secs_f64() * unit.min(1.0);
    let offset = Duration::try_from_secs_f64(span).unwrap_or(Duration::MAX);
    shortest.saturating_add(offset).min(longest)
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

    /// The draws `0, 1/n, ..., 1`.
    fn units(n: u32) -> impl Iterator<Item = f64> {
        (0..=n).map(move |i| f64::from(i) / f64::from(n))
    }

    /// A small deterministic generator, so that a failure can be replayed.
    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        /// In `0.0..1.0`.
        fn unit(&mut self) -> f64 {
            (self.next() >> 11) as f64 / (1u64 << 53) as f64
        }
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
        let uncapped = config(100, 10.0, None, 0.9);
        assert_eq!(delay(&uncapped, u32::MAX, 1.0), Duration::MAX);
        assert_eq!(
            delay(&uncapped, 1_000, 0.0),
            scale(Duration::MAX, 1.0 - 0.9)
        );
        let capped = config(100, 10.0, Some(60_000), 0.9);
        assert_eq!(delay(&capped, u32::MAX, 0.0), ms(6_000));
        assert_eq!(delay(&capped, u32::MAX, 1.0), ms(60_000));
        let zero = config(0, 10.0, None, 0.9);
        assert_eq!(delay(&zero, u32::MAX, 0.5), Duration::ZERO);
        assert_eq!(scale(ms(1), f64::NAN), Duration::ZERO);
        assert_eq!(scale(ms(1), f64::INFINITY), Duration::MAX);
        assert_eq!(scale(Duration::MAX, 2.0), Duration::MAX);
        assert_eq!(between(ms(1), ms(3), f64::NAN), ms(1));
        assert_eq!(between(ms(1), ms(3), 7.0), ms(3));
        assert_eq!(between(Duration::ZERO, Duration::MAX, 1.0), Duration::MAX);
    }

    #[test]
    fn jitter_spreads_an_uncapped_delay_over_its_whole_range() {
        let base = ms(1000);
        for factor in [0.1, 0.5, 0.99] {
            let config = config(1000, 1.0, None, factor);
            let shortest = scale(base, 1.0 - factor);
            let longest = scale(base, 1.0 + factor);
            for unit in units(1000) {
                let d = delay(&config, 1, unit);
                assert!(shortest <= d && d <= longest, "{d:?} for unit {unit}");
            }
            assert_eq!(delay(&config, 1, 0.0), shortest);
            assert_eq!(delay(&config, 1, 1.0), longest);
        }
    }

    #[test]
    fn the_cap_bounds_jittered_delays_and_capped_delays_spread_below_it() {
        // The review's case: uncapped jitter would reach 1.5 s.
        let config = config(100, 2.0, Some(1000), 0.5);
        for attempt in 1..=64 {
            for unit in units(1000) {
                let d = delay(&config, attempt, unit);
                assert!(d <= ms(1000), "{d:?} after attempt {attempt}");
            }
        }
        // Attempt 3, backoff 400 ms: its range [200, 600] fits, untouched.
        assert_eq!(delay(&config, 3, 0.0), ms(200));
        assert_eq!(delay(&config, 3, 1.0), ms(600));
        // Attempt 4, backoff 800 ms: [400, 1200] is cut at the cap.
        assert_eq!(delay(&config, 4, 0.0), ms(400));
        assert_eq!(delay(&config, 4, 1.0), ms(1000));
        // Attempt 12, backoff 204.8 s: [cap * (1 - jitter), cap].
        assert_eq!(delay(&config, 12, 0.0), ms(500));
        assert_eq!(delay(&config, 12, 0.5), ms(750));
        assert_eq!(delay(&config, 12, 1.0), ms(1000));
        let distinct: std::collections::BTreeSet<_> =
            units(199).map(|unit| delay(&config, 12, unit)).collect();
        assert_eq!(distinct.len(), 200, "every draw its own delay");
    }

    /// Over random configurations, attempts and draws: no delay exceeds the
    /// cap; a delay whose jitter range fits under the cap is exactly the
    /// uncapped one; any other is at least the lower end of its jitter range
    /// or of the cap's, whichever is lower.
    #[test]
    fn no_delay_exceeds_the_cap_and_delays_below_it_keep_their_jitter_range() {
        for seed in 1..=500u64 {
            let mut rng = XorShift(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
            let wait = Duration::from_nanos(rng.below(2_000_000_000));
            let multiplier = 1.0 + rng.unit() * 3.0;
            let cap = Duration::from_nanos(1 + rng.below(60_000_000_000));
            let jitter = match seed % 4 {
                0 => 0.0,
                1 => 0.999_999,
                _ => rng.unit(),
            };
            let build = |cap: Option<Duration>| {
                RetryConfig::builder()
                    .wait(wait)
                    .backoff_multiplier(multiplier)
                    .max_wait_interval(cap)
                    .jitter(jitter)
                    .build()
                    .unwrap()
            };
            let (capped, uncapped) = (build(Some(cap)), build(None));
            let attempts = (1..=64).chain([100, 1_000, u32::MAX]);
            for attempt in attempts {
                let case = format!(
                    "seed {seed}: wait {wait:?} x {multiplier}, cap {cap:?}, \
                     jitter {jitter}, attempt {attempt}"
                );
                let shortest = delay(&uncapped, attempt, 0.0);
                let longest = delay(&uncapped, attempt, 1.0);
                for unit in [0.0, rng.unit(), rng.unit(), 1.0 - f64::EPSILON, 1.0] {
                    let d = delay(&capped, attempt, unit);
                    assert!(d <= cap, "{d:?} above the cap; {case}, unit {unit}");
                    if longest <= cap {
                        assert_eq!(d, delay(&uncapped, attempt, unit), "{case}");
                    } else {
                        let floor = shortest.min(cap.mul_f64(1.0 - jitter));
                        assert!(d >= floor, "{d:?} below {floor:?}; {case}");
                    }
                }
            }
        }
    }
}
