//! How a bulkhead is configured: [`BulkheadConfig`] and its builder.

use std::fmt;
use std::time::Duration;

use super::semaphore::MAX_CONCURRENT;
use crate::config::ConfigError;
use crate::intern::intern;
use crate::keys::{Key, KeyValue, ValueKind};

/// The bulkhead's keys, each checked by the builder with its row's range.
mod key {
    use super::*;

    pub(super) const MAX_CONCURRENT: Key = Key::new(
        "max_concurrent",
        ValueKind::Limit {
            max: super::MAX_CONCURRENT,
        },
        "25",
        "how many calls may hold a slot at once",
    );
    pub(super) const MAX_WAIT: Key = Key::new(
        "max_wait",
        ValueKind::Duration { positive: false },
        "\"0\"",
        "how long a caller may wait for a slot; zero rejects at once",
    );
    pub(super) const ENABLED: Key = Key::new(
        "enabled",
        ValueKind::Bool,
        "true",
        "whether the bulkhead limits anything; a disabled one lets every call through",
    );
    pub(super) const RESERVED: Key = Key::new(
        "reserved",
        ValueKind::Count {
            min: 0,
            max: super::MAX_CONCURRENT,
        },
        "",
        "on a resource: the slots of its budget kept for this bulkhead alone, by default all of `max_concurrent`; above them, up to `max_concurrent`, it borrows the slots nobody reserved (ATR-016 if above `max_concurrent`)",
    );
    pub(super) const RESOURCE: Key = Key::new(
        "resource",
        ValueKind::Name,
        "",
        "the shared resource whose budget the slots count against (REG-010 if they exceed it, REG-011 if it has none)",
    );
}

/// The resolved configuration of a bulkhead.
///
/// Defaults are Resilience4j's: 25 slots, no waiting, enabled.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use bulkhead_core::BulkheadConfig;
///
/// let config = BulkheadConfig::builder()
///     .max_concurrent(4)
///     .max_wait(Duration::from_millis(250))
///     .build()?;
/// assert_eq!(config.max_concurrent(), 4);
/// assert_eq!(config.to_string(), "max_concurrent = 4, max_wait = 250ms, enabled = true");
/// # Ok::<(), bulkhead_core::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BulkheadConfig {
    max_concurrent: u32,
    max_wait: Duration,
    enabled: bool,
    /// The shared resource (a connection pool, a database) whose budget this
    /// bulkhead's slots count against, interned.
    resource: Option<&'static str>,
    /// The slots of the resource's budget kept for this bulkhead; `None`:
    /// all of `max_concurrent`.
    reserved: Option<u32>,
}

impl BulkheadConfig {
    /// The bulkhead's keys, in the order its documentation lists them
    /// (see [`PolicyKind::keys`](crate::keys::PolicyKind::keys)).
    pub(crate) const KEYS: &'static [Key] = &[
        key::MAX_CONCURRENT,
        key::MAX_WAIT,
        key::ENABLED,
        key::RESOURCE,
        key::RESERVED,
    ];

    /// The rules between the bulkhead's keys written together:
    /// `reserved` <= `max_concurrent` (ATR-016, about `reserved`).
    pub(crate) fn check_together(values: &[(&str, &KeyValue)]) -> Result<(), ConfigError> {
        let integer = |name: &str| {
            values.iter().find_map(|(key, value)| match value {
                KeyValue::Integer(n) if *key == name => Some(*n),
                _ => None,
            })
        };
        match (integer("reserved"), integer("max_concurrent")) {
            (Some(reserved), Some(max_concurrent)) if reserved > max_concurrent => {
                Err(ConfigError::ReservedAboveLimit {
                    key: "reserved".to_owned(),
                    reserved,
                    max_concurrent,
                })
            }
            _ => Ok(()),
        }
    }

    /// The default limit, 25.
    pub const DEFAULT_MAX_CONCURRENT: u32 = 25;
    /// The largest accepted limit, 2^30 - 1.
    pub const MAX_CONCURRENT: u32 = MAX_CONCURRENT;

    /// A builder starting from no explicit values.
    pub fn builder() -> BulkheadConfigBuilder {
        BulkheadConfigBuilder::default()
    }

    /// How many calls may hold a slot at once.
    pub fn max_concurrent(&self) -> u32 {
        self.max_concurrent
    }

    /// How long a caller may wait for a slot; zero rejects at once.
    pub fn max_wait(&self) -> Duration {
        self.max_wait
    }

    /// Whether the bulkhead limits anything; a disabled one lets every call
    /// through and counts nothing.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The shared resource whose budget this bulkhead's `max_concurrent`
    /// counts against, if any (see `Registry::resource`).
    pub fn resource(&self) -> Option<&'static str> {
        self.resource
    }

    /// The slots of its resource's budget kept for this bulkhead alone
    /// (default: all of `max_concurrent`, a strict split). Above them, up
    /// to `max_concurrent`, it borrows slots of the budget that nobody
    /// reserved. Without a resource it has no effect.
    pub fn reserved(&self) -> u32 {
        self.reserved.unwrap_or(self.max_concurrent)
    }

    /// Whether `reserved` was given (else it follows `max_concurrent`).
    pub fn reserved_set(&self) -> Option<u32> {
        self.reserved
    }
}

