//! Retry policies: their configuration keys.

use bulkhead_core::{Retry, RetryConfig, RetryConfigBuilder};

use super::{Key, Policy, builder_methods};
use crate::kind::PolicyKind;

impl Policy for Retry {
    const KIND: PolicyKind = PolicyKind::Retry;
    const KEYS: &'static [Key<RetryConfigBuilder>] = &[
        Key::new("max_attempts", |r, value, key| {
            Ok(r.max_attempts(value.count(key, 1, u32::MAX)?))
        }),
        Key::new("wait", |r, value, key| Ok(r.wait(value.duration(key)?))),
        Key::new("backoff_multiplier", |r, value, key| {
            Ok(r.backoff_multiplier(value.number(key)?))
        }),
        Key::new("max_wait_interval", |r, value, key| {
            Ok(r.max_wait_interval(value.duration(key)?))
        }),
        Key::new("jitter", |r, value, key| Ok(r.jitter(value.number(key)?))),
        Key::new(
            "abort_on",
            |r, value, key| Ok(r.abort_on(value.kinds(key)?)),
        ),
    ];
    type Config = RetryConfig;
    type Spec = RetryConfigBuilder;

    builder_methods!();
}
