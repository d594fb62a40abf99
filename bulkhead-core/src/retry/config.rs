//! How a retry policy is configured: [`RetryConfig`] and its builder.

use std::fmt;
use std::time::Duration;

use crate::config::{ConfigError, written_duration, written_or_none};
use crate::keys::{Bound, Float, Key, KeyValue, Origin, Range, ValueKind};
use crate::rejection::{RejectionKind, RejectionKinds};

/// The retry policy's keys, each checked by the builder with its row's
/// range.
mod key {
    use super::*;

    pub(super) const MAX_ATTEMPTS: Key = Key::new(
        "max_attempts",
        ValueKind::Count {
            min: 1,
            max: u32::MAX,
        },
        "3",
        "how many attempts a call gets, the first one included",
    );
    pub(super) const WAIT: Key = Key::new(
        "wait",
        ValueKind::Duration { positive: false },
        "\"500ms\"",
        "the wait after the first failed attempt",
    );
    /// At least 1 and finite (which also refuses NaN).
    pub(super) const BACKOFF_MULTIPLIER: Key = Key::new(
        "backoff_multiplier",
        ValueKind::Number {
            range: Range::new(Bound::Included(1.0), Bound::Unbounded),
            float: Float::F64,
        },
        "1",
        "the factor each further wait grows by",
    );
    pub(super) const MAX_WAIT_INTERVAL: Key = Key::new(
        "max_wait_interval",
        ValueKind::Duration { positive: true },
        "",
        "the longest any wait may be, jitter included: waits at the cap are drawn from `max_wait_interval * (1 - jitter)` to `max_wait_interval`",
    );
    /// At least 0 and below 1. As in Resilience4j, whose
    /// `randomizationFactor` must be below 1: a jitter of 1 would draw
    /// waits down to zero, retrying at once however long `wait` is (a
    /// caller who wants that says `wait = 0`).
    pub(super) const JITTER: Key = Key::new(
        "jitter",
        ValueKind::Number {
            range: Range::new(Bound::Included(0.0), Bound::Excluded(1.0)),
            float: Float::F64,
        },
        "0",
        "the randomization factor: each wait `d` is drawn from `d * (1 ± jitter)`, cut at `max_wait_interval`",
    );
    pub(super) const RETRY_IF: Key = Key::new(
        "retry_if",
        ValueKind::Predicate,
        "",
        "which of the method's errors are retried; without it, every error",
    )
    .only_in(Origin::Attribute);
    pub(super) const ABORT_ON: Key = Key::new(
        "abort_on",
        ValueKind::RejectionKinds,
        "[]",
        "the rejection kinds that end a call at once instead of being retried",
    );
    /// At least 0 and finite.
    pub(super) const BUDGET_RATIO: Key = Key::new(
        "budget_ratio",
        ValueKind::Number {
            range: Range::new(Bound::Included(0.0), Bound::Unbounded),
            float: Float::F64,
        },
        "",
        "the retry budget: over `budget_window`, the instance's retries and hedges stay within this many times its first attempts, plus the minimum; without it, no budget",
    );
    pub(super) const BUDGET_MIN_PER_SECOND: Key = Key::new(
        "budget_min_per_second",
        ValueKind::Count {
            min: 0,
            max: u32::MAX,
        },
        "10",
        "with a `budget_ratio`: the retries and hedges per second of the window the budget allows whatever the first attempts",
    );
    pub(super) const BUDGET_WINDOW: Key = Key::new(
        "budget_window",
        ValueKind::Duration { positive: true },
        "\"10s\"",
        "with a `budget_ratio`: the sliding window over which the budget counts, in tenths",
    );
}

/// The resolved configuration of a retry policy.
///
/// Defaults are Resilience4j's: 3 attempts (the first call included), a fixed
/// 500 ms wait between them, no jitter, no cap, and every rejection retried.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use bulkhead_core::{RejectionKind, RetryConfig};
///
/// let config = RetryConfig::builder()
///     .max_attempts(5)
///     .wait(Duration::from_millis(100))
///     .backoff_multiplier(2.0)
///     .max_wait_interval(Duration::from_secs(1))
///     .abort_on([RejectionKind::BulkheadFull])
///     .build()?;
/// assert_eq!(config.max_attempts(), 5);
/// assert_eq!(
///     config.to_string(),
///     "max_attempts = 5, wait = 100ms, backoff_multiplier = 2, max_wait_interval = 1s, \
///      jitter = 0, abort_on = [BulkheadFull]"
/// );
/// # Ok::<(), bulkhead_core::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryConfig {
    max_attempts: u32,
    wait: Duration,
    backoff_multiplier: f64,
    max_wait_interval: Option<Duration>,
    jitter: f64,
    abort_on: RejectionKinds,
    budget_ratio: Option<f64>,
    budget_min_per_second: u32,
    budget_window: Duration,
}

