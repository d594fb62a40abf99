//! How a circuit breaker is configured: [`CircuitBreakerConfig`], its builder
//! and the [`SlidingWindow`] kinds.

use std::fmt;
use std::time::Duration;

use crate::config::{ConfigError, written_duration};
use crate::keys::{Bound, Float, Key, KeyValue, Origin, Range, ValueKind};
use crate::rejection::{RejectionKind, RejectionKinds};

/// The circuit breaker's keys, each checked by the builder with its row's
/// range.
mod key {
    use super::*;

    /// A rate threshold: more than 0 (a breaker that opens with no failure
    /// at all is a forced-open one) and at most 100; NaN is refused.
    const PERCENT: ValueKind = ValueKind::Number {
        range: Range::new(Bound::Excluded(0.0), Bound::Included(100.0)),
        float: Float::F32,
    };
    const AT_LEAST_ONE: ValueKind = ValueKind::Count {
        min: 1,
        max: u32::MAX,
    };

    pub(super) const FAILURE_RATE_THRESHOLD: Key = Key::new(
        "failure_rate_threshold",
        PERCENT,
        "50",
        "the failure rate, in percent, at or above which the breaker opens",
    );
    pub(super) const SLIDING_WINDOW: Key = Key::new(
        "sliding_window",
        ValueKind::Choice {
            ty: "SlidingWindow",
            choices: &[SlidingWindow::Count.name(), SlidingWindow::Time.name()],
        },
        "\"count\"",
        "whether rates are computed over the last calls (`count`) or the last seconds (`time`)",
    );
    pub(super) const SLIDING_WINDOW_SIZE: Key = Key::new(
        "sliding_window_size",
        ValueKind::Count {
            min: 1,
            max: CircuitBreakerConfig::MAX_SLIDING_WINDOW_SIZE,
        },
        "100",
        "the window's size, in calls or seconds",
    );
    pub(super) const MINIMUM_CALLS: Key = Key::new(
        "minimum_calls",
        AT_LEAST_ONE,
        "100",
        "how many calls the window must hold before a rate counts",
    );
    pub(super) const WAIT_IN_OPEN: Key = Key::new(
        "wait_in_open",
        ValueKind::Duration { positive: true },
        "\"60s\"",
        "how long an open breaker rejects calls; a call exactly this long after it opened is the first let through",
    );
    pub(super) const PERMITTED_CALLS_IN_HALF_OPEN: Key = Key::new(
        "permitted_calls_in_half_open",
        AT_LEAST_ONE,
        "10",
        "how many trial calls a half-open breaker lets through",
    );
    pub(super) const SLOW_CALL_THRESHOLD: Key = Key::new(
        "slow_call_threshold",
        ValueKind::Duration { positive: true },
        "\"60s\"",
        "the duration above which a call is slow (calls are timed: two clock reads each)",
    );
    pub(super) const SLOW_CALL_RATE_THRESHOLD: Key = Key::new(
        "slow_call_rate_threshold",
        PERCENT,
        "100",
        "the slow-call rate, in percent, at or above which the breaker opens",
    );
    pub(super) const RECORD_IF: Key = Key::new(
        "record_if",
        ValueKind::Predicate,
        "",
        "which of the method's errors are failures (the others are successes); without it, every error",
    )
    .only_in(Origin::Attribute);
    pub(super) const IGNORE_ON: Key = Key::new(
        "ignore_on",
        ValueKind::RejectionKinds,
        "[]",
        "the rejection kinds of inner policies that are not recorded at all",
    );
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

impl SlidingWindow {
    /// The name used in attributes and configuration: `count` or `time`.
    pub const fn name(self) -> &'static str {
        match self {
            SlidingWindow::Count => "count",
            SlidingWindow::Time => "time",
        }
    }

    /// Parses `count` or `time`, as given for `key`.
    ///
    /// # Errors
    ///
    /// [`ConfigError::InvalidChoice`] (ATR-010) for anything else.
    pub fn parse(key: &str, value: &str) -> Result<Self, ConfigError> {
        match value.trim() {
            "count" => Ok(SlidingWindow::Count),
            "time" => Ok(SlidingWindow::Time),
            _ => Err(ConfigError::InvalidChoice {
                key: key.to_owned(),
                value: value.to_owned(),
                choices: "count, time".to_owned(),
            }),
        }
    }
}

