//! How a timeout is configured: [`TimeoutConfig`] and its builder,
//! generated from the timeout's keys (`bulkhead-keys`' `table/timeout.rs`).

use std::time::Duration;

bulkhead_keys::__timeout_keys!(crate::config::policy_config! {
    kind: Timeout;
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
    pub struct TimeoutConfig;
    /// Explicit values for a timeout, laid over a base configuration.
    ///
    /// Only the values set here override the base (the named configuration given
    /// by [`config`](Self::config), else `default`); see the registry for the full
    /// precedence. Values are checked when the configuration is resolved.
    #[derive(Debug, Clone, Default, PartialEq, Eq)]
    #[must_use]
    pub struct TimeoutConfigBuilder;
    extra {}
    errors: "ATR-008 if `duration` is zero.";
});

impl TimeoutConfig {
    /// The default timeout, one second.
    pub const DEFAULT_DURATION: Duration = Duration::from_secs(1);
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
