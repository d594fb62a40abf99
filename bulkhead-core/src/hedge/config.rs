//! How hedging is configured: [`HedgeConfig`] and its builder.

use std::fmt;
use std::time::Duration;

use super::HedgeDelay;
use crate::config::ConfigError;
use crate::keys::{Key, KeyValue, ValueKind};

/// The hedge's keys, each checked by the builder with its row's range.
mod key {
    use super::*;

    pub(super) const MAX_HEDGED: Key = Key::new(
        "max_hedged",
        ValueKind::Count {
            min: 1,
            max: super::HedgeConfig::MAX_HEDGED,
        },
        "1",
        "how many extra attempts a call may start while earlier ones are still running",
    );
    pub(super) const DELAY: Key = Key::new(
        "delay",
        ValueKind::Delay,
        "\"2s\"",
        "how long the attempts of a call run before another is started (`0`: all at once), or the percentile of the first attempts' latency to wait for (`\"p90\"`), estimated as calls go",
    );
}

/// The resolved configuration of a hedge policy.
///
/// The defaults are Polly's: one hedge, started after two seconds.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use bulkhead_core::{HedgeConfig, HedgeDelay};
///
/// let config = HedgeConfig::builder()
///     .max_hedged(2)
///     .delay(Duration::from_millis(50))
///     .build()?;
/// assert_eq!(config.max_hedged(), 2);
/// assert_eq!(config.to_string(), "max_hedged = 2, delay = 50ms");
///
/// let adaptive = HedgeConfig::builder().delay(HedgeDelay::percentile(95.0)).build()?;
/// assert_eq!(adaptive.to_string(), "max_hedged = 1, delay = p95");
/// # Ok::<(), bulkhead_core::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HedgeConfig {
    max_hedged: u32,
    delay: HedgeDelay,
}

impl HedgeConfig {
    /// The hedge's keys, in the order its documentation lists them (see
    /// [`PolicyKind::keys`](crate::keys::PolicyKind::keys)).
    pub(crate) const KEYS: &'static [Key] = &[key::MAX_HEDGED, key::DELAY];

    /// The most hedges a call may start: 10, as in Polly. Each running
    /// attempt holds its own slot, permit and breaker trial.
    pub const MAX_HEDGED: u32 = 10;
    /// The default number of hedges, 1.
    pub const DEFAULT_MAX_HEDGED: u32 = 1;
    /// The default delay before a hedge, 2 s (Polly's).
    pub const DEFAULT_DELAY: Duration = Duration::from_secs(2);

    /// A builder starting from no explicit values.
    pub fn builder() -> HedgeConfigBuilder {
        HedgeConfigBuilder::default()
    }

    /// Every key that configuration sets (the policy's
    /// [key table](crate::keys::PolicyKind::keys) without the attribute's
    /// own, such as predicates), in the table's order, with its value here
    /// as configuration writes it (`none` for a key left without one): what
    /// a registry's reload compares key by key.
    pub fn values(&self) -> Vec<(&'static str, String)> {
        vec![
            (key::MAX_HEDGED.name(), self.max_hedged.to_string()),
            (key::DELAY.name(), self.delay.to_string()),
        ]
    }

    /// How many extra attempts a call may start (from 1 to
    /// [`MAX_HEDGED`](Self::MAX_HEDGED)).
    pub fn max_hedged(&self) -> u32 {
        self.max_hedged
    }

    /// How long the attempts of a call run before another is started: the
    /// first hedge starts `delay` after the first attempt, the next `delay`
    /// after that, and so on while none has succeeded. Zero starts them all
    /// at once. A percentile is estimated from the first attempts' latency
    /// as calls go (see [`Hedge`](crate::Hedge)).
    pub fn delay(&self) -> HedgeDelay {
        self.delay
    }
}

impl Default for HedgeConfig {
    fn default() -> Self {
        HedgeConfig {
            max_hedged: Self::DEFAULT_MAX_HEDGED,
            delay: HedgeDelay::Fixed(Self::DEFAULT_DELAY),
        }
    }
}

impl fmt::Display for HedgeConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "max_hedged = {}, delay = {}",
            self.max_hedged, self.delay
        )
    }
}

/// Explicit values for a hedge, laid over a base configuration.
///
/// Only the values set here override the base (the named configuration given
/// by [`config`](Self::config), else `default`); see the registry for the full
/// precedence. Values are checked when the configuration is resolved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use]
pub struct HedgeConfigBuilder {
    config: Option<String>,
    max_hedged: Option<u32>,
    delay: Option<HedgeDelay>,
}

impl HedgeConfigBuilder {
    /// Starts from the named configuration instead of `default`.
    pub fn config(mut self, name: impl Into<String>) -> Self {
        self.config = Some(name.into());
        self
    }

    /// How many extra attempts a call may start (from 1 to
    /// [`HedgeConfig::MAX_HEDGED`]).
    pub fn max_hedged(mut self, max_hedged: u32) -> Self {
        self.max_hedged = Some(max_hedged);
        self
    }

    /// How long the attempts run before another is started: a
    /// [`Duration`] (zero: all at once), or a
    /// [`HedgeDelay::percentile`] of the first attempts' latency, above 0
    /// and below 100.
    pub fn delay(mut self, delay: impl Into<HedgeDelay>) -> Self {
        self.delay = Some(delay.into());
        self
    }

