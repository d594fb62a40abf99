//! How a rate limiter is configured: [`RateLimiterConfig`] and its builder.

use std::fmt;
use std::time::Duration;

use crate::config::{ConfigError, written_duration};
use crate::keys::{Key, KeyValue, ValueKind};

/// The rate limiter's keys, each checked by the builder with its row's
/// range.
mod key {
    use super::*;

    pub(super) const LIMIT_FOR_PERIOD: Key = Key::new(
        "limit_for_period",
        ValueKind::Count {
            min: 1,
            max: u32::MAX,
        },
        "50",
        "how many permits each period brings",
    );
    pub(super) const REFRESH_PERIOD: Key = Key::new(
        "refresh_period",
        ValueKind::Duration { positive: true },
        "\"500ns\"",
        "the length of a period; unused permits expire at its end",
    );
    pub(super) const MAX_WAIT: Key = Key::new(
        "max_wait",
        ValueKind::Duration { positive: false },
        "\"5s\"",
        "how long a caller may wait for a permit; zero refuses at once",
    );
}

/// The resolved configuration of a rate limiter.
///
/// Defaults are Resilience4j's: 50 permits every 500 nanoseconds, and a
/// caller may wait up to 5 seconds for one.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use bulkhead_core::RateLimiterConfig;
///
/// let config = RateLimiterConfig::builder()
///     .limit_for_period(10)
///     .refresh_period(Duration::from_secs(1))
///     .max_wait(Duration::ZERO)
///     .build()?;
/// assert_eq!(config.limit_for_period(), 10);
/// assert_eq!(
///     config.to_string(),
///     "limit_for_period = 10, refresh_period = 1s, max_wait = 0s"
/// );
/// # Ok::<(), bulkhead_core::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RateLimiterConfig {
    limit_for_period: u32,
    refresh_period: Duration,
    max_wait: Duration,
}

impl RateLimiterConfig {
    /// The rate limiter's keys, in the order its documentation lists them
    /// (see [`PolicyKind::keys`](crate::keys::PolicyKind::keys)).
    pub(crate) const KEYS: &'static [Key] =
        &[key::LIMIT_FOR_PERIOD, key::REFRESH_PERIOD, key::MAX_WAIT];

    /// The default number of permits per period, 50.
    pub const DEFAULT_LIMIT_FOR_PERIOD: u32 = 50;
    /// The default period, 500 nanoseconds.
    pub const DEFAULT_REFRESH_PERIOD: Duration = Duration::from_nanos(500);
    /// The default longest wait for a permit, 5 seconds.
    pub const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(5);

    /// A builder starting from no explicit values.
    pub fn builder() -> RateLimiterConfigBuilder {
        RateLimiterConfigBuilder::default()
    }

    /// Every key that configuration sets (the policy's
    /// [key table](crate::keys::PolicyKind::keys) without the attribute's
    /// own, such as predicates), in the table's order, with its value here
    /// as configuration writes it (`none` for a key left without one): what
    /// a registry's reload compares key by key.
    pub fn values(&self) -> Vec<(&'static str, String)> {
        vec![
            (
                key::LIMIT_FOR_PERIOD.name(),
                self.limit_for_period.to_string(),
            ),
            (
                key::REFRESH_PERIOD.name(),
                written_duration(self.refresh_period),
            ),
            (key::MAX_WAIT.name(), written_duration(self.max_wait)),
        ]
    }

    /// How many permits each period brings.
    pub fn limit_for_period(&self) -> u32 {
        self.limit_for_period
    }

    /// The length of a period; unused permits expire at its end.
    pub fn refresh_period(&self) -> Duration {
        self.refresh_period
    }

    /// How long a caller may wait for a permit; zero rejects at once.
    pub fn max_wait(&self) -> Duration {
        self.max_wait
    }
}

impl Default for RateLimiterConfig {
    fn default() -> Self {
        RateLimiterConfig {
            limit_for_period: Self::DEFAULT_LIMIT_FOR_PERIOD,
            refresh_period: Self::DEFAULT_REFRESH_PERIOD,
            max_wait: Self::DEFAULT_MAX_WAIT,
        }
    }
}

impl fmt::Display for RateLimiterConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "limit_for_period = {}, refresh_period = {}, max_wait = {}",
            self.limit_for_period,
            humantime::format_duration(self.refresh_period),
            humantime::format_duration(self.max_wait)
        )
    }
}

/// Explicit values for a rate limiter, laid over a base configuration.
///
/// Only the values set here override the base (the named configuration given
/// by [`config`](Self::config), else `default`); see the registry for the full
/// precedence. Values are checked when the configuration is resolved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use]
pub struct RateLimiterConfigBuilder {
    config: Option<String>,
    limit_for_period: Option<u64>,
    refresh_period: Option<Duration>,
    max_wait: Option<Duration>,
}

impl RateLimiterConfigBuilder {
    /// Starts from the named configuration instead of `default`.
    pub fn config(mut self, name: impl Into<String>) -> Self {
        self.config = Some(name.into());
        self
    }

    /// How many permits each period brings (at least 1).
    pub fn limit_for_period(mut self, limit_for_period: u32) -> Self {
        self.limit_for_period = Some(limit_for_period.into());
        self
    }

    /// The length of a period (more than zero). Periods are counted from the
    /// rate limiter's creation; periods beyond 584 years count as 584 years.
    pub fn refresh_period(mut self, refresh_period: Duration) -> Self {
        self.refresh_period = Some(refresh_period);
        self
    }

