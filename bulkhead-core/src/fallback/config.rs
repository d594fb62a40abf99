//! How a fallback is configured: [`FallbackConfig`] and its builder.

use std::fmt;

use crate::config::ConfigError;
use crate::keys::{Key, KeyValue, Origin, ValueKind};
use crate::rejection::{RejectionKind, RejectionKinds};

/// The fallback's keys, each checked by the builder with its row's range.
mod key {
    use super::*;

    pub(super) const METHOD: Key = Key::new(
        "method",
        ValueKind::Method,
        "",
        "the method of the same trait that answers instead, called on the delegate with the same arguments; it must have the same signature",
    )
    .only_in(Origin::Attribute);
    pub(super) const ON: Key = Key::new(
        "on",
        ValueKind::RejectionKinds,
        "[BulkheadFull, CircuitOpen, Timeout, RateLimited]",
        "the rejections that make the fallback answer",
    );
    pub(super) const ON_ERROR: Key = Key::new(
        "on_error",
        ValueKind::Bool,
        "false",
        "whether the method's own errors make the fallback answer too",
    );
}

/// The resolved configuration of a fallback policy: which outcomes of a
/// call make the fallback method answer instead.
///
/// By default any rejection does (a full bulkhead, an open breaker, a
/// timeout, no rate-limiter permit), and the method's own errors do not.
///
/// # Examples
///
/// ```
/// use bulkhead_core::{FallbackConfig, RejectionKind};
///
/// let config = FallbackConfig::builder()
///     .on([RejectionKind::BulkheadFull, RejectionKind::CircuitOpen])
///     .build()?;
/// assert!(config.on().contains(RejectionKind::CircuitOpen));
/// assert!(!config.on_error());
/// assert_eq!(config.to_string(), "on = [BulkheadFull, CircuitOpen], on_error = false");
/// # Ok::<(), bulkhead_core::ConfigError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FallbackConfig {
    on: RejectionKinds,
    on_error: bool,
}

impl FallbackConfig {
    /// The fallback's keys, in the order its documentation lists them (see
    /// [`PolicyKind::keys`](crate::keys::PolicyKind::keys)).
    pub(crate) const KEYS: &'static [Key] = &[key::METHOD, key::ON, key::ON_ERROR];

    /// A builder starting from no explicit values.
    pub fn builder() -> FallbackConfigBuilder {
        FallbackConfigBuilder::default()
    }

    /// Every key that configuration sets (the policy's
    /// [key table](crate::keys::PolicyKind::keys) without the attribute's
    /// own, such as predicates), in the table's order, with its value here
    /// as configuration writes it (`none` for a key left without one): what
    /// a registry's reload compares key by key.
    pub fn values(&self) -> Vec<(&'static str, String)> {
        vec![
            (key::ON.name(), self.on.to_string()),
            (key::ON_ERROR.name(), self.on_error.to_string()),
        ]
    }

    /// The rejections that make the fallback answer (every kind by
    /// default).
    pub fn on(&self) -> RejectionKinds {
        self.on
    }

    /// Whether the method's own errors make the fallback answer too
    /// (`false` by default).
    pub fn on_error(&self) -> bool {
        self.on_error
    }
}

impl Default for FallbackConfig {
    fn default() -> Self {
        FallbackConfig {
            on: RejectionKinds::ALL,
            on_error: false,
        }
    }
}

impl fmt::Display for FallbackConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "on = {}, on_error = {}", self.on, self.on_error)
    }
}

/// Explicit values for a fallback, laid over a base configuration.
///
/// Only the values set here override the base (the named configuration given
/// by [`config`](Self::config), else `default`); see the registry for the full
/// precedence. The fallback's `method` is its attribute's alone: it names
/// code, not configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use]
pub struct FallbackConfigBuilder {
    config: Option<String>,
    on: Option<RejectionKinds>,
    on_error: Option<bool>,
}

