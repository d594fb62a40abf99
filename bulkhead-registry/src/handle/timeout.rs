//! [`TimeoutHandle`]: one timeout policy of a registry.

use bulkhead_core::{EventBus, Timeout, TimeoutConfig, TimeoutEvent};

use crate::events::InstanceEvents;
use crate::snapshot::TimeoutSnapshot;

/// A view of one timeout policy of a registry, from
/// [`Registry::timeout`](crate::Registry::timeout).
#[derive(Debug, Clone)]
pub struct TimeoutHandle {
    timeout: Timeout,
    /// The registry's bus, which the policy publishes to.
    events: Option<EventBus>,
}

impl TimeoutHandle {
    pub(crate) fn new(timeout: Timeout) -> Self {
        TimeoutHandle {
            timeout,
            events: None,
        }
    }

    /// The same handle, subscribing to `events`, the bus its registry's
    /// policies publish to.
    pub(crate) fn with_events(mut self, events: &EventBus) -> Self {
        self.events = Some(events.clone());
        self
    }

    /// Starts receiving this instance's events: its calls that timed out, and
    /// sync calls that overran. Admitted calls publish nothing.
    ///
    /// The stream holds only this instance's events of this policy; it never
    /// slows a caller down (see [`InstanceEvents`]).
    pub fn subscribe(&self) -> InstanceEvents<TimeoutEvent> {
        InstanceEvents::on_bus(self.events.as_ref(), self.timeout.instance())
    }

    /// The instance id.
    pub fn instance(&self) -> &str {
        self.timeout.instance()
    }

    /// The configuration.
    pub fn config(&self) -> TimeoutConfig {
        self.timeout.config()
    }

    /// The policy's state now.
    pub fn snapshot(&self) -> TimeoutSnapshot {
        TimeoutSnapshot::of(&self.timeout)
    }

    /// The policy itself.
    pub fn timeout(&self) -> &Timeout {
        &self.timeout
    }
}