impl fmt::Display for SlidingWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The resolved configuration of a circuit breaker.
///
/// Defaults are Resilience4j's: the breaker opens when at least half of the
/// last 100 calls failed (once 100 calls were recorded), stays open for 60 s,
/// then lets 10 trial calls decide. A call slower than 60 s is slow; slowness
/// alone opens the breaker only if every call of the window was slow.
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
pub struct CircuitBreakerConfig {
    failure_rate_threshold: f32,
    sliding_window: SlidingWindow,
    sliding_window_size: u32,
    minimum_calls: u32,
    wait_in_open: Duration,
    permitted_calls_in_half_open: u32,
    slow_call_threshold: Duration,
    slow_call_rate_threshold: f32,
    ignore_on: RejectionKinds,
}

impl CircuitBreakerConfig {
    /// The circuit breaker's keys, in the order its documentation lists
    /// them (see [`PolicyKind::keys`](crate::keys::PolicyKind::keys)).
    pub(crate) const KEYS: &'static [Key] = &[
        key::FAILURE_RATE_THRESHOLD,
        key::SLIDING_WINDOW,
        key::SLIDING_WINDOW_SIZE,
        key::MINIMUM_CALLS,
        key::WAIT_IN_OPEN,
        key::PERMITTED_CALLS_IN_HALF_OPEN,
        key::SLOW_CALL_THRESHOLD,
        key::SLOW_CALL_RATE_THRESHOLD,
        key::RECORD_IF,
        key::IGNORE_ON,
    ];

    /// The default failure rate that opens the breaker: 50 (percent).
    pub const DEFAULT_FAILURE_RATE_THRESHOLD: f32 = 50.0;
    /// The default window: the last [`DEFAULT_SLIDING_WINDOW_SIZE`] calls.
    ///
    /// [`DEFAULT_SLIDING_WINDOW_SIZE`]: Self::DEFAULT_SLIDING_WINDOW_SIZE
    pub const DEFAULT_SLIDING_WINDOW: SlidingWindow = SlidingWindow::Count;
    /// The default window size: 100 (calls, or seconds for a time window).
    pub const DEFAULT_SLIDING_WINDOW_SIZE: u32 = 100;
    /// The largest window size: a million calls or seconds.
    pub const MAX_SLIDING_WINDOW_SIZE: u32 = 1_000_000;
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

    /// A builder starting from no explicit values.
    pub fn builder() -> CircuitBreakerConfigBuilder {
        CircuitBreakerConfigBuilder::default()
    }

    /// Every key that configuration sets (the policy's
    /// [key table](crate::keys::PolicyKind::keys) without the attribute's
    /// own, such as predicates), in the table's order, with its value here
    /// as configuration writes it (`none` for a key left without one): what
    /// a registry's reload compares key by key.
    pub fn values(&self) -> Vec<(&'static str, String)> {
        vec![
            (
                key::FAILURE_RATE_THRESHOLD.name(),
                self.failure_rate_threshold.to_string(),
            ),
            (key::SLIDING_WINDOW.name(), self.sliding_window.to_string()),
            (
                key::SLIDING_WINDOW_SIZE.name(),
                self.sliding_window_size.to_string(),
            ),
            (key::MINIMUM_CALLS.name(), self.minimum_calls.to_string()),
            (
                key::WAIT_IN_OPEN.name(),
                written_duration(self.wait_in_open),
            ),
            (
                key::PERMITTED_CALLS_IN_HALF_OPEN.name(),
                self.permitted_calls_in_half_open.to_string(),
            ),
            (
                key::SLOW_CALL_THRESHOLD.name(),
                written_duration(self.slow_call_threshold),
            ),
            (
                key::SLOW_CALL_RATE_THRESHOLD.name(),
                self.slow_call_rate_threshold.to_string(),
            ),
            (key::IGNORE_ON.name(), self.ignore_on.to_string()),
        ]
    }

    /// The failure rate, in percent, at or above which the breaker opens.
    pub fn failure_rate_threshold(&self) -> f32 {
        self.failure_rate_threshold
    }

    /// Whether rates are computed over the last calls or the last seconds.
    pub fn sliding_window(&self) -> SlidingWindow {
        self.sliding_window
    }

    /// The window's size: calls for a count window, seconds for a time one.
    pub fn sliding_window_size(&self) -> u32 {
        self.sliding_window_size
    }

    /// How many calls the window must hold before a rate is computed at all.
    ///
    /// A count window smaller than this needs only to be full, as in
    /// Resilience4j.
    pub fn minimum_calls(&self) -> u32 {
        self.minimum_calls
    }

    /// How long an open breaker rejects calls before it lets trial calls
    /// through (longer than zero).
    ///
    /// The wait runs on the breaker's clock from the moment it opened, and
    /// ends like every deadline of a [`Clock`](crate::Clock): a call made
    /// exactly `wait_in_open` after the breaker opened is the first one let
    /// through (it turns the breaker half-open); one made a nanosecond
    /// earlier is rejected. Resilience4j lets the first trial in only
    /// strictly after the wait, one tick of its clock later.
    pub fn wait_in_open(&self) -> Duration {
        self.wait_in_open
    }

    /// How many trial calls a half-open breaker lets through.
    pub fn permitted_calls_in_half_open(&self) -> u32 {
        self.permitted_calls_in_half_open
    }

    /// The duration above which a call counts as slow (longer than zero;
    /// [`Duration::MAX`] when calls are not timed).
    pub fn slow_call_threshold(&self) -> Duration {
        self.slow_call_threshold
    }

    /// The slow-call rate, in percent, at or above which the breaker opens.
    pub fn slow_call_rate_threshold(&self) -> f32 {
        self.slow_call_rate_threshold
    }

    /// The rejection kinds (of inner policies) that count neither as
    /// failures nor as successes.
    pub fn ignore_on(&self) -> RejectionKinds {
        self.ignore_on
    }

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

