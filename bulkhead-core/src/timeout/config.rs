//! How a timeout is configured: [`TimeoutConfig`] and its builder.

use std::fmt;
use std::time::Duration;

use crate::config::{ConfigError, written_duration};
use crate::keys::{Key, KeyValue, ValueKind};

/// The timeout's keys, each checked by the builder with its row's range.
mod key {
    use super::*;

    pub(super) const DURATION: Key = Key::new(
        "duration",
        ValueKind::Duration { positive: true },
        "\"1s\"",
        "how long a call may take, its wait for a bulkhead slot included",
    );
}

/// The resolved configuration of a timeout policy.
///
/// The default is Resilience4j's: one second.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use bulkhead_core::TimeoutConfig;
///
/// let config = TimeoutConfig::builder()
///     .duration(Duration::from_millis(250))
///     .build()?;
/// assert_eq!(config.duration(), Duration::from_millis(250));
/// assert_eq!(config.to_string(), "duration = 250ms");
/// # Ok::<(), bulkhead_core::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimeoutConfig {
    duration: Duration,
}

impl TimeoutConfig {
    /// The timeout's keys, in the order its documentation lists them
    /// (see [`PolicyKind::keys`](crate::keys::PolicyKind::keys)).
    pub(crate) const KEYS: &'static [Key] = &[key::DURATION];

    /// The default timeout, one second.
    pub const DEFAULT_DURATION: Duration = Duration::from_secs(1);

    /// A builder starting from no explicit values.
    pub fn builder() -> TimeoutConfigBuilder {
        TimeoutConfigBuilder::default()
    }

    /// Every key that configuration sets (the policy's
    /// [key table](crate::keys::PolicyKind::keys) without the attribute's
    /// own, such as predicates), in the table's order, with its value here
    /// as configuration writes it (`none` for a key left without one): what
    /// a registry's reload compares key by key.
    pub fn values(&self) -> Vec<(&'static str, String)> {
        vec![(key::DURATION.name(), written_duration(self.duration))]
    }

    /// How long a call may take, its wait for a bulkhead slot included (a
    /// wait for a rate-limiter permit comes before the timeout and is not).
    pub fn duration(&self) -> Duration {
        self.duration
    }
}

impl Default for TimeoutConfig {
    fn default() -> Self {
        TimeoutConfig {
            duration: Self::DEFAULT_DURATION,
        }
    }
}

impl fmt::Display for TimeoutConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "duration = {}",
            humantime::format_duration(self.duration)
        )
    }
}

/// Explicit values for a timeout, laid over a base configuration.
///
/// Only the values set here override the base (the named configuration given
/// by [`config`](Self::config), else `default`); see the registry for the full
/// precedence. Values are checked when the configuration is resolved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use]
pub struct TimeoutConfigBuilder {
    config: Option<String>,
    duration: Option<Duration>,
}

impl TimeoutConfigBuilder {
    /// Starts from the named configuration instead of `default`.
    pub fn config(mut self, name: impl Into<String>) -> Self {
        self.config = Some(name.into());
        self
    }

    /// How long a call may take (more than zero).
    pub fn duration(mut self, duration: Duration) -> Self {
        self.duration = Some(duration);
        self
    }

    /// Sets the key named `key` (one of the timeout's
    /// [`keys`](crate::keys::PolicyKind::keys)) to `value`, as
    /// configuration from outside the code does. The value is checked when
    /// the configuration is built, as for the other setters.
    ///
    /// # Errors
    ///
    /// CFG-001 if the timeout has no such key, or `value` is not of the
    /// kind it takes.
    pub fn set_key(self, key: &str, value: KeyValue) -> Result<Self, ConfigError> {
        Ok(match (key, value) {
            ("duration", KeyValue::Duration(duration)) => self.duration(duration),
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
    /// ATR-008 if `duration` is zero.
    pub fn build(&self) -> Result<TimeoutConfig, ConfigError> {
        self.build_on(&TimeoutConfig::default())
    }

    /// Resolves the values set here over `base`.
    ///
    /// # Errors
    ///
    /// ATR-008 if `duration` is zero.
    pub fn build_on(&self, base: &TimeoutConfig) -> Result<TimeoutConfig, ConfigError> {
        self.build_keyed(base, "")
    }

    /// Like [`build_on`](Self::build_on), naming a bad value's key as
    /// `key_prefix` followed by the key, e.g. `timeout.configs.slow.duration`.
    ///
    /// # Errors
    ///
    /// ATR-008 if `duration` is zero.
    pub fn build_keyed(
        &self,
        base: &TimeoutConfig,
        key_prefix: &str,
    ) -> Result<TimeoutConfig, ConfigError> {
        let duration = match self.duration {
            Some(duration) => key::DURATION
                .check_duration(duration)
                .map_err(|e| e.prefixed(key_prefix))?,
            None => base.duration,
        };
        Ok(TimeoutConfig { duration })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_one_second() {
        let config = TimeoutConfig::builder().build().unwrap();
        assert_eq!(config.duration(), Duration::from_secs(1));
        assert_eq!(config, TimeoutConfig::default());
        assert_eq!(config.to_string(), "duration = 1s");
    }

    #[test]
    fn a_zero_duration_is_atr_008_naming_the_key() {
        let err = TimeoutConfig::builder()
            .duration(Duration::ZERO)
            .build()
            .unwrap_err();
        assert_eq!(err.code(), "ATR-008");
        assert_eq!(
            err.to_string(),
            "ATR-008: duration must be longer than zero, got 0s"
        );
        let err = TimeoutConfig::builder()
            .duration(Duration::ZERO)
            .build_keyed(&TimeoutConfig::default(), "timeout.instances.x.")
            .unwrap_err();
        assert_eq!(err.key(), "timeout.instances.x.duration");
    }

    #[test]
    fn only_explicit_values_override_the_base() {
        let base = TimeoutConfig::builder()
            .duration(Duration::from_secs(5))
            .build()
            .unwrap();
        let builder = TimeoutConfig::builder().config("slow");
        assert_eq!(builder.config_name(), Some("slow"));
        assert_eq!(builder.build_on(&base), Ok(base));
        let config = TimeoutConfig::builder()
            .duration(Duration::from_millis(10))
            .build_on(&base)
            .unwrap();
        assert_eq!(config.duration(), Duration::from_millis(10));
    }
}
