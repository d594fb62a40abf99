//! How a fallback is configured: [`FallbackConfig`] and its builder,
//! generated from the fallback's keys (`bulkhead-keys`'
//! `table/fallback.rs`).

use crate::rejection::RejectionKinds;

bulkhead_keys::__fallback_keys!(crate::config::policy_config! {
    kind: Fallback;
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
    pub struct FallbackConfig;
    /// Explicit values for a fallback, laid over a base configuration.
    ///
    /// Only the values set here override the base (the named configuration given
    /// by [`config`](Self::config), else `default`); see the registry for the full
    /// precedence. The fallback's `method` is its attribute's alone: it names
    /// code, not configuration.
    #[derive(Debug, Clone, Default, PartialEq, Eq)]
    #[must_use]
    pub struct FallbackConfigBuilder;
    extra {}
    errors: "None so far: every value of its keys is valid. (A `Result`, as every \
        policy's builder returns.)";
});

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RejectionKind;
    use crate::keys::KeyValue;

    #[test]
    fn by_default_every_rejection_and_no_error_falls_back() {
        let config = FallbackConfig::builder().build().unwrap();
        assert_eq!(config, FallbackConfig::default());
        assert_eq!(config.on(), RejectionKinds::ALL);
        assert!(!config.on_error());
        assert_eq!(
            config.to_string(),
            "on = [BulkheadFull, CircuitOpen, Timeout, RateLimited, Injected, DeadlineExceeded], on_error = false"
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