impl Default for CircuitBreakerConfig {
    fn default() -> Self {
        CircuitBreakerConfig {
            failure_rate_threshold: Self::DEFAULT_FAILURE_RATE_THRESHOLD,
            sliding_window: Self::DEFAULT_SLIDING_WINDOW,
            sliding_window_size: Self::DEFAULT_SLIDING_WINDOW_SIZE,
            minimum_calls: Self::DEFAULT_MINIMUM_CALLS,
            wait_in_open: Self::DEFAULT_WAIT_IN_OPEN,
            permitted_calls_in_half_open: Self::DEFAULT_PERMITTED_CALLS_IN_HALF_OPEN,
            slow_call_threshold: Self::DEFAULT_SLOW_CALL_THRESHOLD,
            slow_call_rate_threshold: Self::DEFAULT_SLOW_CALL_RATE_THRESHOLD,
            ignore_on: RejectionKinds::EMPTY,
        }
    }
}

impl fmt::Display for CircuitBreakerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "failure_rate_threshold = {}, sliding_window = {}, sliding_window_size = {}, \
             minimum_calls = {}, wait_in_open = {}, permitted_calls_in_half_open = {}, \
             slow_call_threshold = {}, slow_call_rate_threshold = {}, ignore_on = {}",
            self.failure_rate_threshold,
            self.sliding_window,
            self.sliding_window_size,
            self.minimum_calls,
            humantime::format_duration(self.wait_in_open),
            self.permitted_calls_in_half_open,
            humantime::format_duration(self.slow_call_threshold),
            self.slow_call_rate_threshold,
            self.ignore_on,
        )
    }
}

/// Explicit values for a circuit breaker, laid over a base configuration.
///
/// Only the values set here override the base (the named configuration given
/// by [`config`](Self::config), else `default`); see the registry for the full
/// precedence. Values are checked when the configuration is resolved.
#[derive(Debug, Clone, Default, PartialEq)]
#[must_use]
pub struct CircuitBreakerConfigBuilder {
    config: Option<String>,
    failure_rate_threshold: Option<f32>,
    sliding_window: Option<SlidingWindow>,
    sliding_window_size: Option<u32>,
    minimum_calls: Option<u32>,
    wait_in_open: Option<Duration>,
    permitted_calls_in_half_open: Option<u32>,
    slow_call_threshold: Option<Duration>,
    slow_call_rate_threshold: Option<f32>,
    ignore_on: Option<RejectionKinds>,
}