    /// Sets the key named `key` (one of the hedge's
    /// [`keys`](crate::keys::PolicyKind::keys)) to `value`, as
    /// configuration from outside the code does. The value is checked when
    /// the configuration is built, as for the other setters.
    ///
    /// # Errors
    ///
    /// CFG-001 if the hedge has no such key, or `value` is not of the kind
    /// it takes.
    pub fn set_key(self, key: &str, value: KeyValue) -> Result<Self, ConfigError> {
        Ok(match (key, value) {
            ("max_hedged", KeyValue::Integer(n)) => self.max_hedged(n),
            ("delay", KeyValue::Duration(delay)) => self.delay(delay),
            ("delay", KeyValue::Delay(delay)) => self.delay(delay),
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
    /// ATR-008 if `max_hedged` or a percentile `delay` is out of range.
    pub fn build(&self) -> Result<HedgeConfig, ConfigError> {
        self.build_on(&HedgeConfig::default())
    }

    /// Resolves the values set here over `base`.
    ///
    /// # Errors
    ///
    /// ATR-008 if `max_hedged` or a percentile `delay` is out of range.
    pub fn build_on(&self, base: &HedgeConfig) -> Result<HedgeConfig, ConfigError> {
        self.build_keyed(base, "")
    }

    /// Like [`build_on`](Self::build_on), naming a bad value's key as
    /// `key_prefix` followed by the key, e.g. `hedge.configs.slow.max_hedged`.
    ///
    /// # Errors
    ///
    /// ATR-008 if `max_hedged` or a percentile `delay` is out of range.
    pub fn build_keyed(
        &self,
        base: &HedgeConfig,
        key_prefix: &str,
    ) -> Result<HedgeConfig, ConfigError> {
        let max_hedged = match self.max_hedged {
            Some(n) => key::MAX_HEDGED
                .check_integer(n.into())
                .map_err(|e| e.prefixed(key_prefix))?,
            None => base.max_hedged,
        };
        let delay = match self.delay {
            Some(HedgeDelay::Percentile { tenths }) if !(1..=999).contains(&tenths) => {
                return Err(ConfigError::NumberOutOfRange {
                    key: key::DELAY.name().to_owned(),
                    value: format!("p{}", f64::from(tenths) / 10.0),
                    range: "a percentile above 0 and below 100".to_owned(),
                }
                .prefixed(key_prefix));
            }
            Some(delay) => delay,
            None => base.delay,
        };
        Ok(HedgeConfig { max_hedged, delay })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_pollys() {
        let config = HedgeConfig::builder().build().unwrap();
        assert_eq!(config, HedgeConfig::default());
        assert_eq!(
            (config.max_hedged(), config.delay()),
            (1, HedgeDelay::Fixed(Duration::from_secs(2)))
        );
        assert_eq!(config.to_string(), "max_hedged = 1, delay = 2s");
    }

    #[test]
    fn max_hedged_out_of_range_is_atr_008_naming_the_key() {
        for bad in [0, 11] {
            let err = HedgeConfig::builder().max_hedged(bad).build().unwrap_err();
            assert_eq!((err.code(), err.key()), ("ATR-008", "max_hedged"), "{bad}");
        }
        let err = HedgeConfig::builder()
            .max_hedged(0)
            .build_keyed(&HedgeConfig::default(), "hedge.instances.x.")
            .unwrap_err();
        assert_eq!(err.key(), "hedge.instances.x.max_hedged");
        assert!(HedgeConfig::builder().max_hedged(10).build().is_ok());
    }

    #[test]
    fn a_percentile_out_of_range_is_atr_008() {
        let err = HedgeConfig::builder()
            .delay(HedgeDelay::percentile(100.0))
            .build_keyed(&HedgeConfig::default(), "hedge.configs.x.")
            .unwrap_err();
        assert_eq!(
            (err.code(), err.key()),
            ("ATR-008", "hedge.configs.x.delay")
        );
        let config = HedgeConfig::builder()
            .set_key("delay", KeyValue::Delay(HedgeDelay::percentile(99.9)))
            .unwrap()
            .build()
            .unwrap();
        assert_eq!(config.to_string(), "max_hedged = 1, delay = p99.9");
    }

    #[test]
    fn a_zero_delay_starts_every_hedge_at_once_and_is_allowed() {
        let config = HedgeConfig::builder()
            .delay(Duration::ZERO)
            .build()
            .unwrap();
        assert_eq!(config.delay(), HedgeDelay::Fixed(Duration::ZERO));
    }

    #[test]
    fn only_explicit_values_override_the_base() {
        let base = HedgeConfig::builder()
            .max_hedged(3)
            .delay(Duration::from_millis(20))
            .build()
            .unwrap();
        let builder = HedgeConfig::builder().config("fast").max_hedged(2);
        assert_eq!(builder.config_name(), Some("fast"));
        let config = builder.build_on(&base).unwrap();
        assert_eq!(
            (config.max_hedged(), config.delay()),
            (2, HedgeDelay::Fixed(Duration::from_millis(20)))
        );
    }
}
