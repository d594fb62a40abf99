//! The kinds of policy the registry knows, as [`Kind`]s: how each is built,
//! which configuration keys it has, and what of a new configuration can be
//! applied to a live instance.

use bulkhead_core::{
    Bulkhead, BulkheadConfig, BulkheadConfigBuilder, CircuitBreaker, CircuitBreakerConfig,
    CircuitBreakerConfigBuilder, ConfigError, PolicyContext, RateLimiter, RateLimiterConfig,
    RateLimiterConfigBuilder, Retry, RetryConfig, RetryConfigBuilder, SlidingWindow, Timeout,
    TimeoutConfig, TimeoutConfigBuilder,
};

use crate::error::RegistryError;
use crate::source::{Value, suggest};
use crate::store::Kind;

macro_rules! kind {
    ($(#[$meta:meta])* $kind:ident, $name:literal, $policy:ty, $config:ty, $spec:ty) => {
        $(#[$meta])*
        pub(crate) struct $kind;

        impl Kind for $kind {
            const NAME: &'static str = $name;
            const KEYS: &'static [&'static str] = <$spec as SetKey>::KEYS;
            type Config = $config;
            type Spec = $spec;
            type Policy = $policy;

            fn config_name(spec: &Self::Spec) -> Option<&str> {
                spec.config_name()
            }

            fn with_config_name(spec: Self::Spec, name: &str) -> Self::Spec {
                spec.config(name)
            }

            fn build(
                spec: &Self::Spec,
                base: &Self::Config,
                key_prefix: &str,
            ) -> Result<Self::Config, ConfigError> {
                spec.build_keyed(base, key_prefix)
            }

            fn create(id: &str, config: Self::Config, context: PolicyContext) -> Self::Policy {
                <$policy>::with_context(id, config, context)
            }

            fn set(spec: Self::Spec, key: &str, value: &Value, full_key: &str) -> Result<Self::Spec, RegistryError> {
                set_key(spec, key, value, full_key)
            }

            fn reconfigure(policy: &Self::Policy, old: &Self::Config, new: &Self::Config) -> bool {
                Live::reconfigure(policy, old, new)
            }

            fn live(policy: &Self::Policy, declared: &Self::Config) -> Self::Config {
                Live::live(policy, declared)
            }
        }
    };
}

mod keys {
    #![allow(non_upper_case_globals)]
    pub(super) const Bulkheads: &[&str] = &["max_concurrent", "max_wait", "enabled", "resource"];
    pub(super) const Retries: &[&str] = &[
        "max_attempts",
        "wait",
        "backoff_multiplier",
        "max_wait_interval",
        "jitter",
        "abort_on",
    ];
    pub(super) const CircuitBreakers: &[&str] = &[
        "failure_rate_threshold",
        "sliding_window",
        "sliding_window_size",
        "minimum_calls",
        "wait_in_open",
        "permitted_calls_in_half_open",
        "slow_call_threshold",
        "slow_call_rate_threshold",
        "ignore_on",
    ];
    pub(super) const Timeouts: &[&str] = &["duration"];
    pub(super) const RateLimiters: &[&str] = &["limit_for_period", "refresh_period", "max_wait"];
}

/// What of a new configuration a live instance can take.
trait Live<C> {
    /// Applies what it can of `new`; whether all of it took effect.
    fn reconfigure(&self, old: &C, new: &C) -> bool;
    /// What it runs with now, where `declared` is what the registry last
    /// resolved for it.
    fn live(&self, declared: &C) -> C;
}

impl Live<BulkheadConfig> for Bulkhead {
    fn reconfigure(&self, old: &BulkheadConfig, new: &BulkheadConfig) -> bool {
        if old.max_concurrent() != new.max_concurrent() {
            // In range: it was resolved (and so checked) as a configuration.
            let _ = self.set_max_concurrent(new.max_concurrent());
        }
        old.max_wait() == new.max_wait() && old.enabled() == new.enabled()
    }

    fn live(&self, declared: &BulkheadConfig) -> BulkheadConfig {
        // The limit, wait and switch are the instance's; the resource is
        // the registry's bookkeeping, as last resolved.
        let running = self.config();
        BulkheadConfig::builder()
            .max_concurrent(running.max_concurrent())
            .max_wait(running.max_wait())
            .enabled(running.enabled())
            .build_on(declared)
            .unwrap_or(running)
    }
}

macro_rules! fixed {
    ($($policy:ty => $config:ty),*) => {$(
        impl Live<$config> for $policy {
            fn reconfigure(&self, old: &$config, new: &$config) -> bool {
                old == new
            }

            fn live(&self, _declared: &$config) -> $config {
                self.config()
            }
        }
    )*};
}

fixed!(
    Retry => RetryConfig,
    CircuitBreaker => CircuitBreakerConfig,
    Timeout => TimeoutConfig,
    RateLimiter => RateLimiterConfig
);

/// Sets one key of a config builder from a configuration value.
trait SetKey: Sized {
    const KEYS: &'static [&'static str];
    fn set_key(self, key: &str, value: &Value, full_key: &str)
    -> Result<Option<Self>, ConfigError>;
}

fn set_key<S: SetKey>(
    spec: S,
    key: &str,
    value: &Value,
    full_key: &str,
) -> Result<S, RegistryError> {
    match spec.set_key(key, value, full_key)? {
        Some(spec) => Ok(spec),
        None => Err(RegistryError::UnknownKey {
            key: full_key.to_owned(),
            hint: suggest(key, S::KEYS),
        }),
    }
}

