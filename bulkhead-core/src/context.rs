//! What every policy of a registry shares: its clock and its event bus.

use std::sync::Arc;
use std::time::Instant;

use crate::bulkhead::Pools;
use crate::clock::{Clock, SystemClock};
use crate::events::{Event, EventBus};
use crate::telemetry::TelemetryHub;

/// The clock policies measure time on and the bus they publish events to.
///
/// A registry builds one and hands it to each policy it creates; a policy
/// built on its own gets [`PolicyContext::default`]: the [`SystemClock`] and
/// no events.
#[derive(Debug, Clone)]
pub struct PolicyContext {
    clock: Arc<dyn Clock>,
    events: Option<EventBus>,
    sizing: bool,
    pools: Option<Arc<Pools>>,
    telemetry: Option<TelemetryHub>,
}

impl PolicyContext {
    /// A context measuring time on `clock`, publishing no events.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        PolicyContext {
            clock,
            events: None,
            sizing: false,
            pools: None,
            telemetry: None,
        }
    }

    /// The same context, with the histograms of its registry: a policy
    /// that records calls outside a composition (a tower layer around a
    /// bulkhead) finds its instance's there.
    pub fn with_telemetry(mut self, telemetry: TelemetryHub) -> Self {
        self.telemetry = Some(telemetry);
        self
    }

    /// The histograms of the registry, if the context has them.
    pub fn telemetry(&self) -> Option<&TelemetryHub> {
        self.telemetry.as_ref()
    }

    /// The same context, with the pools of its resources: a bulkhead
    /// configured on a resource that has one joins it.
    pub fn with_pools(mut self, pools: Arc<Pools>) -> Self {
        self.pools = Some(pools);
        self
    }

    /// The pools of the resources, if the context has them.
    pub fn pools(&self) -> Option<&Arc<Pools>> {
        self.pools.as_ref()
    }

    /// The same context, publishing events to `events`.
    pub fn with_events(mut self, events: EventBus) -> Self {
        self.events = Some(events);
        self
    }

    /// The same context, with bulkheads counting their traffic (see
    /// [`Traffic`](crate::Traffic)) if `track` is true.
    pub fn with_sizing(mut self, track: bool) -> Self {
        self.sizing = track;
        self
    }

    /// Whether bulkheads count their traffic.
    pub fn tracks_sizing(&self) -> bool {
        self.sizing
    }

    /// The clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The event bus, if events are published.
    pub fn events(&self) -> Option<&EventBus> {
        self.events.as_ref()
    }

    /// Whether anyone listens to the events published: a policy that would
    /// publish only an event may skip its slow path when nobody does.
    #[inline]
    pub fn has_listeners(&self) -> bool {
        self.listened().is_some()
    }

    /// The event bus, if anyone listens to it.
    #[inline]
    fn listened(&self) -> Option<&EventBus> {
        self.events
            .as_ref()
            .filter(|events| events.has_subscribers())
    }

    /// Publishes the event `make` builds from the current time, if anyone
    /// listens; otherwise costs one load and builds nothing.
    #[inline]
    pub fn publish(&self, make: impl FnOnce(Instant) -> Event) {
        if let Some(events) = self.listened() {
            self.publish_now(events, make);
        }
    }

    #[cold]
    #[inline(never)]
    fn publish_now(&self, events: &EventBus, make: impl FnOnce(Instant) -> Event) {
        events.publish(make(self.clock.now()));
    }
}

impl Default for PolicyContext {
    fn default() -> Self {
        PolicyContext::new(Arc::new(SystemClock))
    }
}

/// A policy's getters of what its `shared` holds for every policy, its
/// instance id and its config (of type `$config`), and with `Debug` a
/// `Debug` showing those two.
macro_rules! policy_getters {
    ($policy:ident: $config:ty) => {
        impl $policy {
            /// The instance id.
            pub fn instance(&self) -> &'static str {
                self.shared.instance
            }

            /// The configuration.
            pub fn config(&self) -> $config {
                self.shared.config
            }
        }
    };
    ($policy:ident: $config:ty, Debug) => {
        $crate::context::policy_getters!($policy: $config);

        impl fmt::Debug for $policy {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($policy))
                    .field("instance", &self.shared.instance)
                    .field("config", &self.shared.config)
                    .finish()
            }
        }
    };
}

pub(crate) use policy_getters;
