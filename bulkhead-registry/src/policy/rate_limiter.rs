//! Rate limiters in a registry: [`RateLimiterHandle`], [`RateLimiterSnapshot`], and the
//! registry's methods named after them.

use std::time::Duration;

use bulkhead_core::{RateLimiter, RateLimiterConfig, RateLimiterConfigBuilder, RateLimiterEvent};

use super::{Managed, Policy, inherent_methods, named_methods, policy_methods};
use crate::events::policy_event;
use crate::handle::Handle;
use crate::pipeline::PipelineBuilder;
use bulkhead_core::keys::PolicyKind;

impl Policy for RateLimiter {
    type Config = RateLimiterConfig;
    type Snapshot = RateLimiterSnapshot;
    type Event = RateLimiterEvent;

    inherent_methods!();

    fn snapshot(&self) -> RateLimiterSnapshot {
        let config = Self::config(self);
        RateLimiterSnapshot {
            instance: Self::instance(self).to_owned(),
            limit_for_period: config.limit_for_period(),
            refresh_period: config.refresh_period(),
            max_wait: config.max_wait(),
            available_permits: self.available_permits(),
            waiting_calls: self.waiting_calls(),
        }
    }
}

impl Managed for RateLimiter {
    const KIND: PolicyKind = PolicyKind::RateLimiter;
    type Spec = RateLimiterConfigBuilder;

    policy_methods!(rate_limiters, with_rate_limiter);
}

policy_event!(RateLimiterEvent => RateLimiter);

named_methods! {
    policy: RateLimiter, spec: RateLimiterConfigBuilder,
    handle: RateLimiterHandle, snapshot: RateLimiterSnapshot,
    method: rate_limiter, instance: rate_limiter_instance, list: rate_limiters,
    words: "rate limiter", "rate limiter", "rate limiters",
    config: rate_limiter_config,
}

impl Handle<RateLimiter> {
    /// Permits left in this period (negative while later ones are reserved).
    pub fn available_permits(&self) -> i64 {
        self.policy.available_permits()
    }
}

/// A rate limiter's state at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RateLimiterSnapshot {
    /// The instance id.
    pub instance: String,
    /// Permits each refresh period brings.
    pub limit_for_period: u32,
    /// The length of a period.
    pub refresh_period: Duration,
    /// How long a caller may wait for a permit.
    pub max_wait: Duration,
    /// Permits left in this period; negative while callers hold reservations
    /// in later periods.
    pub available_permits: i64,
    /// Callers waiting for a reserved permit.
    pub waiting_calls: u32,
}

impl PipelineBuilder<'_> {
    /// Adds a rate limiter (inside the circuit breaker).
    pub fn rate_limiter(
        self,
        f: impl FnOnce(RateLimiterConfigBuilder) -> RateLimiterConfigBuilder,
    ) -> Self {
        self.with::<RateLimiter>(f)
    }
}
