//! [`RateLimiterHandle`]: one rate limiter of a registry.

use bulkhead_core::{EventBus, RateLimiter, RateLimiterConfig, RateLimiterEvent};

use crate::events::InstanceEvents;
use crate::snapshot::RateLimiterSnapshot;

/// A view of one rate limiter of a registry, from
/// [`Registry::rate_limiter`](crate::Registry::rate_limiter).
#[derive(Debug, Clone)]
pub struct RateLimiterHandle {
    limiter: RateLimiter,
    /// The registry's bus, which the policy publishes to.
    events: Option<EventBus>,
}

impl RateLimiterHandle {
    pub(crate) fn new(limiter: RateLimiter) -> Self {
        RateLimiterHandle {
            limiter,
            events: None,
        }
    }

    /// The same handle, subscribing to `events`, the bus its registry's
    /// policies publish to.
    pub(crate) fn with_events(mut self, events: &EventBus) -> Self {
        self.events = Some(events.clone());
        self
    }

    /// Starts receiving this instance's events: its rejections. Admitted calls
    /// publish nothing.
    ///
    /// The stream holds only this instance's events of this policy; it never
    /// slows a caller down (see [`InstanceEvents`]).
    pub fn subscribe(&self) -> InstanceEvents<RateLimiterEvent> {
        InstanceEvents::on_bus(self.events.as_ref(), self.limiter.instance())
    }

    /// The instance id.
    pub fn instance(&self) -> &str {
        self.limiter.instance()
    }

    /// The configuration.
    pub fn config(&self) -> RateLimiterConfig {
        self.limiter.config()
    }

    /// Permits left in this period (negative while later ones are reserved).
    pub fn available_permits(&self) -> i64 {
        self.limiter.available_permits()
    }

    /// The limiter's state now.
    pub fn snapshot(&self) -> RateLimiterSnapshot {
        RateLimiterSnapshot::of(&self.limiter)
    }

    /// The limiter itself.
    pub fn rate_limiter(&self) -> &RateLimiter {
        &self.limiter
    }
}
