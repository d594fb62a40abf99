//! How a bulkhead is configured: [`BulkheadConfig`] and its builder.

use std::fmt;
use std::time::Duration;

use super::adaptive::{Adaptive, Aimd, Gradient2, Sampling, Vegas};
use super::semaphore::MAX_CONCURRENT;
use crate::config::{ConfigError, written_duration, written_or_none};
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
        "how many calls may hold a slot at once; with `adaptive`, the most the algorithm may allow",
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
    pub(super) const ADAPTIVE: Key = Key::new(
        "adaptive",
        ValueKind::Choice {
            ty: "Adaptive",
            choices: &[
                Adaptive::Off.name(),
                Adaptive::Aimd.name(),
                Adaptive::Vegas.name(),
                Adaptive::Gradient2.name(),
            ],
        },
        "\"off\"",
        "the algorithm that moves the limit between `min_concurrent` and `max_concurrent` from the calls' hold times; `off` keeps `max_concurrent`",
    );
    pub(super) const MIN_CONCURRENT: Key = Key::new(
        "min_concurrent",
        ValueKind::Limit {
            max: super::MAX_CONCURRENT,
        },
        "1",
        "with `adaptive`: the lowest limit the algorithm may set (ATR-015 unless `min_concurrent` <= `initial_concurrent` <= `max_concurrent`)",
    );
    pub(super) const INITIAL_CONCURRENT: Key = Key::new(
        "initial_concurrent",
        ValueKind::Limit {
            max: super::MAX_CONCURRENT,
        },
        "20",
        "with `adaptive`: the limit it starts from, at which it measures the no-load latency; without it, 20 kept within `min_concurrent` and `max_concurrent`",
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
    adaptive: Adaptive,
    min_concurrent: u32,
    /// `None`: 20, kept within `min_concurrent` and `max_concurrent`.
    initial_concurrent: Option<u32>,
    aimd: Aimd,
    vegas: Vegas,
    gradient2: Gradient2,
    sampling: Sampling,
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
        key::ADAPTIVE,
        key::MIN_CONCURRENT,
        key::INITIAL_CONCURRENT,
        key::RESERVED,
    ];

    /// The default limit, 25.
    pub const DEFAULT_MAX_CONCURRENT: u32 = 25;
    /// The limit an adaptive bulkhead starts from unless told otherwise, 20
    /// (kept within `min_concurrent` and `max_concurrent`).
    pub const DEFAULT_INITIAL_CONCURRENT: u32 = 20;
    /// The largest accepted limit, 2^30 - 1.
    pub const MAX_CONCURRENT: u32 = MAX_CONCURRENT;

    /// A builder starting from no explicit values.
    pub fn builder() -> BulkheadConfigBuilder {
        BulkheadConfigBuilder::default()
    }

    /// How many calls may hold a slot at once; for an adaptive bulkhead,
    /// the most its algorithm may allow (the ceiling).
    pub fn max_concurrent(&self) -> u32 {
        self.max_concurrent
    }

    /// The algorithm that moves the limit, if any.
    pub fn adaptive(&self) -> Adaptive {
        self.adaptive
    }

    /// The lowest limit an adaptive bulkhead's algorithm may set.
    pub fn min_concurrent(&self) -> u32 {
        self.min_concurrent
    }

    /// The limit an adaptive bulkhead starts from: as set, or 20 kept
    /// within `min_concurrent` and `max_concurrent`.
    pub fn initial_concurrent(&self) -> u32 {
        self.initial_concurrent.unwrap_or_else(|| {
            Self::DEFAULT_INITIAL_CONCURRENT
                .min(self.max_concurrent)
                .max(self.min_concurrent)
        })
    }

    /// The tunables of [`Adaptive::Aimd`].
    pub fn aimd(&self) -> Aimd {
        self.aimd
    }

    /// The tunables of [`Adaptive::Vegas`].
    pub fn vegas(&self) -> Vegas {
        self.vegas
    }

    /// The tunables of [`Adaptive::Gradient2`].
    pub fn gradient2(&self) -> Gradient2 {
        self.gradient2
    }

    /// How an adaptive bulkhead gathers and judges its samples.
    pub fn sampling(&self) -> Sampling {
        self.sampling
    }

    /// Checks that `min_concurrent` <= `initial_concurrent` <=
    /// `max_concurrent`, and `reserved` <= `max_concurrent`, naming the key
    /// out of place after `key_prefix`.
    ///
    /// # Errors
    ///
    /// ATR-015 if the limits are out of order, ATR-016 if `reserved` is
    /// above `max_concurrent`.
    pub fn check_limits(&self, key_prefix: &str) -> Result<(), ConfigError> {
        check_order(
            Some(self.min_concurrent),
            Some(self.initial_concurrent()),
            Some(self.max_concurrent),
        )
        .map_err(|e| e.prefixed(key_prefix))?;
        match self.reserved {
            Some(reserved) if reserved > self.max_concurrent => {
                Err(ConfigError::ReservedAboveLimit {
                    key: format!("{key_prefix}reserved"),
                    reserved,
                    max_concurrent: self.max_concurrent,
                })
            }
            _ => Ok(()),
        }
    }

    /// Every key that configuration sets (the policy's
    /// [key table](crate::keys::PolicyKind::keys) without the attribute's
    /// own, such as predicates), in the table's order, with its value here
    /// as configuration writes it (`none` for a key left without one): what
    /// a registry's reload compares key by key.
    pub fn values(&self) -> Vec<(&'static str, String)> {
        vec![
            (key::MAX_CONCURRENT.name(), self.max_concurrent.to_string()),
            (key::MAX_WAIT.name(), written_duration(self.max_wait)),
            (key::ENABLED.name(), self.enabled.to_string()),
            (key::RESOURCE.name(), written_or_none(self.resource)),
            (key::ADAPTIVE.name(), self.adaptive.to_string()),
            (key::MIN_CONCURRENT.name(), self.min_concurrent.to_string()),
            (
                key::INITIAL_CONCURRENT.name(),
                written_or_none(self.initial_concurrent),
            ),
            (key::RESERVED.name(), written_or_none(self.reserved)),
        ]
    }

    /// The same configuration, counted against `resource`'s budget
    /// instead (as a registry's reload moves a live bulkhead's
    /// bookkeeping).
    #[must_use]
    pub fn on_resource(mut self, resource: Option<&str>) -> Self {
        self.resource = resource.map(intern);
        self
    }

    /// The configuration a live bulkhead made from this one runs with once
    /// its limit (an adaptive bulkhead's ceiling) is set to `max`, as
    /// [`Bulkhead::set_max_concurrent`](super::Bulkhead::set_max_concurrent)
    /// sets it: `initial_concurrent` (which only mattered at the start) and
    /// `reserved` kept at most `max`.
    ///
    /// # Errors
    ///
    /// ATR-003 if `max` is out of range; ATR-015 if it is below an adaptive
    /// bulkhead's `min_concurrent`.
    pub fn with_max_concurrent(&self, max: u32) -> Result<BulkheadConfig, ConfigError> {
        let max = crate::config::check_limit(
            "max_concurrent",
            max.into(),
            BulkheadConfig::MAX_CONCURRENT.into(),
        )?;
        if self.adaptive != Adaptive::Off && max < self.min_concurrent {
            return Err(ConfigError::LimitsOutOfOrder {
                key: "min_concurrent".to_owned(),
                min: self.min_concurrent.to_string(),
                initial: "..".to_owned(),
                max: max.to_string(),
            });
        }
        Ok((*self).with_live_limits(max, self.reserved))
    }

    /// The same configuration with the limit (an adaptive bulkhead's
    /// ceiling) `max` and the reservation `reserved` a live bulkhead runs
    /// with (`set_max_concurrent`, `set_reserved`), the floor, the start and
    /// the reservation kept below the limit.
    pub(crate) fn with_live_limits(mut self, max: u32, reserved: Option<u32>) -> Self {
        self.max_concurrent = max;
        self.min_concurrent = self.min_concurrent.min(max);
        self.initial_concurrent = self.initial_concurrent.map(|n| n.min(max));
        self.reserved = reserved.map(|r| r.min(max));
        self
    }

    /// Checks the keys written together (as in one attribute, one layer of
    /// configuration) that depend on each other, for those given:
    /// `min_concurrent` <= `initial_concurrent` <= `max_concurrent`
    /// (ATR-015, naming the key out of place), and `reserved` <=
    /// `max_concurrent` (ATR-016, about `reserved`).
    pub(crate) fn check_together(values: &[(&str, &KeyValue)]) -> Result<(), ConfigError> {
        let integer = |name: &str| {
            values.iter().find_map(|(key, value)| match value {
                KeyValue::Integer(n) if *key == name => Some(*n),
                _ => None,
            })
        };
        check_order(
            integer("min_concurrent"),
            integer("initial_concurrent"),
            integer("max_concurrent"),
        )?;
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
            adaptive: Adaptive::Off,
            min_concurrent: 1,
            initial_concurrent: None,
            aimd: Aimd::default(),
            vegas: Vegas::default(),
            gradient2: Gradient2::default(),
            sampling: Sampling::default(),
            reserved: None,
        }
    }
}

