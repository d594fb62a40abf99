//! How a circuit breaker is configured: [`CircuitBreakerConfig`] and its
//! builder, generated from the circuit breaker's keys (`bulkhead-keys`'
//! `table/circuit_breaker.rs`), and the [`SlidingWindow`] kinds.

use std::time::Duration;

use crate::config::key_of;
use crate::keys::{PolicyKind, ValueKind};
use crate::rejection::RejectionKinds;

bulkhead_keys::__circuit_breaker_keys!(crate::config::policy_config! {
    kind: CircuitBreaker;
    /// The resolved configuration of a circuit breaker.
    ///
    /// Defaults are Resilience4j's: the breaker opens when at least half of
    /// the last 100 calls failed (once 100 calls were recorded), stays open
    /// for 60 s, then lets 10 trial calls decide. A call slower than 60 s is
    /// slow; slowness alone opens the breaker only if every call of the
    /// window was slow.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_core::{CircuitBreakerConfig, RejectionKind, SlidingWindow};
    ///
    /// let config = CircuitBreakerConfig::builder()
    ///     .failure_rate_threshold(25.0)
    ///     .sliding_window(SlidingWindow::Time)
    ///     .sliding_window_size(10)
    ///     .minimum_calls(20)
    ///     .wait_in_open(Duration::from_secs(5))
    ///     .ignore_on([RejectionKind::BulkheadFull])
    ///     .build()?;
    /// assert_eq!(config.failure_rate_threshold(), 25.0);
    /// assert_eq!(
    ///     config.to_string(),
    ///     "failure_rate_threshold = 25, sliding_window = time, sliding_window_size = 10, \
    ///      minimum_calls = 20, wait_in_open = 5s, permitted_calls_in_half_open = 10, \
    ///      slow_call_threshold = 1m, slow_call_rate_threshold = 100, ignore_on = [BulkheadFull]"
    /// );
    /// # Ok::<(), bulkhead_core::ConfigError>(())
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct CircuitBreakerConfig;
    /// Explicit values for a circuit breaker, laid over a base
    /// configuration.
    ///
    /// Only the values set here override the base (the named configuration
    /// given by [`config`](Self::config), else `default`); see the registry
    /// for the full precedence. Values are checked when the configuration
    /// is resolved.
    #[derive(Debug, Clone, Default, PartialEq)]
    #[must_use]
    pub struct CircuitBreakerConfigBuilder;
    extra {}
    errors: "ATR-008 if a threshold, the window size, `minimum_calls` or \
        `permitted_calls_in_half_open` is out of range, or `wait_in_open` or \
        `slow_call_threshold` is zero.";
});

impl CircuitBreakerConfig {
    /// The default failure rate that opens the breaker: 50 (percent).
    pub const DEFAULT_FAILURE_RATE_THRESHOLD: f32 = 50.0;
    /// The default window: the last [`DEFAULT_SLIDING_WINDOW_SIZE`] calls.
    ///
    /// [`DEFAULT_SLIDING_WINDOW_SIZE`]: Self::DEFAULT_SLIDING_WINDOW_SIZE
    pub const DEFAULT_SLIDING_WINDOW: SlidingWindow = SlidingWindow::Count;
    /// The default window size: 100 (calls, or seconds for a time window).
    pub const DEFAULT_SLIDING_WINDOW_SIZE: u32 = 100;
    /// The largest window size: a million calls or seconds.
    pub const MAX_SLIDING_WINDOW_SIZE: u32 =
        match key_of(PolicyKind::CircuitBreaker, "sliding_window_size").kind() {
            ValueKind::Count { max, .. } => max,
            _ => panic!("sliding_window_size is a count"),
        };
    /// The default number of calls recorded before any rate counts: 100.
    pub const DEFAULT_MINIMUM_CALLS: u32 = 100;
    /// The default time an open breaker waits before trial calls: 60 s.
    pub const DEFAULT_WAIT_IN_OPEN: Duration = Duration::from_secs(60);
    /// The default number of trial calls in half-open: 10.
    pub const DEFAULT_PERMITTED_CALLS_IN_HALF_OPEN: u32 = 10;
    /// The default duration above which a call is slow: 60 s.
    pub const DEFAULT_SLOW_CALL_THRESHOLD: Duration = Duration::from_secs(60);
    /// The default slow-call rate that opens the breaker: 100 (percent).
    pub const DEFAULT_SLOW_CALL_RATE_THRESHOLD: f32 = 100.0;

