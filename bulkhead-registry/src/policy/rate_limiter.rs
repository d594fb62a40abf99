//! Rate limiters in a registry: [`RateLimiterHandle`], [`RateLimiterSnapshot`], and the
//! registry's methods named after them.

use std::time::Duration;

use bulkhead_core::{RateLimiter, RateLimiterConfig, RateLimiterConfigBuilder, RateLimiterEvent};

use super::{Managed, Policy, inherent_methods, policy_methods};
use crate::error::RegistryError;
use crate::events::policy_event;
use crate::handle::Handle;
use crate::kind::PolicyKind;
use crate::pipeline::PipelineBuilder;
use crate::registry::Registry;
use crate::registry::builder::RegistryBuilder;
use crate::registry::declare::Declarations;
use crate::snapshot::RegistrySnapshot;
use crate::specs::PolicySpecs;

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

/// A view of one rate limiter of a registry, from
/// [`Registry::rate_limiter`].
pub type RateLimiterHandle = Handle<RateLimiter>;

impl Handle<RateLimiter> {
    /// Permits left in this period (negative while later ones are reserved).
    pub fn available_permits(&self) -> i64 {
        self.policy.available_permits()
    }

    /// The limiter itself.
    pub fn rate_limiter(&self) -> &RateLimiter {
        &self.policy
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

impl Registry {
    /// The rate limiter with this instance id.
    ///
    /// # Errors
    ///
    /// REG-009 if no rate limiter has this id.
    pub fn rate_limiter(&self, id: &str) -> Result<RateLimiterHandle, RegistryError> {
        self.handle(id)
    }
}

impl RegistryBuilder {
    /// Defines (or extends) the named rate limiter configuration `name`; see
    /// [`bulkhead_config`](Self::bulkhead_config).
    pub fn rate_limiter_config(
        self,
        name: impl Into<String>,
        f: impl FnOnce(RateLimiterConfigBuilder) -> RateLimiterConfigBuilder,
    ) -> Self {
        self.policy_config::<RateLimiter>(name, f)
    }

    /// Overrides values of the rate limiter instance `id`; see
    /// [`bulkhead_instance`](Self::bulkhead_instance).
    pub fn rate_limiter_instance(
        self,
        id: impl Into<String>,
        f: impl FnOnce(RateLimiterConfigBuilder) -> RateLimiterConfigBuilder,
    ) -> Self {
        self.policy_instance::<RateLimiter>(id, f)
    }
}

impl Declarations<'_> {
    /// Declares rate limiter `id`, as [`bulkhead`](Self::bulkhead) does.
    ///
    /// # Errors
    ///
    /// REG-004, REG-008, CFG-004 or the ATR code of an invalid value.
    pub fn rate_limiter(
        &mut self,
        id: &str,
        source: &str,
        spec: &RateLimiterConfigBuilder,
    ) -> Result<RateLimiter, RegistryError> {
        RateLimiter::declare(self, id, source, spec)
    }
}

impl PolicySpecs {
    /// Adds the rate limiter, with instance id `name` if given.
    pub fn rate_limiter(self, name: Option<&str>, spec: RateLimiterConfigBuilder) -> Self {
        self.with::<RateLimiter>(name, spec)
    }
}

impl RegistrySnapshot {
    /// The rate limiters, sorted by instance id.
    pub fn rate_limiters(&self) -> &[RateLimiterSnapshot] {
        &self.rate_limiters
    }
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