impl RetryConfig {
    /// The retry policy's keys, in the order its documentation lists them
    /// (see [`PolicyKind::keys`](crate::keys::PolicyKind::keys)).
    pub(crate) const KEYS: &'static [Key] = &[
        key::MAX_ATTEMPTS,
        key::WAIT,
        key::BACKOFF_MULTIPLIER,
        key::MAX_WAIT_INTERVAL,
        key::JITTER,
        key::RETRY_IF,
        key::ABORT_ON,
        key::BUDGET_RATIO,
        key::BUDGET_MIN_PER_SECOND,
        key::BUDGET_WINDOW,
    ];

    /// The default number of attempts, the first call included: 3.
    pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;
    /// The default wait between attempts: 500 ms.
    pub const DEFAULT_WAIT: Duration = Duration::from_millis(500);
    /// The default backoff multiplier, 1: every wait is the same.
    pub const DEFAULT_BACKOFF_MULTIPLIER: f64 = 1.0;
    /// The default jitter, 0: waits are not randomized.
    pub const DEFAULT_JITTER: f64 = 0.0;
    /// The default minimum of a retry budget: 10 retries per second.
    pub const DEFAULT_BUDGET_MIN_PER_SECOND: u32 = 10;
    /// The default window of a retry budget: 10 s.
    pub const DEFAULT_BUDGET_WINDOW: Duration = Duration::from_secs(10);

    /// A builder starting from no explicit values.
    pub fn builder() -> RetryConfigBuilder {
        RetryConfigBuilder::default()
    }

    /// Every key that configuration sets (the policy's
    /// [key table](crate::keys::PolicyKind::keys) without the attribute's
    /// own, such as predicates), in the table's order, with its value here
    /// as configuration writes it (`none` for a key left without one): what
    /// a registry's reload compares key by key.
    pub fn values(&self) -> Vec<(&'static str, String)> {
        vec![
            (key::MAX_ATTEMPTS.name(), self.max_attempts.to_string()),
            (key::WAIT.name(), written_duration(self.wait)),
            (
                key::BACKOFF_MULTIPLIER.name(),
                self.backoff_multiplier.to_string(),
            ),
            (
                key::MAX_WAIT_INTERVAL.name(),
                written_or_none(self.max_wait_interval.map(written_duration)),
            ),
            (key::JITTER.name(), self.jitter.to_string()),
            (key::ABORT_ON.name(), self.abort_on.to_string()),
            (key::BUDGET_RATIO.name(), written_or_none(self.budget_ratio)),
            (
                key::BUDGET_MIN_PER_SECOND.name(),
                self.budget_min_per_second.to_string(),
            ),
            (
                key::BUDGET_WINDOW.name(),
                written_duration(self.budget_window),
            ),
        ]
    }

    /// How many attempts a call gets, the first one included (at least 1).
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The wait after the first failed attempt.
    pub fn wait(&self) -> Duration {
        self.wait
    }

    /// The factor each further wait grows by (at least 1; 1 keeps the wait
    /// fixed).
    pub fn backoff_multiplier(&self) -> f64 {
        self.backoff_multiplier
    }

    /// The longest any wait may be, jitter included (longer than zero);
    /// `None` for no cap.
    ///
    /// A true upper bound: a wait whose jitter range would reach past the
    /// cap is drawn from that range cut at the cap, and once the backoff
    /// itself reaches the cap `c`, waits are drawn uniformly from
    /// `c * (1 - jitter)` to `c`, so that callers at the cap still spread
    /// out. (Resilience4j also never waits longer than the cap, but caps
    /// the randomized wait, which puts every draw above the cap at exactly
    /// the cap.)
    pub fn max_wait_interval(&self) -> Option<Duration> {
        self.max_wait_interval
    }

    /// The randomization factor, at least 0 and less than 1: each wait `d`
    /// is drawn uniformly from `d * (1 - jitter)` to `d * (1 + jitter)`, as
    /// far as [`max_wait_interval`](Self::max_wait_interval) allows. Below 1,
    /// as in Resilience4j, so that no wait is zero unless `wait` is.
    pub fn jitter(&self) -> f64 {
        self.jitter
    }

    /// The rejection kinds that end a call at once instead of being retried.
    pub fn abort_on(&self) -> RejectionKinds {
        self.abort_on
    }

    /// The retry budget's ratio, if the instance has a budget: over
    /// [`budget_window`](Self::budget_window), its retries and hedges stay
    /// within `budget_ratio` times its first attempts plus
    /// [`budget_min_per_second`](Self::budget_min_per_second) times the
    /// window's seconds. `None` (the default, as in Resilience4j): no
    /// budget, retries are bounded by `max_attempts` alone.
    pub fn budget_ratio(&self) -> Option<f64> {
        self.budget_ratio
    }

    /// The retries per second of the window a budget allows whatever the
    /// first attempts (10 by default), so that a quiet instance can still
    /// retry; unused without a [`budget_ratio`](Self::budget_ratio).
    pub fn budget_min_per_second(&self) -> u32 {
        self.budget_min_per_second
    }

    /// The sliding window over which a budget counts (10 s by default),
    /// moving in tenths; unused without a
    /// [`budget_ratio`](Self::budget_ratio).
    pub fn budget_window(&self) -> Duration {
        self.budget_window
    }

    /// Whether any budget key differs from its default.
    fn budget_set(&self) -> bool {
        self.budget_ratio.is_some()
            || self.budget_min_per_second != Self::DEFAULT_BUDGET_MIN_PER_SECOND
            || self.budget_window != Self::DEFAULT_BUDGET_WINDOW
    }
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            max_attempts: Self::DEFAULT_MAX_ATTEMPTS,
            wait: Self::DEFAULT_WAIT,
            backoff_multiplier: Self::DEFAULT_BACKOFF_MULTIPLIER,
            max_wait_interval: None,
            jitter: Self::DEFAULT_JITTER,
            abort_on: RejectionKinds::EMPTY,
            budget_ratio: None,
            budget_min_per_second: Self::DEFAULT_BUDGET_MIN_PER_SECOND,
            budget_window: Self::DEFAULT_BUDGET_WINDOW,
        }
    }
}

