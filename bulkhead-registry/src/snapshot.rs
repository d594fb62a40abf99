//! Point-in-time views of the registry's policies: [`RegistrySnapshot`].
//! Each policy's snapshot type is in its file of `policy/`.

use crate::fleet::FleetSnapshot;
use crate::keyed::KeyedBulkheadSnapshot;
use crate::policy::{
    BulkheadSnapshot, ChaosSnapshot, CircuitBreakerSnapshot, FallbackSnapshot, HedgeSnapshot,
    RateLimiterSnapshot, RetrySnapshot, TimeoutSnapshot,
};
use crate::registry::Registry;

impl Registry {
    /// Every policy's state now.
    pub fn snapshot(&self) -> RegistrySnapshot {
        let mut snapshot = RegistrySnapshot {
            fleets: self.fleet_snapshots(),
            keyed_bulkheads: self.keyed_store().snapshots(self.top_keys()),
            ..RegistrySnapshot::default()
        };
        for store in self.stores().all() {
            store.snapshot_into(&mut snapshot);
        }
        snapshot
    }
}

/// Every policy of a registry at one moment, each list sorted by instance id.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct RegistrySnapshot {
    pub(crate) bulkheads: Vec<BulkheadSnapshot>,
    pub(crate) retries: Vec<RetrySnapshot>,
    pub(crate) timeouts: Vec<TimeoutSnapshot>,
    pub(crate) rate_limiters: Vec<RateLimiterSnapshot>,
    pub(crate) circuit_breakers: Vec<CircuitBreakerSnapshot>,
    pub(crate) hedges: Vec<HedgeSnapshot>,
    pub(crate) fallbacks: Vec<FallbackSnapshot>,
    pub(crate) chaos: Vec<ChaosSnapshot>,
    pub(crate) fleets: Vec<FleetSnapshot>,
    pub(crate) keyed_bulkheads: Vec<KeyedBulkheadSnapshot>,
}

impl RegistrySnapshot {
    /// The shares of the fleet resources, sorted by resource (none without
    /// a fleet crate such as `bulkhead-fleet`: see [`crate::fleet`]).
    pub fn fleets(&self) -> &[FleetSnapshot] {
        &self.fleets
    }
}