impl SetKey for BulkheadConfigBuilder {
    const KEYS: &'static [&'static str] = keys::Bulkheads;
    fn set_key(
        self,
        key: &str,
        value: &Value,
        full_key: &str,
    ) -> Result<Option<Self>, ConfigError> {
        Ok(Some(match key {
            "max_concurrent" => {
                self.max_concurrent(value.limit(full_key, BulkheadConfig::MAX_CONCURRENT)?)
            }
            "max_wait" => self.max_wait(value.duration(full_key)?),
            "enabled" => self.enabled(value.boolean(full_key)?),
            "resource" => match value.text().filter(|t| !t.is_empty()) {
                Some(name) => self.resource(name),
                None => {
                    return Err(ConfigError::InvalidChoice {
                        key: full_key.to_owned(),
                        value: value
                            .text()
                            .map_or_else(|| value.to_string(), str::to_owned),
                        choices: "a resource name".to_owned(),
                    });
                }
            },
            _ => return Ok(None),
        }))
    }
}

impl SetKey for RetryConfigBuilder {
    const KEYS: &'static [&'static str] = keys::Retries;
    fn set_key(
        self,
        key: &str,
        value: &Value,
        full_key: &str,
    ) -> Result<Option<Self>, ConfigError> {
        Ok(Some(match key {
            "max_attempts" => self.max_attempts(value.count(full_key, 1, u32::MAX)?),
            "wait" => self.wait(value.duration(full_key)?),
            "backoff_multiplier" => self.backoff_multiplier(value.number(full_key)?),
            "max_wait_interval" => self.max_wait_interval(value.duration(full_key)?),
            "jitter" => self.jitter(value.number(full_key)?),
            "abort_on" => self.abort_on(value.kinds(full_key)?),
            _ => return Ok(None),
        }))
    }
}

impl SetKey for CircuitBreakerConfigBuilder {
    const KEYS: &'static [&'static str] = keys::CircuitBreakers;
    fn set_key(
        self,
        key: &str,
        value: &Value,
        full_key: &str,
    ) -> Result<Option<Self>, ConfigError> {
        // Thresholds are percentages: the builder checks their range.
        let percent = |value: &Value| value.number(full_key).map(|x| x as f32);
        Ok(Some(match key {
            "failure_rate_threshold" => self.failure_rate_threshold(percent(value)?),
            "sliding_window" => {
                let text = value
                    .text()
                    .map_or_else(|| value.to_string(), str::to_owned);
                self.sliding_window(SlidingWindow::parse(full_key, &text)?)
            }
            "sliding_window_size" => self.sliding_window_size(value.count(
                full_key,
                1,
                CircuitBreakerConfig::MAX_SLIDING_WINDOW_SIZE,
            )?),
            "minimum_calls" => self.minimum_calls(value.count(full_key, 1, u32::MAX)?),
            "wait_in_open" => self.wait_in_open(value.duration(full_key)?),
            "permitted_calls_in_half_open" => {
                self.permitted_calls_in_half_open(value.count(full_key, 1, u32::MAX)?)
            }
            "slow_call_threshold" => self.slow_call_threshold(value.duration(full_key)?),
            "slow_call_rate_threshold" => self.slow_call_rate_threshold(percent(value)?),
            "ignore_on" => self.ignore_on(value.kinds(full_key)?),
            _ => return Ok(None),
        }))
    }
}

impl SetKey for TimeoutConfigBuilder {
    const KEYS: &'static [&'static str] = keys::Timeouts;
    fn set_key(
        self,
        key: &str,
        value: &Value,
        full_key: &str,
    ) -> Result<Option<Self>, ConfigError> {
        Ok(Some(match key {
            "duration" => self.duration(value.duration(full_key)?),
            _ => return Ok(None),
        }))
    }
}

impl SetKey for RateLimiterConfigBuilder {
    const KEYS: &'static [&'static str] = keys::RateLimiters;
    fn set_key(
        self,
        key: &str,
        value: &Value,
        full_key: &str,
    ) -> Result<Option<Self>, ConfigError> {
        Ok(Some(match key {
            "limit_for_period" => self.limit_for_period(value.count(full_key, 1, u32::MAX)?),
            "refresh_period" => self.refresh_period(value.duration(full_key)?),
            "max_wait" => self.max_wait(value.duration(full_key)?),
            _ => return Ok(None),
        }))
    }
}

kind!(
    /// Bulkheads.
    Bulkheads, "bulkhead", Bulkhead, BulkheadConfig, BulkheadConfigBuilder
);
kind!(
    /// Retry policies.
    Retries, "retry", Retry, RetryConfig, RetryConfigBuilder
);
kind!(
    /// Timeouts.
    Timeouts, "timeout", Timeout, TimeoutConfig, TimeoutConfigBuilder
);
kind!(
    /// Rate limiters.
    RateLimiters, "rate_limiter", RateLimiter, RateLimiterConfig, RateLimiterConfigBuilder
);
kind!(
    /// Circuit breakers.
    CircuitBreakers, "circuit_breaker", CircuitBreaker, CircuitBreakerConfig, CircuitBreakerConfigBuilder
);
