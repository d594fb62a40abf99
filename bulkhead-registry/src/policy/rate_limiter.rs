//! Rate limiters: their configuration keys.

use bulkhead_core::{RateLimiter, RateLimiterConfig, RateLimiterConfigBuilder};

use super::{Key, Policy, builder_methods};
use crate::kind::PolicyKind;

impl Policy for RateLimiter {
    const KIND: PolicyKind = PolicyKind::RateLimiter;
    const KEYS: &'static [Key<RateLimiterConfigBuilder>] = &[
        Key::new("limit_for_period", |r, value, key| {
            Ok(r.limit_for_period(value.count(key, 1, u32::MAX)?))
        }),
        Key::new("refresh_period", |r, value, key| {
            Ok(r.refresh_period(value.duration(key)?))
        }),
        Key::new("max_wait", |r, value, key| {
            Ok(r.max_wait(value.duration(key)?))
        }),
    ];
    type Config = RateLimiterConfig;
    type Spec = RateLimiterConfigBuilder;

    builder_methods!();
}
