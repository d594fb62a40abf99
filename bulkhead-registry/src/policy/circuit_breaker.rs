//! Circuit breakers: their configuration keys.

use bulkhead_core::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerConfigBuilder, ConfigError, SlidingWindow,
};

use super::{Key, Policy, builder_methods};
use crate::kind::PolicyKind;
use crate::source::Value;

/// A rate threshold: a percentage, whose range the builder checks.
fn percent(value: &Value, key: &str) -> Result<f32, ConfigError> {
    value.number(key).map(|x| x as f32)
}

impl Policy for CircuitBreaker {
    const KIND: PolicyKind = PolicyKind::CircuitBreaker;
    const KEYS: &'static [Key<CircuitBreakerConfigBuilder>] = &[
        Key::new("failure_rate_threshold", |c, value, key| {
            Ok(c.failure_rate_threshold(percent(value, key)?))
        }),
        Key::new("sliding_window", |c, value, key| {
            let text = value
                .text()
                .map_or_else(|| value.to_string(), str::to_owned);
            Ok(c.sliding_window(SlidingWindow::parse(key, &text)?))
        }),
        Key::new("sliding_window_size", |c, value, key| {
            Ok(c.sliding_window_size(value.count(
                key,
                1,
                CircuitBreakerConfig::MAX_SLIDING_WINDOW_SIZE,
            )?))
        }),
        Key::new("minimum_calls", |c, value, key| {
            Ok(c.minimum_calls(value.count(key, 1, u32::MAX)?))
        }),
        Key::new("wait_in_open", |c, value, key| {
            Ok(c.wait_in_open(value.duration(key)?))
        }),
        Key::new("permitted_calls_in_half_open", |c, value, key| {
            Ok(c.permitted_calls_in_half_open(value.count(key, 1, u32::MAX)?))
        }),
        Key::new("slow_call_threshold", |c, value, key| {
            Ok(c.slow_call_threshold(value.duration(key)?))
        }),
        Key::new("slow_call_rate_threshold", |c, value, key| {
            Ok(c.slow_call_rate_threshold(percent(value, key)?))
        }),
        Key::new("ignore_on", |c, value, key| {
            Ok(c.ignore_on(value.kinds(key)?))
        }),
    ];
    type Config = CircuitBreakerConfig;
    type Spec = CircuitBreakerConfigBuilder;

    builder_methods!();
}
