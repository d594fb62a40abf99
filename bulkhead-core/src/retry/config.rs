//! How a retry policy is configured: [`RetryConfig`] and its builder,
//! generated from the retry policy's keys (`bulkhead-keys`'
//! `table/retry.rs`).

use std::time::Duration;

use crate::rejection::RejectionKinds;

bulkhead_keys::__retry_keys!(crate::config::policy_config! {
    kind: Retry;
    /// The resolved configuration of a retry policy.
    ///
    /// Defaults are Resilience4j's: 3 attempts (the first call included), a
    /// fixed 500 ms wait between them, no jitter, no cap, and every
    /// rejection retried.
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
    pub struct RetryConfig;
    /// Explicit values for a retry policy, laid over a base configuration.
    ///
    /// Only the values set here override the base (the named configuration
    /// given by [`config`](Self::config), else `default`); see the registry
    /// for the full precedence. Values are checked when the configuration
    /// is resolved.
    #[derive(Debug, Clone, Default, PartialEq)]
    #[must_use]
    pub struct RetryConfigBuilder;
    extra {}
    errors: "ATR-008 if `max_attempts`, `backoff_multiplier`, `jitter` or \
        `budget_ratio` is out of range, or `max_wait_interval` or \
        `budget_window` is zero.";
});

impl RetryConfig {
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
    /// The default least time an attempt needs before the call's deadline:
    /// zero (an attempt starts while any time is left).
    pub const DEFAULT_MIN_ATTEMPT_TIME: Duration = Duration::ZERO;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RejectionKind;

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
    fn min_attempt_time_is_zero_by_default_and_shown_only_when_set() {
        assert_eq!(RetryConfig::default().min_attempt_time(), Duration::ZERO);
        let config = RetryConfig::builder()
            .min_attempt_time(Duration::from_millis(20))
            .build()
            .unwrap();
        assert_eq!(config.min_attempt_time(), Duration::from_millis(20));
        assert!(
            config
                .to_string()
                .ends_with("abort_on = [], min_attempt_time = 20ms"),
            "{config}"
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