    /// How long a caller may wait for a permit of a later period; zero
    /// rejects at once when the current period has none left.
    pub fn max_wait(mut self, max_wait: Duration) -> Self {
        self.max_wait = Some(max_wait);
        self
    }

    /// Sets the key named `key` (one of the rate limiter's
    /// [`keys`](crate::keys::PolicyKind::keys)) to `value`, as
    /// configuration from outside the code does. The value is checked when
    /// the configuration is built, as for the other setters.
    ///
    /// # Errors
    ///
    /// CFG-001 if the rate limiter has no such key, or `value` is not of
    /// the kind it takes.
    pub fn set_key(self, key: &str, value: KeyValue) -> Result<Self, ConfigError> {
        Ok(match (key, value) {
            ("limit_for_period", KeyValue::Integer(n)) => self.limit_for_period(n),
            ("refresh_period", KeyValue::Duration(period)) => self.refresh_period(period),
            ("max_wait", KeyValue::Duration(wait)) => self.max_wait(wait),
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
    /// ATR-008 if `limit_for_period` is zero or `refresh_period` is zero.
    pub fn build(&self) -> Result<RateLimiterConfig, ConfigError> {
        self.build_on(&RateLimiterConfig::default())
    }

    /// Resolves the values set here over `base`.
    ///
    /// # Errors
    ///
    /// ATR-008 if `limit_for_period` is zero or `refresh_period` is zero.
    pub fn build_on(&self, base: &RateLimiterConfig) -> Result<RateLimiterConfig, ConfigError> {
        self.build_keyed(base, "")
    }

    /// Like [`build_on`](Self::build_on), naming a bad value's key as
    /// `key_prefix` followed by the key, e.g.
    /// `rate_limiter.configs.slow.limit_for_period`.
    ///
    /// # Errors
    ///
    /// ATR-008 if `limit_for_period` is zero or `refresh_period` is zero.
    pub fn build_keyed(
        &self,
        base: &RateLimiterConfig,
        key_prefix: &str,
    ) -> Result<RateLimiterConfig, ConfigError> {
        let limit_for_period = match self.limit_for_period {
            Some(value) => key::LIMIT_FOR_PERIOD
                .check_integer(value)
                .map_err(|e| e.prefixed(key_prefix))?,
            None => base.limit_for_period,
        };
        let refresh_period = match self.refresh_period {
            Some(value) => key::REFRESH_PERIOD
                .check_duration(value)
                .map_err(|e| e.prefixed(key_prefix))?,
            None => base.refresh_period,
        };
        Ok(RateLimiterConfig {
            limit_for_period,
            refresh_period,
            max_wait: self.max_wait.unwrap_or(base.max_wait),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_resilience4js() {
        let config = RateLimiterConfig::builder().build().unwrap();
        assert_eq!(config.limit_for_period(), 50);
        assert_eq!(config.refresh_period(), Duration::from_nanos(500));
        assert_eq!(config.max_wait(), Duration::from_secs(5));
        assert_eq!(config, RateLimiterConfig::default());
        assert_eq!(
            config.to_string(),
            "limit_for_period = 50, refresh_period = 500ns, max_wait = 5s"
        );
    }

    #[test]
    fn limit_for_period_zero_is_atr_008_naming_the_key() {
        let err = RateLimiterConfig::builder()
            .limit_for_period(0)
            .build()
            .unwrap_err();
        assert_eq!(err.code(), "ATR-008");
        assert_eq!(
            err.to_string(),
            "ATR-008: limit_for_period must be between 1 and 4294967295, got 0"
        );
    }

    #[test]
    fn refresh_period_zero_is_atr_008_naming_the_key() {
        let err = RateLimiterConfig::builder()
            .refresh_period(Duration::ZERO)
            .build()
            .unwrap_err();
        assert_eq!(err.code(), "ATR-008");
        assert_eq!(
            err.to_string(),
            "ATR-008: refresh_period must be longer than zero, got 0s"
        );
    }

    #[test]
    fn a_prefix_names_the_full_key() {
        let builder = RateLimiterConfig::builder().limit_for_period(0);
        let err = builder
            .build_keyed(&RateLimiterConfig::default(), "rate_limiter.configs.slow.")
            .unwrap_err();
        assert_eq!(err.key(), "rate_limiter.configs.slow.limit_for_period");
        let builder = RateLimiterConfig::builder().refresh_period(Duration::ZERO);
        let err = builder
            .build_keyed(&RateLimiterConfig::default(), "rate_limiter.instances.x.")
            .unwrap_err();
        assert_eq!(err.key(), "rate_limiter.instances.x.refresh_period");
    }

    #[test]
    fn only_explicit_values_override_the_base() {
        let base = RateLimiterConfig::builder()
            .limit_for_period(3)
            .refresh_period(Duration::from_secs(1))
            .max_wait(Duration::ZERO)
            .build()
            .unwrap();
        let builder = RateLimiterConfig::builder()
            .config("slow")
            .limit_for_period(7);
        assert_eq!(builder.config_name(), Some("slow"));
        let config = builder.build_on(&base).unwrap();
        assert_eq!(config.limit_for_period(), 7);
        assert_eq!(config.refresh_period(), Duration::from_secs(1));
        assert_eq!(config.max_wait(), Duration::ZERO);
    }
}