impl Default for BulkheadConfig {
    fn default() -> Self {
        BulkheadConfig {
            max_concurrent: Self::DEFAULT_MAX_CONCURRENT,
            max_wait: Duration::ZERO,
            enabled: true,
            resource: None,
            reserved: None,
        }
    }
}

impl fmt::Display for BulkheadConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "max_concurrent = {}, max_wait = {}, enabled = {}",
            self.max_concurrent,
            humantime::format_duration(self.max_wait),
            self.enabled
        )?;
        if let Some(resource) = self.resource {
            write!(f, ", resource = {resource}")?;
        }
        if let Some(reserved) = self.reserved {
            write!(f, ", reserved = {reserved}")?;
        }
        Ok(())
    }
}

/// Explicit values for a bulkhead, laid over a base configuration.
///
/// Only the values set here override the base (the named configuration given
/// by [`config`](Self::config), else `default`); see the registry for the full
/// precedence. Values are checked when the configuration is resolved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use]
pub struct BulkheadConfigBuilder {
    config: Option<String>,
    max_concurrent: Option<u64>,
    max_wait: Option<Duration>,
    enabled: Option<bool>,
    resource: Option<String>,
    reserved: Option<u64>,
}

impl BulkheadConfigBuilder {
    /// Starts from the named configuration instead of `default`.
    pub fn config(mut self, name: impl Into<String>) -> Self {
        self.config = Some(name.into());
        self
    }

    /// How many calls may hold a slot at once (1 to 2^30 - 1).
    pub fn max_concurrent(mut self, max_concurrent: u32) -> Self {
        self.max_concurrent = Some(max_concurrent.into());
        self
    }

    /// How long a caller may wait for a slot; zero (the default) rejects at
    /// once.
    pub fn max_wait(mut self, max_wait: Duration) -> Self {
        self.max_wait = Some(max_wait);
        self
    }

