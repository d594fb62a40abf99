//! How a rate limiter is configured: [`RateLimiterConfig`] and its builder,
//! generated from the rate limiter's keys (`bulkhead-keys`'
//! `table/rate_limiter.rs`).

use std::time::Duration;

bulkhead_keys::__rate_limiter_keys!(crate::config::policy_config! {
    kind: RateLimiter;
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
    pub struct RateLimiterConfig;
    /// Explicit values for a rate limiter, laid over a base configuration.
    ///
    /// Only the values set here override the base (the named configuration given
    /// by [`config`](Self::config), else `default`); see the registry for the full
    /// precedence. Values are checked when the configuration is resolved.
    #[derive(Debug, Clone, Default, PartialEq, Eq)]
    #[must_use]
    pub struct RateLimiterConfigBuilder;
    extra {}
    errors: "ATR-008 if `limit_for_period` is zero or `refresh_period` is zero.";
});

impl RateLimiterConfig {
    /// The default number of permits per period, 50.
    pub const DEFAULT_LIMIT_FOR_PERIOD: u32 = 50;
    /// The default period, 500 nanoseconds.
    pub const DEFAULT_REFRESH_PERIOD: Duration = Duration::from_nanos(500);
    /// The default longest wait for a permit, 5 seconds.
    pub const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(5);
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