    /// The number of calls below which no rate is computed, for the closed
    /// state's window.
    pub(super) fn closed_minimum(&self) -> u32 {
        match self.sliding_window {
            SlidingWindow::Count => self.minimum_calls.min(self.sliding_window_size),
            SlidingWindow::Time => self.minimum_calls,
        }
    }

    /// The number of trial outcomes that decide a half-open breaker.
    pub(super) fn half_open_minimum(&self) -> u32 {
        self.minimum_calls.min(self.permitted_calls_in_half_open)
    }

    /// Whether a call's duration can change anything: see
    /// [`BreakerPermit::tracks_slow_calls`](super::BreakerPermit::tracks_slow_calls).
    pub(super) fn tracks_slow_calls(&self) -> bool {
        self.slow_call_threshold < Duration::MAX
    }
}

/// Which calls the failure and slow-call rates are computed over.
///
/// # Examples
///
/// ```
/// use bulkhead_core::SlidingWindow;
///
/// assert_eq!(SlidingWindow::parse("sliding_window", "time"), Ok(SlidingWindow::Time));
/// let err = SlidingWindow::parse("sliding_window", "counted").unwrap_err();
/// assert_eq!(err.code(), "ATR-010");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum SlidingWindow {
    /// The last `sliding_window_size` calls.
    #[default]
    Count,
    /// The calls of the last `sliding_window_size` seconds, on the breaker's
    /// clock.
    Time,
}

