//! How hedging is configured: [`HedgeConfig`] and its builder, generated
//! from the hedge's keys (`bulkhead-keys`' `table/hedge.rs`).

use std::time::Duration;

use super::HedgeDelay;
use crate::config::key_of;
use crate::keys::{PolicyKind, ValueKind};

bulkhead_keys::__hedge_keys!(crate::config::policy_config! {
    kind: Hedge;
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
    pub struct HedgeConfig;
    /// Explicit values for a hedge, laid over a base configuration.
    ///
    /// Only the values set here override the base (the named configuration given
    /// by [`config`](Self::config), else `default`); see the registry for the full
    /// precedence. Values are checked when the configuration is resolved.
    #[derive(Debug, Clone, Default, PartialEq, Eq)]
    #[must_use]
    pub struct HedgeConfigBuilder;
    extra {}
    errors: "ATR-008 if `max_hedged` or a percentile `delay` is out of range.";
});

impl HedgeConfig {
    /// The most hedges a call may start: 10, as in Polly. Each running
    /// attempt holds its own slot, permit and breaker trial.
    pub const MAX_HEDGED: u32 = match key_of(PolicyKind::Hedge, "max_hedged").kind() {
        ValueKind::Count { max, .. } => max,
        _ => panic!("max_hedged is a count"),
    };
    /// The default number of hedges, 1.
    pub const DEFAULT_MAX_HEDGED: u32 = 1;
    /// The default delay before a hedge, 2 s (Polly's).
    pub const DEFAULT_DELAY: Duration = Duration::from_secs(2);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::KeyValue;

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