impl fmt::Display for RetryConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "max_attempts = {}, wait = {}, backoff_multiplier = {}, max_wait_interval = ",
            self.max_attempts,
            humantime::format_duration(self.wait),
            self.backoff_multiplier,
        )?;
        match self.max_wait_interval {
            Some(cap) => write!(f, "{}", humantime::format_duration(cap))?,
            None => f.write_str("none")?,
        }
        write!(
            f,
            ", jitter = {}, abort_on = {}",
            self.jitter, self.abort_on
        )?;
        // Shown once one is set, so that a configuration without a budget
        // reads as it always did.
        if self.budget_set() {
            f.write_str(", budget_ratio = ")?;
            match self.budget_ratio {
                Some(ratio) => write!(f, "{ratio}")?,
                None => f.write_str("none")?,
            }
            write!(
                f,
                ", budget_min_per_second = {}, budget_window = {}",
                self.budget_min_per_second,
                humantime::format_duration(self.budget_window)
            )?;
        }
        Ok(())
    }
}

/// Explicit values for a retry policy, laid over a base configuration.
///
/// Only the values set here override the base (the named configuration given
/// by [`config`](Self::config), else `default`); see the registry for the full
/// precedence. Values are checked when the configuration is resolved.
#[derive(Debug, Clone, Default, PartialEq)]
#[must_use]
pub struct RetryConfigBuilder {
    config: Option<String>,
    max_attempts: Option<u32>,
    wait: Option<Duration>,
    backoff_multiplier: Option<f64>,
    max_wait_interval: Option<Option<Duration>>,
    jitter: Option<f64>,
    abort_on: Option<RejectionKinds>,
    budget_ratio: Option<Option<f64>>,
    budget_min_per_second: Option<u32>,
    budget_window: Option<Duration>,
}

impl RetryConfigBuilder {
    /// Starts from the named configuration instead of `default`.
    pub fn config(mut self, name: impl Into<String>) -> Self {
        self.config = Some(name.into());
        self
    }