crate::config::choice_names! {
    SlidingWindow {
        Count => "count",
        Time => "time",
    }
    /// The name used in attributes and configuration: `count` or `time`.
    fn name;
    /// Parses `count` or `time`, as given for `key`.
    ///
    /// # Errors
    ///
    /// [`ConfigError::InvalidChoice`](crate::ConfigError::InvalidChoice) (ATR-010) for anything else.
    fn parse;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RejectionKind;

    #[test]
    fn defaults_are_resilience4js() {
        let config = CircuitBreakerConfig::builder().build().unwrap();
        assert_eq!(config, CircuitBreakerConfig::default());
        assert_eq!(config.failure_rate_threshold(), 50.0);
        assert_eq!(config.sliding_window(), SlidingWindow::Count);
        assert_eq!(config.sliding_window_size(), 100);
        assert_eq!(config.minimum_calls(), 100);
        assert_eq!(config.wait_in_open(), Duration::from_secs(60));
        assert_eq!(config.permitted_calls_in_half_open(), 10);
        assert_eq!(config.slow_call_threshold(), Duration::from_secs(60));
        assert_eq!(config.slow_call_rate_threshold(), 100.0);
        assert!(config.ignore_on().is_empty());
        assert_eq!(
            config.to_string(),
            "failure_rate_threshold = 50, sliding_window = count, sliding_window_size = 100, \
             minimum_calls = 100, wait_in_open = 1m, permitted_calls_in_half_open = 10, \
             slow_call_threshold = 1m, slow_call_rate_threshold = 100, ignore_on = []"
        );
    }

    #[test]
    fn rate_thresholds_outside_zero_to_a_hundred_are_atr_008() {
        for key in ["failure_rate_threshold", "slow_call_rate_threshold"] {
            let with = |value: f32| {
                let builder = CircuitBreakerConfig::builder();
                match key {
                    "failure_rate_threshold" => builder.failure_rate_threshold(value),
                    _ => builder.slow_call_rate_threshold(value),
                }
                .build()
            };
            for good in [0.001, 33.3, 100.0] {
                assert!(with(good).is_ok(), "{key} = {good}");
            }
            for bad in [0.0, -1.0, 100.5, f32::NAN, f32::INFINITY] {
                let err = with(bad).unwrap_err();
                assert_eq!(err.code(), "ATR-008", "{key} = {bad}");
                assert_eq!(err.key(), key);
            }
        }
        let err = CircuitBreakerConfig::builder()
            .failure_rate_threshold(120.0)
            .build()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "ATR-008: failure_rate_threshold must be more than 0 and at most 100, got 120"
        );
    }

    #[test]
    fn counts_below_one_are_atr_008() {
        let builders = [
            (
                "minimum_calls",
                CircuitBreakerConfig::builder().minimum_calls(0),
            ),
            (
                "permitted_calls_in_half_open",
                CircuitBreakerConfig::builder().permitted_calls_in_half_open(0),
            ),
            (
                "sliding_window_size",
                CircuitBreakerConfig::builder().sliding_window_size(0),
            ),
        ];
        for (key, builder) in builders {
            let err = builder.build().unwrap_err();
            assert_eq!(err.code(), "ATR-008", "{key}");
            assert_eq!(err.key(), key);
            assert!(
                err.to_string()
                    .starts_with(&format!("ATR-008: {key} must be between 1 and ")),
                "{err}"
            );
        }
    }

    #[test]
    fn a_zero_wait_in_open_or_slow_call_threshold_is_atr_008() {
        let builders = [
            (
                "wait_in_open",
                CircuitBreakerConfig::builder().wait_in_open(Duration::ZERO),
            ),
            (
                "slow_call_threshold",
                CircuitBreakerConfig::builder().slow_call_threshold(Duration::ZERO),
            ),
        ];
        for (key, builder) in builders {
            let err = builder.build().unwrap_err();
            assert_eq!(err.code(), "ATR-008", "{key}");
            assert_eq!(
                err.to_string(),
                format!("ATR-008: {key} must be longer than zero, got 0s")
            );
            let err = builder
                .build_keyed(
                    &CircuitBreakerConfig::default(),
                    "circuit_breaker.instances.x.",
                )
                .unwrap_err();
            assert_eq!(err.key(), format!("circuit_breaker.instances.x.{key}"));
        }
        let tiny = Duration::from_nanos(1);
        let config = CircuitBreakerConfig::builder()
            .wait_in_open(tiny)
            .slow_call_threshold(tiny)
            .build()
            .unwrap();
        assert_eq!(config.wait_in_open(), tiny);
        assert_eq!(config.slow_call_threshold(), tiny);
    }

    #[test]
    fn a_window_above_a_million_is_atr_008() {
        let max = CircuitBreakerConfig::MAX_SLIDING_WINDOW_SIZE;
        let config = CircuitBreakerConfig::builder().sliding_window_size(max);
        assert_eq!(config.build().unwrap().sliding_window_size(), max);
        let err = CircuitBreakerConfig::builder()
            .sliding_window_size(max + 1)
            .build()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "ATR-008: sliding_window_size must be between 1 and 1000000, got 1000001"
        );
    }

    #[test]
    fn an_unknown_window_kind_is_atr_010() {
        assert_eq!(
            SlidingWindow::parse("sliding_window", " count "),
            Ok(SlidingWindow::Count)
        );
        for bad in ["counted", "Count", "TIME", ""] {
            let err = SlidingWindow::parse("circuit_breaker.instances.x.sliding_window", bad)
                .unwrap_err();
            assert_eq!(err.code(), "ATR-010", "{bad:?}");
            assert_eq!(err.key(), "circuit_breaker.instances.x.sliding_window");
        }
        let err = SlidingWindow::parse("sliding_window", "counted").unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"ATR-010: sliding_window must be one of count, time, got "counted""#
        );
    }

    #[test]
    fn a_key_prefix_names_the_full_key() {
        let err = CircuitBreakerConfig::builder()
            .minimum_calls(0)
            .build_keyed(
                &CircuitBreakerConfig::default(),
                "circuit_breaker.configs.slow.",
            )
            .unwrap_err();
        assert_eq!(err.key(), "circuit_breaker.configs.slow.minimum_calls");
    }

    #[test]
    fn only_explicit_values_override_the_base() {
        let base = CircuitBreakerConfig::builder()
            .failure_rate_threshold(20.0)
            .sliding_window(SlidingWindow::Time)
            .wait_in_open(Duration::from_secs(5))
            .ignore_on([RejectionKind::Timeout])
            .build()
            .unwrap();
        let config = CircuitBreakerConfig::builder()
            .minimum_calls(7)
            .build_on(&base)
            .unwrap();
        assert_eq!(config.minimum_calls(), 7);
        assert_eq!(config.failure_rate_threshold(), 20.0);
        assert_eq!(config.sliding_window(), SlidingWindow::Time);
        assert_eq!(config.wait_in_open(), Duration::from_secs(5));
        assert!(config.ignore_on().contains(RejectionKind::Timeout));
        let builder = CircuitBreakerConfig::builder().config("slow");
        assert_eq!(builder.config_name(), Some("slow"));
    }

    #[test]
    fn a_count_window_smaller_than_minimum_calls_needs_only_to_be_full() {
        let config = CircuitBreakerConfig::builder()
            .sliding_window_size(10)
            .minimum_calls(50)
            .permitted_calls_in_half_open(4)
            .build()
            .unwrap();
        assert_eq!(config.closed_minimum(), 10);
        assert_eq!(config.half_open_minimum(), 4);
        let time = CircuitBreakerConfig::builder()
            .sliding_window(SlidingWindow::Time)
            .sliding_window_size(10)
            .minimum_calls(50)
            .build()
            .unwrap();
        assert_eq!(time.closed_minimum(), 50);
    }
}