impl CircuitBreakerConfigBuilder {
    /// Starts from the named configuration instead of `default`.
    pub fn config(mut self, name: impl Into<String>) -> Self {
        self.config = Some(name.into());
        self
    }

    /// The failure rate, in percent, at or above which the breaker opens:
    /// more than 0, at most 100.
    pub fn failure_rate_threshold(mut self, percent: f32) -> Self {
        self.failure_rate_threshold = Some(percent);
        self
    }

    /// Whether rates are computed over the last calls (the default) or the
    /// last seconds.
    pub fn sliding_window(mut self, window: SlidingWindow) -> Self {
        self.sliding_window = Some(window);
        self
    }

    /// The window's size, in calls or seconds: 1 to a million.
    pub fn sliding_window_size(mut self, size: u32) -> Self {
        self.sliding_window_size = Some(size);
        self
    }

    /// How many calls the window must hold before a rate counts (at least 1).
    pub fn minimum_calls(mut self, minimum: u32) -> Self {
        self.minimum_calls = Some(minimum);
        self
    }

    /// How long an open breaker rejects calls before trial calls (longer
    /// than zero): the first call exactly `wait` after it opened is let
    /// through (see [`CircuitBreakerConfig::wait_in_open`]).
    pub fn wait_in_open(mut self, wait: Duration) -> Self {
        self.wait_in_open = Some(wait);
        self
    }

    /// How many trial calls a half-open breaker lets through (at least 1).
    pub fn permitted_calls_in_half_open(mut self, permitted: u32) -> Self {
        self.permitted_calls_in_half_open = Some(permitted);
        self
    }

    /// The duration above which a call counts as slow (longer than zero:
    /// a threshold of zero would make every call that takes any time slow).
    /// Calls are timed (two clock readings each, shared with the other
    /// policies of a composition); [`Duration::MAX`], which no call exceeds,
    /// turns timing off. A composition times calls on the clock's
    /// [`recent`](crate::Clock::recent) readings, to within its resolution
    /// (5 ms on the `SystemClock`), when the threshold is at least 20 times
    /// that resolution (100 ms), and on precise ones below.
    pub fn slow_call_threshold(mut self, threshold: Duration) -> Self {
        self.slow_call_threshold = Some(threshold);
        self
    }

    /// The slow-call rate, in percent, at or above which the breaker opens:
    /// more than 0, at most 100.
    pub fn slow_call_rate_threshold(mut self, percent: f32) -> Self {
        self.slow_call_rate_threshold = Some(percent);
        self
    }

    /// The rejection kinds of inner policies that count neither as failures
    /// nor as successes (replacing the base's list). By default every
    /// rejection is a failure.
    pub fn ignore_on(mut self, kinds: impl IntoIterator<Item = RejectionKind>) -> Self {
        self.ignore_on = Some(kinds.into_iter().collect());
        self
    }

    /// Sets the key named `key` (one of the circuit breaker's
    /// [`keys`](crate::keys::PolicyKind::keys), but for `record_if`, which
    /// only an attribute takes) to `value`, as configuration from outside
    /// the code does. The value is checked when the configuration is built,
    /// as for the other setters.
    ///
    /// # Errors
    ///
    /// CFG-001 if the builder has no such key, or `value` is not of the
    /// kind it takes; ATR-010 for a `sliding_window` that is not one.
    pub fn set_key(self, key: &str, value: KeyValue) -> Result<Self, ConfigError> {
        Ok(match (key, value) {
            // A rate is held as an `f32`, a percentage.
            ("failure_rate_threshold", KeyValue::Number(x)) => {
                self.failure_rate_threshold(x as f32)
            }
            ("sliding_window", KeyValue::Text(window)) => {
                self.sliding_window(SlidingWindow::parse(key, &window)?)
            }
            ("sliding_window_size", KeyValue::Integer(n)) => self.sliding_window_size(n),
            ("minimum_calls", KeyValue::Integer(n)) => self.minimum_calls(n),
            ("wait_in_open", KeyValue::Duration(wait)) => self.wait_in_open(wait),
            ("permitted_calls_in_half_open", KeyValue::Integer(n)) => {
                self.permitted_calls_in_half_open(n)
            }
            ("slow_call_threshold", KeyValue::Duration(threshold)) => {
                self.slow_call_threshold(threshold)
            }
            ("slow_call_rate_threshold", KeyValue::Number(x)) => {
                self.slow_call_rate_threshold(x as f32)
            }
            ("ignore_on", KeyValue::RejectionKinds(kinds)) => self.ignore_on(kinds.iter()),
            (key, value) => return Err(ConfigError::no_such_key(key, &value)),
        })
    }