    /// How many attempts a call gets, the first one included (at least 1;
    /// 1 means no retry).
    pub fn max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = Some(max_attempts);
        self
    }

    /// The wait after the first failed attempt (zero retries at once).
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = Some(wait);
        self
    }

    /// The factor each further wait grows by: the wait after the n-th failed
    /// attempt is `wait * backoff_multiplier^(n - 1)`. At least 1, and finite.
    pub fn backoff_multiplier(mut self, backoff_multiplier: f64) -> Self {
        self.backoff_multiplier = Some(backoff_multiplier);
        self
    }

    /// The longest any wait may be, jitter included (longer than zero):
    /// waits at the cap are drawn from `max_wait_interval * (1 - jitter)` to
    /// `max_wait_interval` (see [`RetryConfig::max_wait_interval`]); `None`
    /// removes a cap the base configuration set.
    pub fn max_wait_interval(mut self, max_wait_interval: impl Into<Option<Duration>>) -> Self {
        self.max_wait_interval = Some(max_wait_interval.into());
        self
    }

    /// The randomization factor, from 0 (the default: exact waits) up to but
    /// excluding 1: each wait `d` is drawn from `d * (1 ± jitter)`, cut at
    /// [`max_wait_interval`](Self::max_wait_interval).
    pub fn jitter(mut self, jitter: f64) -> Self {
        self.jitter = Some(jitter);
        self
    }

    /// The rejection kinds that end a call at once instead of being retried
    /// (replacing the base's list). By default every kind is retried.
    pub fn abort_on(mut self, kinds: impl IntoIterator<Item = RejectionKind>) -> Self {
        self.abort_on = Some(kinds.into_iter().collect());
        self
    }

    /// Gives the instance a retry budget: over
    /// [`budget_window`](Self::budget_window), its retries and hedges stay
    /// within `ratio` times its first attempts plus
    /// [`budget_min_per_second`](Self::budget_min_per_second) times the
    /// window's seconds (at least 0, and finite); `None` removes a budget
    /// the base configuration set. A retry the budget refuses ends the call
    /// with its last failure and publishes `BudgetExhausted`.
    pub fn budget_ratio(mut self, ratio: impl Into<Option<f64>>) -> Self {
        self.budget_ratio = Some(ratio.into());
        self
    }

    /// The retries per second of the window a budget allows whatever the
    /// first attempts (default 10; 0 for none).
    pub fn budget_min_per_second(mut self, min_per_second: u32) -> Self {
        self.budget_min_per_second = Some(min_per_second);
        self
    }

    /// The sliding window over which a budget counts (default 10 s; longer
    /// than zero), moving in tenths.
    pub fn budget_window(mut self, window: Duration) -> Self {
        self.budget_window = Some(window);
        self
    }

    /// Sets the key named `key` (one of the retry policy's
    /// [`keys`](crate::keys::PolicyKind::keys), but for `retry_if`, which
    /// only an attribute takes) to `value`, as configuration from outside
    /// the code does. The value is checked when the configuration is built,
    /// as for the other setters.
    ///
    /// # Errors
    ///
    /// CFG-001 if the builder has no such key, or `value` is not of the
    /// kind it takes.
    pub fn set_key(self, key: &str, value: KeyValue) -> Result<Self, ConfigError> {
        Ok(match (key, value) {
            ("max_attempts", KeyValue::Integer(n)) => self.max_attempts(n),
            ("wait", KeyValue::Duration(wait)) => self.wait(wait),
            ("backoff_multiplier", KeyValue::Number(x)) => self.backoff_multiplier(x),
            ("max_wait_interval", KeyValue::Duration(cap)) => self.max_wait_interval(cap),
            ("jitter", KeyValue::Number(x)) => self.jitter(x),
            ("abort_on", KeyValue::RejectionKinds(kinds)) => self.abort_on(kinds.iter()),
            ("budget_ratio", KeyValue::Number(x)) => self.budget_ratio(x),
            ("budget_min_per_second", KeyValue::Integer(n)) => self.budget_min_per_second(n),
            ("budget_window", KeyValue::Duration(window)) => self.budget_window(window),
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
    /// ATR-008 if `max_attempts`, `backoff_multiplier`, `jitter` or
    /// `budget_ratio` is out of range, or `max_wait_interval` or
    /// `budget_window` is zero.
    pub fn build(&self) -> Result<RetryConfig, ConfigError> {
        self.build_on(&RetryConfig::default())
    }

    /// Resolves the values set here over `base`.
    ///
    /// # Errors
    ///
    /// ATR-008 if `max_attempts`, `backoff_multiplier`, `jitter` or
    /// `budget_ratio` is out of range, or `max_wait_interval` or
    /// `budget_window` is zero.
    pub fn build_on(&self, base: &RetryConfig) -> Result<RetryConfig, ConfigError> {
        self.build_keyed(base, "")
    }

    /// Like [`build_on`](Self::build_on), naming a bad value's key as
    /// `key_prefix` followed by the key, e.g. `retry.configs.slow.jitter`.
    ///
    /// # Errors
    ///
    /// ATR-008 if `max_attempts`, `backoff_multiplier`, `jitter` or
    /// `budget_ratio` is out of range, or `max_wait_interval` or
    /// `budget_window` is zero.
    pub fn build_keyed(
        &self,
        base: &RetryConfig,
        key_prefix: &str,
    ) -> Result<RetryConfig, ConfigError> {
        let keyed = |e: ConfigError| e.prefixed(key_prefix);
        let max_attempts = match self.max_attempts {
            Some(value) => key::MAX_ATTEMPTS
                .check_integer(value.into())
                .map_err(keyed)?,
            None => base.max_attempts,
        };
        let backoff_multiplier = match self.backoff_multiplier {
            Some(value) => key::BACKOFF_MULTIPLIER.check_number(value).map_err(keyed)?,
            None => base.backoff_multiplier,
        };
        let max_wait_interval = match self.max_wait_interval {
            Some(Some(cap)) => Some(key::MAX_WAIT_INTERVAL.check_duration(cap).map_err(keyed)?),
            Some(None) => None,
            None => base.max_wait_interval,
        };
        let jitter = match self.jitter {
            Some(value) => key::JITTER.check_number(value).map_err(keyed)?,
            None => base.jitter,
        };
        let budget_ratio = match self.budget_ratio {
            Some(Some(ratio)) => Some(key::BUDGET_RATIO.check_number(ratio).map_err(keyed)?),
            Some(None) => None,
            None => base.budget_ratio,
        };
        let budget_window = match self.budget_window {
            Some(window) => key::BUDGET_WINDOW.check_duration(window).map_err(keyed)?,
            None => base.budget_window,
        };
        Ok(RetryConfig {
            max_attempts,
            wait: self.wait.unwrap_or(base.wait),
            backoff_multiplier,
            max_wait_interval,
            jitter,
            abort_on: self.abort_on.unwrap_or(base.abort_on),
            budget_ratio,
            budget_min_per_second: self
                .budget_min_per_second
                .unwrap_or(base.budget_min_per_second),
            budget_window,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_resilience4js() {
        let config = RetryConfig::builder().build().unwrap();
        assert_eq!(config, RetryConfig::default());
        assert_eq!(config.max_attempts(), 3);
        assert_eq!(config.wait(), Duration::from_millis(500));
        assert_eq!(config.backoff_multiplier(), 1.0);
        assert_eq!(config.max_wait_interval(), None);
        assert_eq!(config.jitter(), 0.0);
        assert!(config.abort_on().is_empty());
        assert_eq!(
            config.to_string(),
            "max_attempts = 3, wait = 500ms, backoff_multiplier = 1, max_wait_interval = none, \
             jitter = 0, abort_on = []"
        );
    }

    #[test]
    fn max_attempts_zero_is_atr_008() {
        let err = RetryConfig::builder().max_attempts(0).build().unwrap_err();
        assert_eq!(err.code(), "ATR-008");
        assert_eq!(err.key(), "max_attempts");
        assert!(
            err.to_string().starts_with("ATR-008: max_attempts must be"),
            "{err}"
        );
    }

    #[test]
    fn a_multiplier_below_one_or_not_finite_is_atr_008() {
        for bad in [0.0, 0.99, -2.0, f64::NAN, f64::INFINITY] {
            let err = RetryConfig::builder()
                .backoff_multiplier(bad)
                .build()
                .unwrap_err();
            assert_eq!(err.code(), "ATR-008", "{bad}");
            assert_eq!(err.key(), "backoff_multiplier");
        }
        let err = RetryConfig::builder()
            .backoff_multiplier(0.5)
            .build()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "ATR-008: backoff_multiplier must be a finite number of at least 1, got 0.5"
        );
    }

    #[test]
    fn a_jitter_below_zero_or_from_one_up_is_atr_008() {
        for good in [0.0, 0.5, 0.999_999] {
            assert!(RetryConfig::builder().jitter(good).build().is_ok());
        }
        for bad in [-0.1, 1.0, 1.01, f64::NAN, f64::INFINITY] {
            let err = RetryConfig::builder().jitter(bad).build().unwrap_err();
            assert_eq!(err.code(), "ATR-008", "{bad}");
            assert_eq!(err.key(), "jitter");
        }
        let err = RetryConfig::builder().jitter(1.0).build().unwrap_err();
        assert_eq!(
            err.to_string(),
            "ATR-008: jitter must be at least 0 and less than 1, got 1"
        );
    }

    #[test]
    fn a_zero_max_wait_interval_is_atr_008_and_no_cap_is_fine() {
        let err = RetryConfig::builder()
            .max_wait_interval(Duration::ZERO)
            .build()
            .unwrap_err();
        assert_eq!(err.code(), "ATR-008");
        assert_eq!(
            err.to_string(),
            "ATR-008: max_wait_interval must be longer than zero, got 0s"
        );
        let err = RetryConfig::builder()
            .max_wait_interval(Duration::ZERO)
            .build_keyed(&RetryConfig::default(), "retry.instances.x.")
            .unwrap_err();
        assert_eq!(err.key(), "retry.instances.x.max_wait_interval");
        let tiny = Duration::from_nanos(1);
        let config = RetryConfig::builder().max_wait_interval(tiny).build();
        assert_eq!(config.unwrap().max_wait_interval(), Some(tiny));
        let config = RetryConfig::builder().max_wait_interval(None).build();
        assert_eq!(config.unwrap().max_wait_interval(), None);
    }

    #[test]
    fn a_key_prefix_names_the_full_key() {
        let err = RetryConfig::builder()
            .jitter(2.0)
            .build_keyed(&RetryConfig::default(), "retry.configs.slow.")
            .unwrap_err();
        assert_eq!(err.key(), "retry.configs.slow.jitter");
        assert!(
            err.to_string().starts_with(
                "ATR-008: retry.configs.slow.jitter must be at least 0 and less than 1"
            ),
            "{err}"
        );
    }

    #[test]
    fn only_explicit_values_override_the_base() {
        let base = RetryConfig::builder()
            .max_attempts(5)
            .wait(Duration::from_secs(1))
            .max_wait_interval(Duration::from_secs(4))
            .abort_on([RejectionKind::Timeout])
            .build()
            .unwrap();
        let config = RetryConfig::builder()
            .max_attempts(2)
            .build_on(&base)
            .unwrap();
        assert_eq!(config.max_attempts(), 2);
        assert_eq!(config.wait(), Duration::from_secs(1));
        assert_eq!(config.max_wait_interval(), Some(Duration::from_secs(4)));
        assert!(config.abort_on().contains(RejectionKind::Timeout));

        let uncapped = RetryConfig::builder()
            .max_wait_interval(None)
            .build_on(&base)
            .unwrap();
        assert_eq!(uncapped.max_wait_interval(), None);
    }

    #[test]
    fn a_budget_is_off_by_default_and_shows_once_set() {
        let config = RetryConfig::default();
        assert_eq!(config.budget_ratio(), None);
        assert_eq!(config.budget_min_per_second(), 10);
        assert_eq!(config.budget_window(), Duration::from_secs(10));
        let budgeted = RetryConfig::builder()
            .budget_ratio(0.2)
            .budget_min_per_second(0)
            .budget_window(Duration::from_secs(30))
            .build()
            .unwrap();
        assert_eq!(budgeted.budget_ratio(), Some(0.2));
        assert!(
            budgeted.to_string().ends_with(
                "abort_on = [], budget_ratio = 0.2, budget_min_per_second = 0, budget_window = 30s"
            ),
            "{budgeted}"
        );
        let unset = RetryConfig::builder()
            .budget_ratio(None)
            .build_on(&budgeted)
            .unwrap();
        assert_eq!(unset.budget_ratio(), None);
        assert_eq!(unset.budget_min_per_second(), 0, "the rest is kept");
    }

    #[test]
    fn a_negative_ratio_or_a_zero_window_is_atr_008() {
        for bad in [-0.1, f64::NAN, f64::INFINITY] {
            let err = RetryConfig::builder()
                .budget_ratio(bad)
                .build()
                .unwrap_err();
            assert_eq!(
                (err.code(), err.key()),
                ("ATR-008", "budget_ratio"),
                "{bad}"
            );
        }
        let err = RetryConfig::builder()
            .budget_window(Duration::ZERO)
            .build()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "ATR-008: budget_window must be longer than zero, got 0s"
        );
        assert!(RetryConfig::builder().budget_ratio(0.0).build().is_ok());
    }

    #[test]
    fn the_builder_remembers_its_base_configuration() {
        let builder = RetryConfig::builder().config("slow");
        assert_eq!(builder.config_name(), Some("slow"));
        assert_eq!(RetryConfig::builder().config_name(), None);
    }
}