impl FallbackConfigBuilder {
    /// Starts from the named configuration instead of `default`.
    pub fn config(mut self, name: impl Into<String>) -> Self {
        self.config = Some(name.into());
        self
    }

    /// The rejections that make the fallback answer (replacing the base's
    /// list); an empty list leaves only the method's own errors, if
    /// [`on_error`](Self::on_error).
    pub fn on(mut self, kinds: impl IntoIterator<Item = RejectionKind>) -> Self {
        self.on = Some(kinds.into_iter().collect());
        self
    }

    /// Whether the method's own errors make the fallback answer too.
    pub fn on_error(mut self, on_error: bool) -> Self {
        self.on_error = Some(on_error);
        self
    }

    /// Sets the key named `key` (one of the fallback's
    /// [`keys`](crate::keys::PolicyKind::keys), but for `method`, which
    /// only an attribute takes) to `value`, as configuration from outside
    /// the code does.
    ///
    /// # Errors
    ///
    /// CFG-001 if the fallback has no such key, or `value` is not of the
    /// kind it takes.
    pub fn set_key(self, key: &str, value: KeyValue) -> Result<Self, ConfigError> {
        Ok(match (key, value) {
            ("on", KeyValue::RejectionKinds(kinds)) => self.on(kinds.iter()),
            ("on_error", KeyValue::Bool(on_error)) => self.on_error(on_error),
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
    /// None so far: every value of its keys is valid. (A `Result`, as
    /// every policy's builder returns.)
    pub fn build(&self) -> Result<FallbackConfig, ConfigError> {
        self.build_on(&FallbackConfig::default())
    }

    /// Resolves the values set here over `base`.
    ///
    /// # Errors
    ///
    /// As for [`build`](Self::build).
    pub fn build_on(&self, base: &FallbackConfig) -> Result<FallbackConfig, ConfigError> {
        self.build_keyed(base, "")
    }

    /// Like [`build_on`](Self::build_on); `key_prefix` would name a bad
    /// value's key.
    ///
    /// # Errors
    ///
    /// As for [`build`](Self::build).
    pub fn build_keyed(
        &self,
        base: &FallbackConfig,
        key_prefix: &str,
    ) -> Result<FallbackConfig, ConfigError> {
        let _ = key_prefix;
        Ok(FallbackConfig {
            on: self.on.unwrap_or(base.on),
            on_error: self.on_error.unwrap_or(base.on_error),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_default_every_rejection_and_no_error_falls_back() {
        let config = FallbackConfig::builder().build().unwrap();
        assert_eq!(config, FallbackConfig::default());
        assert_eq!(config.on(), RejectionKinds::ALL);
        assert!(!config.on_error());
        assert_eq!(
            config.to_string(),
            "on = [BulkheadFull, CircuitOpen, Timeout, RateLimited], on_error = false"
        );
    }

    #[test]
    fn only_explicit_values_override_the_base() {
        let base = FallbackConfig::builder().on_error(true).build().unwrap();
        let builder = FallbackConfig::builder().config("lenient").on([]);
        assert_eq!(builder.config_name(), Some("lenient"));
        let config = builder.build_on(&base).unwrap();
        assert!(config.on().is_empty());
        assert!(config.on_error());
    }

    #[test]
    fn configuration_sets_on_and_on_error_but_not_the_method() {
        let builder = FallbackConfig::builder()
            .set_key("on_error", KeyValue::Bool(true))
            .unwrap()
            .set_key(
                "on",
                KeyValue::RejectionKinds(RejectionKinds::EMPTY.with(RejectionKind::Timeout)),
            )
            .unwrap();
        let config = builder.build().unwrap();
        assert_eq!(config.to_string(), "on = [Timeout], on_error = true");
        let err = FallbackConfig::builder()
            .set_key("method", KeyValue::Text("cached".to_owned()))
            .unwrap_err();
        assert_eq!(err.code(), "CFG-001");
    }
}