    /// The named base configuration, if one was chosen.
    pub fn config_name(&self) -> Option<&str> {
        self.config.as_deref()
    }

    /// Resolves the values set here over the built-in defaults.
    ///
    /// # Errors
    ///
    /// ATR-008 if a threshold, the window size, `minimum_calls` or
    /// `permitted_calls_in_half_open` is out of range, or `wait_in_open` or
    /// `slow_call_threshold` is zero.
    pub fn build(&self) -> Result<CircuitBreakerConfig, ConfigError> {
        self.build_on(&CircuitBreakerConfig::default())
    }

    /// Resolves the values set here over `base`.
    ///
    /// # Errors
    ///
    /// ATR-008 if a threshold, the window size, `minimum_calls` or
    /// `permitted_calls_in_half_open` is out of range, or `wait_in_open` or
    /// `slow_call_threshold` is zero.
    pub fn build_on(
        &self,
        base: &CircuitBreakerConfig,
    ) -> Result<CircuitBreakerConfig, ConfigError> {
        self.build_keyed(base, "")
    }

    /// Like [`build_on`](Self::build_on), naming a bad value's key as
    /// `key_prefix` followed by the key, e.g.
    /// `circuit_breaker.configs.slow.minimum_calls`.
    ///
    /// # Errors
    ///
    /// ATR-008 if a threshold, the window size, `minimum_calls` or
    /// `permitted_calls_in_half_open` is out of range, or `wait_in_open` or
    /// `slow_call_threshold` is zero.
    pub fn build_keyed(
        &self,
        base: &CircuitBreakerConfig,
        key_prefix: &str,
    ) -> Result<CircuitBreakerConfig, ConfigError> {
        let keyed = |e: ConfigError| e.prefixed(key_prefix);
        let count = |key: &Key, value: Option<u32>, base: u32| match value {
            Some(value) => key.check_integer(value.into()).map_err(keyed),
            None => Ok(base),
        };
        let percent = |key: &Key, value: Option<f32>, base: f32| match value {
            Some(value) => key.check_number(value).map_err(keyed),
            None => Ok(base),
        };
        let positive = |key: &Key, value: Option<Duration>, base: Duration| match value {
            Some(value) => key.check_duration(value).map_err(keyed),
            None => Ok(base),
        };
        let sliding_window_size = count(
            &key::SLIDING_WINDOW_SIZE,
            self.sliding_window_size,
            base.sliding_window_size,
        )?;
        Ok(CircuitBreakerConfig {
            failure_rate_threshold: percent(
                &key::FAILURE_RATE_THRESHOLD,
                self.failure_rate_threshold,
                base.failure_rate_threshold,
            )?,
            sliding_window: self.sliding_window.unwrap_or(base.sliding_window),
            sliding_window_size,
            minimum_calls: count(&key::MINIMUM_CALLS, self.minimum_calls, base.minimum_calls)?,
            wait_in_open: positive(&key::WAIT_IN_OPEN, self.wait_in_open, base.wait_in_open)?,
            permitted_calls_in_half_open: count(
                &key::PERMITTED_CALLS_IN_HALF_OPEN,
                self.permitted_calls_in_half_open,
                base.permitted_calls_in_half_open,
            )?,
            slow_call_threshold: positive(
                &key::SLOW_CALL_THRESHOLD,
                self.slow_call_threshold,
                base.slow_call_threshold,
            )?,
            slow_call_rate_threshold: percent(
                &key::SLOW_CALL_RATE_THRESHOLD,
                self.slow_call_rate_threshold,
                base.slow_call_rate_threshold,
            )?,
            ignore_on: self.ignore_on.unwrap_or(base.ignore_on),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