    /// Turns the bulkhead off (every call passes) or on.
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.enabled = Some(enabled);
        self
    }

    /// Counts this bulkhead's slots against the budget of the shared
    /// resource `name` (a connection pool, a database), which the registry
    /// enforces; see `Registry::resource`.
    pub fn resource(mut self, name: impl Into<String>) -> Self {
        self.resource = Some(name.into());
        self
    }

    /// Keeps `reserved` slots of the resource's budget for this bulkhead
    /// alone (0 to `max_concurrent`; default: all of `max_concurrent`).
    /// Above them, up to `max_concurrent`, it borrows the slots of the
    /// budget nobody reserved, so the limits on a resource may add up to
    /// more than its budget while the reservations stay within it.
    pub fn reserved(mut self, reserved: u32) -> Self {
        self.reserved = Some(reserved.into());
        self
    }

    /// Sets the key named `key` (one of the bulkhead's
    /// [`keys`](crate::keys::PolicyKind::keys)) to `value`, as
    /// configuration from outside the code does. The value is checked when
    /// the configuration is built, as for the other setters.
    ///
    /// # Errors
    ///
    /// CFG-001 if the bulkhead has no such key, or `value` is not of the
    /// kind it takes.
    pub fn set_key(self, key: &str, value: KeyValue) -> Result<Self, ConfigError> {
        Ok(match (key, value) {
            ("max_concurrent", KeyValue::Integer(n)) => self.max_concurrent(n),
            ("max_wait", KeyValue::Duration(wait)) => self.max_wait(wait),
            ("enabled", KeyValue::Bool(enabled)) => self.enabled(enabled),
            ("resource", KeyValue::Text(name)) => self.resource(name),
            ("reserved", KeyValue::Integer(n)) => self.reserved(n),
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
    /// ATR-003 if `max_concurrent` is out of range.
    pub fn build(&self) -> Result<BulkheadConfig, ConfigError> {
        self.build_on(&BulkheadConfig::default())
    }

    /// Resolves the values set here over `base`.
    ///
    /// # Errors
    ///
    /// ATR-003 if `max_concurrent` is out of range.
    pub fn build_on(&self, base: &BulkheadConfig) -> Result<BulkheadConfig, ConfigError> {
        self.build_keyed(base, "")
    }

    /// Like [`build_on`](Self::build_on), naming a bad value's key as
    /// `key_prefix` followed by the key, e.g.
    /// `bulkhead.configs.slow.max_concurrent`.
    ///
    /// # Errors
    ///
    /// ATR-003 if `max_concurrent` is out of range, ATR-008 if `reserved`
    /// is, ATR-016 if `reserved` is above `max_concurrent`.
    pub fn build_keyed(
        &self,
        base: &BulkheadConfig,
        key_prefix: &str,
    ) -> Result<BulkheadConfig, ConfigError> {
        let max_concurrent = match self.max_concurrent {
            Some(value) => key::MAX_CONCURRENT
                .check_integer(value)
                .map_err(|e| e.prefixed(key_prefix))?,
            None => base.max_concurrent,
        };
        let reserved = match self.reserved {
            Some(value) => Some(
                key::RESERVED
                    .check_integer(value)
                    .map_err(|e| e.prefixed(key_prefix))?,
            ),
            None => base.reserved,
        };
        if let Some(reserved) = reserved
            && reserved > max_concurrent
        {
            return Err(ConfigError::ReservedAboveLimit {
                key: format!("{key_prefix}reserved"),
                reserved,
                max_concurrent,
            });
        }
        Ok(BulkheadConfig {
            reserved,
            max_concurrent,
            max_wait: self.max_wait.unwrap_or(base.max_wait),
            enabled: self.enabled.unwrap_or(base.enabled),
            resource: match &self.resource {
                Some(name) => Some(intern(name)),
                None => base.resource,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_resilience4js() {
        let config = BulkheadConfig::builder().build().unwrap();
        assert_eq!(config.max_concurrent(), 25);
        assert_eq!(config.max_wait(), Duration::ZERO);
        assert!(config.enabled());
    }

    #[test]
    fn max_concurrent_zero_is_atr_003() {
        let err = BulkheadConfig::builder()
            .max_concurrent(0)
            .build()
            .unwrap_err();
        assert_eq!(err.code(), "ATR-003");
        assert!(
            err.to_string().starts_with("ATR-003: max_concurrent"),
            "{err}"
        );
    }

    #[test]
    fn max_concurrent_above_the_largest_is_atr_003() {
        let err = BulkheadConfig::builder()
            .max_concurrent(u32::MAX)
            .build()
            .unwrap_err();
        assert_eq!(err.code(), "ATR-003");
    }

    #[test]
    fn only_explicit_values_override_the_base() {
        let base = BulkheadConfig::builder()
            .max_concurrent(3)
            .max_wait(Duration::from_secs(1))
            .build()
            .unwrap();
        let config = BulkheadConfig::builder()
            .max_concurrent(7)
            .build_on(&base)
            .unwrap();
        assert_eq!(config.max_concurrent(), 7);
        assert_eq!(config.max_wait(), Duration::from_secs(1));
    }
}
