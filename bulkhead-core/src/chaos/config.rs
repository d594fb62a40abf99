//! How a chaos policy is configured: [`ChaosConfig`] and its builder,
//! generated from the chaos policy's keys (`bulkhead-keys`'
//! `table/chaos.rs`), and [`ChaosFault`], what an injected fault is.

use std::time::Duration;

pub use bulkhead_keys::ChaosLatency;

bulkhead_keys::__chaos_keys!(crate::config::policy_config! {
    kind: Chaos;
    /// The resolved configuration of a chaos policy.
    ///
    /// The default injects nothing: `enabled` is false and both rates are
    /// zero.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_core::{ChaosConfig, ChaosFault, ChaosLatency};
    ///
    /// let config = ChaosConfig::builder()
    ///     .enabled(true)
    ///     .fault_rate(0.05)
    ///     .latency_rate(0.2)
    ///     .latency(ChaosLatency::range(Duration::from_millis(100), Duration::from_millis(500)))
    ///     .seed(42)
    ///     .build()?;
    /// assert_eq!(config.fault(), ChaosFault::Error);
    /// assert_eq!(
    ///     config.to_string(),
    ///     "enabled = true, fault_rate = 0.05, latency_rate = 0.2, latency = 100ms..500ms, \
    ///      fault = error, seed = 42"
    /// );
    /// # Ok::<(), bulkhead_core::ConfigError>(())
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct ChaosConfig;
    /// Explicit values for a chaos policy, laid over a base configuration.
    ///
    /// Only the values set here override the base (the named configuration given
    /// by [`config`](Self::config), else `default`); see the registry for the full
    /// precedence. Values are checked when the configuration is resolved.
    #[derive(Debug, Clone, Default, PartialEq)]
    #[must_use]
    pub struct ChaosConfigBuilder;
    extra {}
    errors: "ATR-008 if a rate is not between 0 and 1; ATR-001 if `latency` is a range whose start is after its end.";
});

impl ChaosConfig {
    /// The default latency injected, one second.
    pub const DEFAULT_LATENCY: Duration = Duration::from_secs(1);
}

/// What an injected fault is.
///
/// # Examples
///
/// ```
/// use bulkhead_core::ChaosFault;
///
/// assert_eq!(ChaosFault::parse("fault", "panic"), Ok(ChaosFault::Panic));
/// assert_eq!(ChaosFault::parse("fault", "boom").unwrap_err().code(), "ATR-010");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ChaosFault {
    /// The call fails with `Rejection::Injected`, which a method's error
    /// gets through `From<Rejection>`: the outer policies see it as they
    /// see any rejection (the breaker records it, the retry retries it,
    /// the fallback may answer it).
    #[default]
    Error,
    /// The call panics, with a message naming the instance.
    Panic,
}

crate::config::choice_names! {
    ChaosFault {
        Error => "error",
        Panic => "panic",
    }
    /// The name used in attributes and configuration: `error` or `panic`.
    fn name;
    /// Parses `error` or `panic`, as given for `key`.
    ///
    /// # Errors
    ///
    /// [`ConfigError::InvalidChoice`](crate::ConfigError::InvalidChoice) (ATR-010) for anything else.
    fn parse;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_injects_nothing() {
        let config = ChaosConfig::builder().build().unwrap();
        assert_eq!(config, ChaosConfig::default());
        assert!(!config.enabled());
        assert_eq!((config.fault_rate(), config.latency_rate()), (0.0, 0.0));
        assert_eq!(
            config.latency(),
            ChaosLatency::fixed(Duration::from_secs(1))
        );
        assert_eq!((config.fault(), config.seed()), (ChaosFault::Error, None));
        assert_eq!(
            config.to_string(),
            "enabled = false, fault_rate = 0, latency_rate = 0, latency = 1s, fault = error"
        );
    }

    #[test]
    fn bad_values_give_their_codes_naming_the_key() {
        let builder = ChaosConfig::builder();
        let err = builder.clone().fault_rate(1.5).build().unwrap_err();
        assert_eq!((err.code(), err.key()), ("ATR-008", "fault_rate"));
        let err = builder.clone().latency_rate(f64::NAN).build().unwrap_err();
        assert_eq!((err.code(), err.key()), ("ATR-008", "latency_rate"));
        let err = builder
            .clone()
            .latency(ChaosLatency::range(
                Duration::from_secs(2),
                Duration::from_secs(1),
            ))
            .build_keyed(&ChaosConfig::default(), "chaos.instances.db.")
            .unwrap_err();
        assert_eq!(
            (err.code(), err.key()),
            ("ATR-001", "chaos.instances.db.latency")
        );
        let err = builder
            .set_key("fault", crate::keys::KeyValue::Text("boom".to_owned()))
            .unwrap_err();
        assert_eq!((err.code(), err.key()), ("ATR-010", "fault"));
    }
}