/// `min <= initial <= max` for those given, else ATR-015 naming the key
/// out of order.
fn check_order(
    min: Option<u32>,
    initial: Option<u32>,
    max: Option<u32>,
) -> Result<(), ConfigError> {
    let out_of_order = |key: &str| ConfigError::LimitsOutOfOrder {
        key: key.to_owned(),
        min: min.map_or_else(|| "..".to_owned(), |n| n.to_string()),
        initial: initial.map_or_else(|| "..".to_owned(), |n| n.to_string()),
        max: max.map_or_else(|| "..".to_owned(), |n| n.to_string()),
    };
    let above = |a: Option<u32>, b: Option<u32>| matches!((a, b), (Some(a), Some(b)) if a > b);
    if above(min, max) {
        return Err(out_of_order("min_concurrent"));
    }
    if above(min, initial) || above(initial, max) {
        return Err(out_of_order("initial_concurrent"));
    }
    Ok(())
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
        if self.adaptive != Adaptive::Off {
            write!(
                f,
                ", adaptive = {}, min_concurrent = {}, initial_concurrent = {}",
                self.adaptive,
                self.min_concurrent,
                self.initial_concurrent()
            )?;
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
    adaptive: Option<Adaptive>,
    min_concurrent: Option<u64>,
    initial_concurrent: Option<u64>,
    aimd: Option<Aimd>,
    vegas: Option<Vegas>,
    gradient2: Option<Gradient2>,
    sampling: Option<Sampling>,
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

    /// Lets `adaptive`'s algorithm move the limit between `min_concurrent`
    /// and `max_concurrent` (then the ceiling); [`Adaptive::Off`], the
    /// default, keeps `max_concurrent`. See the adaptive guide.
    pub fn adaptive(mut self, adaptive: Adaptive) -> Self {
        self.adaptive = Some(adaptive);
        self
    }

    /// The lowest limit an adaptive bulkhead's algorithm may set (1 to
    /// 2^30 - 1, at most `initial_concurrent`; default 1).
    pub fn min_concurrent(mut self, min_concurrent: u32) -> Self {
        self.min_concurrent = Some(min_concurrent.into());
        self
    }

    /// The limit an adaptive bulkhead starts from, at which its first
    /// window measures the no-load latency (between `min_concurrent` and
    /// `max_concurrent`; default 20 kept between them).
    pub fn initial_concurrent(mut self, initial_concurrent: u32) -> Self {
        self.initial_concurrent = Some(initial_concurrent.into());
        self
    }

    /// The tunables of [`Adaptive::Aimd`], from [`Aimd::builder`].
    pub fn aimd(mut self, aimd: Aimd) -> Self {
        self.aimd = Some(aimd);
        self
    }

    /// The tunables of [`Adaptive::Vegas`], from [`Vegas::builder`].
    pub fn vegas(mut self, vegas: Vegas) -> Self {
        self.vegas = Some(vegas);
        self
    }

    /// The tunables of [`Adaptive::Gradient2`], from
    /// [`Gradient2::builder`].
    pub fn gradient2(mut self, gradient2: Gradient2) -> Self {
        self.gradient2 = Some(gradient2);
        self
    }

    /// How an adaptive bulkhead gathers and judges its samples, from
    /// [`Sampling::builder`].
    pub fn sampling(mut self, sampling: Sampling) -> Self {
        self.sampling = Some(sampling);
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
            ("adaptive", KeyValue::Text(name)) => self.adaptive(Adaptive::parse(key, &name)?),
            ("min_concurrent", KeyValue::Integer(n)) => self.min_concurrent(n),
            ("initial_concurrent", KeyValue::Integer(n)) => self.initial_concurrent(n),
            ("reserved", KeyValue::Integer(n)) => self.reserved(n),
            (key, value) => return Err(ConfigError::no_such_key(key, &value)),
        })
    }

    /// The named base configuration, if one was chosen.
    pub fn config_name(&self) -> Option<&str> {
        self.config.as_deref()
    }

    /// The values set here, and those of `lower` that are not: two layers
    /// written for one instance (say TOML's overrides and the
    /// environment's), this one above.
    pub fn over(&self, lower: &BulkheadConfigBuilder) -> BulkheadConfigBuilder {
        let BulkheadConfigBuilder {
            config,
            max_concurrent,
            max_wait,
            enabled,
            resource,
            adaptive,
            min_concurrent,
            initial_concurrent,
            aimd,
            vegas,
            gradient2,
            sampling,
            reserved,
        } = self.clone();
        BulkheadConfigBuilder {
            config: config.or_else(|| lower.config.clone()),
            max_concurrent: max_concurrent.or(lower.max_concurrent),
            max_wait: max_wait.or(lower.max_wait),
            enabled: enabled.or(lower.enabled),
            resource: resource.or_else(|| lower.resource.clone()),
            adaptive: adaptive.or(lower.adaptive),
            min_concurrent: min_concurrent.or(lower.min_concurrent),
            initial_concurrent: initial_concurrent.or(lower.initial_concurrent),
            aimd: aimd.or(lower.aimd),
            vegas: vegas.or(lower.vegas),
            gradient2: gradient2.or(lower.gradient2),
            sampling: sampling.or(lower.sampling),
            reserved: reserved.or(lower.reserved),
        }
    }

    /// Checks the values set here against each other, as an attribute's
    /// are: `min_concurrent` <= `initial_concurrent` <= `max_concurrent`
    /// among those set (ATR-015) and `reserved` <= `max_concurrent` if both
    /// are (ATR-016), naming the key out of place after `key_prefix`. A
    /// value not set here is left to the layers below (so it is no error
    /// that one of them could fix); check a resolved configuration with
    /// [`BulkheadConfig::check_limits`].
    ///
    /// # Errors
    ///
    /// ATR-015 or ATR-016, as above.
    ///
    /// # Examples
    ///
    /// ```
    /// use bulkhead_core::BulkheadConfig;
    ///
    /// let written = BulkheadConfig::builder().min_concurrent(5).initial_concurrent(3);
    /// let err = written.check_together("bulkhead.instances.a.").unwrap_err();
    /// assert_eq!(
    ///     (err.code(), err.key()),
    ///     ("ATR-015", "bulkhead.instances.a.initial_concurrent")
    /// );
    /// // A layer below may still give a max_concurrent of 10.
    /// assert!(BulkheadConfig::builder().min_concurrent(12).check_together("").is_ok());
    /// ```
    pub fn check_together(&self, key_prefix: &str) -> Result<(), ConfigError> {
        let written: Vec<(&str, KeyValue)> = [
            (&key::MAX_CONCURRENT, self.max_concurrent),
            (&key::MIN_CONCURRENT, self.min_concurrent),
            (&key::INITIAL_CONCURRENT, self.initial_concurrent),
            (&key::RESERVED, self.reserved),
        ]
        .into_iter()
        .filter_map(|(key, value)| {
            // Set through a `u32` setter: in range.
            value.map(|n| {
                (
                    key.name(),
                    KeyValue::Integer(u32::try_from(n).unwrap_or(u32::MAX)),
                )
            })
        })
        .collect();
        let pairs: Vec<(&str, &KeyValue)> = written.iter().map(|(k, v)| (*k, v)).collect();
        BulkheadConfig::check_together(&pairs).map_err(|e| e.prefixed(key_prefix))
    }

    /// Resolves the values set here over the built-in defaults.
    ///
    /// # Errors
    ///
    /// ATR-003 if a limit is out of range, ATR-015 unless
    /// `min_concurrent` <= `initial_concurrent` <= `max_concurrent`.
    pub fn build(&self) -> Result<BulkheadConfig, ConfigError> {
        self.build_on(&BulkheadConfig::default())
    }

    /// Resolves the values set here over `base`.
    ///
    /// # Errors
    ///
    /// As for [`build`](Self::build).
    pub fn build_on(&self, base: &BulkheadConfig) -> Result<BulkheadConfig, ConfigError> {
        let config = self.build_keyed(base, "")?;
        config.check_limits("")?;
        Ok(config)
    }

    /// Like [`build_on`](Self::build_on), naming a bad value's key as
    /// `key_prefix` followed by the key, e.g.
    /// `bulkhead.configs.slow.max_concurrent`, and checking each value on
    /// its own only: a layer of configuration may set `min_concurrent` (or
    /// `reserved`) that another layer's `max_concurrent` makes fit. Check
    /// the values against each other with
    /// [`BulkheadConfig::check_limits`] once every layer is laid.
    ///
    /// # Errors
    ///
    /// ATR-003 if a limit is out of range, ATR-008 if `reserved` is.
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
        let limit = |key: &Key, value: Option<u64>, base: Option<u32>| match value {
            Some(value) => key
                .check_integer(value)
                .map(Some)
                .map_err(|e| e.prefixed(key_prefix)),
            None => Ok(base),
        };
        let min_concurrent = limit(
            &key::MIN_CONCURRENT,
            self.min_concurrent,
            Some(base.min_concurrent),
        )?
        .unwrap_or(base.min_concurrent);
        let initial_concurrent = limit(
            &key::INITIAL_CONCURRENT,
            self.initial_concurrent,
            base.initial_concurrent,
        )?;
        let reserved = match self.reserved {
            Some(value) => Some(
                key::RESERVED
                    .check_integer(value)
                    .map_err(|e| e.prefixed(key_prefix))?,
            ),
            None => base.reserved,
        };
        let config = BulkheadConfig {
            reserved,
            max_concurrent,
            max_wait: self.max_wait.unwrap_or(base.max_wait),
            enabled: self.enabled.unwrap_or(base.enabled),
            resource: match &self.resource {
                Some(name) => Some(intern(name)),
                None => base.resource,
            },
            adaptive: self.adaptive.unwrap_or(base.adaptive),
            min_concurrent,
            initial_concurrent,
            aimd: self.aimd.unwrap_or(base.aimd),
            vegas: self.vegas.unwrap_or(base.vegas),
            gradient2: self.gradient2.unwrap_or(base.gradient2),
            sampling: self.sampling.unwrap_or(base.sampling),
        };
        Ok(config)
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
