//! [`HedgeHandle`]: one hedge policy of a registry.

use bulkhead_core::{EventBus, Hedge, HedgeConfig, HedgeEvent};

use crate::events::InstanceEvents;
use crate::snapshot::HedgeSnapshot;

/// A view of one hedge policy of a registry, from
/// [`Registry::hedge`](crate::Registry::hedge).
#[derive(Debug, Clone)]
pub struct HedgeHandle {
    hedge: Hedge,
    /// The registry's bus, which the policy publishes to.
    events: Option<EventBus>,
}

impl HedgeHandle {
    pub(crate) fn new(hedge: Hedge) -> Self {
        HedgeHandle {
            hedge,
            events: None,
        }
    }

    /// The same handle, subscribing to `events`, the bus its registry's
    /// policies publish to.
    pub(crate) fn with_events(mut self, events: &EventBus) -> Self {
        self.events = Some(events.clone());
        self
    }

    /// Starts receiving this instance's events: the hedges it started,
    /// skipped or could not take from the retry budget, and those that won.
    /// A call whose first attempt answers within `delay` publishes nothing.
    ///
    /// The stream holds only this instance's events of this policy; it never
    /// slows a caller down (see [`InstanceEvents`]).
    pub fn subscribe(&self) -> InstanceEvents<HedgeEvent> {
        InstanceEvents::on_bus(self.events.as_ref(), self.hedge.instance())
    }

    /// The instance id.
    pub fn instance(&self) -> &str {
        self.hedge.instance()
    }

    /// The configuration.
    pub fn config(&self) -> HedgeConfig {
        self.hedge.config()
    }

    /// The policy's state now.
    pub fn snapshot(&self) -> HedgeSnapshot {
        HedgeSnapshot::of(&self.hedge)
    }

    /// The policy itself.
    pub fn hedge(&self) -> &Hedge {
        &self.hedge
    }
}
