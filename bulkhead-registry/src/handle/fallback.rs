//! [`FallbackHandle`]: one fallback policy of a registry.

use bulkhead_core::{EventBus, Fallback, FallbackConfig, FallbackEvent};

use crate::events::InstanceEvents;
use crate::snapshot::FallbackSnapshot;

/// A view of one fallback policy of a registry, from
/// [`Registry::fallback`](crate::Registry::fallback).
#[derive(Debug, Clone)]
pub struct FallbackHandle {
    fallback: Fallback,
    /// The registry's bus, which the policy publishes to.
    events: Option<EventBus>,
}

impl FallbackHandle {
    pub(crate) fn new(fallback: Fallback) -> Self {
        FallbackHandle {
            fallback,
            events: None,
        }
    }

    /// The same handle, subscribing to `events`, the bus its registry's
    /// policies publish to.
    pub(crate) fn with_events(mut self, events: &EventBus) -> Self {
        self.events = Some(events.clone());
        self
    }

    /// Starts receiving this instance's events: each call its fallback
    /// method answered. Calls that succeed publish nothing.
    ///
    /// The stream holds only this instance's events of this policy; it never
    /// slows a caller down (see [`InstanceEvents`]).
    pub fn subscribe(&self) -> InstanceEvents<FallbackEvent> {
        InstanceEvents::on_bus(self.events.as_ref(), self.fallback.instance())
    }

    /// The instance id.
    pub fn instance(&self) -> &str {
        self.fallback.instance()
    }

    /// The configuration.
    pub fn config(&self) -> FallbackConfig {
        self.fallback.config()
    }

    /// The policy's state now.
    pub fn snapshot(&self) -> FallbackSnapshot {
        FallbackSnapshot::of(&self.fallback)
    }

    /// The policy itself.
    pub fn fallback(&self) -> &Fallback {
        &self.fallback
    }
}
