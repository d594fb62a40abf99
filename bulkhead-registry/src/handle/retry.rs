//! [`RetryHandle`]: one retry policy of a registry.

use bulkhead_core::{EventBus, Retry, RetryConfig, RetryEvent};

use crate::events::InstanceEvents;
use crate::snapshot::RetrySnapshot;

/// A view of one retry policy of a registry, from
/// [`Registry::retry`](crate::Registry::retry).
#[derive(Debug, Clone)]
pub struct RetryHandle {
    retry: Retry,
    /// The registry's bus, which the policy publishes to.
    events: Option<EventBus>,
}

impl RetryHandle {
    pub(crate) fn new(retry: Retry) -> Self {
        RetryHandle {
            retry,
            events: None,
        }
    }

    /// The same handle, subscribing to `events`, the bus its registry's
    /// policies publish to.
    pub(crate) fn with_events(mut self, events: &EventBus) -> Self {
        self.events = Some(events.clone());
        self
    }

    /// Starts receiving this instance's events: its retries, and calls that
    /// succeeded after a retry, exhausted their attempts or were aborted.
    /// Admitted calls publish nothing.
    ///
    /// The stream holds only this instance's events of this policy; it never
    /// slows a caller down (see [`InstanceEvents`]).
    pub fn subscribe(&self) -> InstanceEvents<RetryEvent> {
        InstanceEvents::on_bus(self.events.as_ref(), self.retry.instance())
    }

    /// The instance id.
    pub fn instance(&self) -> &str {
        self.retry.instance()
    }

    /// The configuration.
    pub fn config(&self) -> RetryConfig {
        self.retry.config()
    }

    /// The policy's state now.
    pub fn snapshot(&self) -> RetrySnapshot {
        RetrySnapshot::of(&self.retry)
    }

    /// The policy itself.
    pub fn retry(&self) -> &Retry {
        &self.retry
    }
}
