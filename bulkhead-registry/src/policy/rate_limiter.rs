//! Rate limiters (their keys are `bulkhead_core`'s table).

use bulkhead_core::{RateLimiter, RateLimiterConfig, RateLimiterConfigBuilder};

use super::{Policy, builder_methods};
use crate::kind::PolicyKind;

impl Policy for RateLimiter {
    const KIND: PolicyKind = PolicyKind::RateLimiter;
    type Config = RateLimiterConfig;
    type Spec = RateLimiterConfigBuilder;

    builder_methods!();
}
