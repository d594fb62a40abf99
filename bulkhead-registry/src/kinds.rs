//! The kinds of policy the registry knows, as [`Kind`]s.

use bulkhead_core::{
    Bulkhead, BulkheadConfig, BulkheadConfigBuilder, CircuitBreaker, CircuitBreakerConfig,
    CircuitBreakerConfigBuilder, ConfigError, PolicyContext, RateLimiter, RateLimiterConfig,
    RateLimiterConfigBuilder, Retry, RetryConfig, RetryConfigBuilder, Timeout, TimeoutConfig,
    TimeoutConfigBuilder,
};

use crate::store::Kind;

macro_rules! kind {
    ($(#[$meta:meta])* $kind:ident, $name:literal, $policy:ty, $config:ty, $spec:ty) => {
        $(#[$meta])*
        pub(crate) struct $kind;

        impl Kind for $kind {
            const NAME: &'static str = $name;
            type Config = $config;
            type Spec = $spec;
            type Policy = $policy;

            fn config_name(spec: &Self::Spec) -> Option<&str> {
                spec.config_name()
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
        }
    };
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
