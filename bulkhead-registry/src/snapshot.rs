//! Point-in-time views of the registry's policies.

use std::time::Duration;

use bulkhead_core::Bulkhead;

/// A bulkhead's state at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BulkheadSnapshot {
    /// The instance id.
    pub instance: String,
    /// Calls holding a slot.
    pub concurrent_calls: u32,
    /// Calls waiting for a slot (0 when `max_wait` is zero).
    pub waiting_calls: u32,
    /// The limit.
    pub max_concurrent: u32,
    /// Slots free right now: `max_concurrent - concurrent_calls`, or 0 while
    /// more calls are in flight than a lowered limit allows.
    pub available: u32,
    /// How long a caller may wait for a slot.
    pub max_wait: Duration,
    /// Whether the bulkhead limits anything.
    pub enabled: bool,
}

impl BulkheadSnapshot {
    pub(crate) fn of(bulkhead: &Bulkhead) -> Self {
        let config = bulkhead.config();
        let concurrent_calls = bulkhead.concurrent_calls();
        BulkheadSnapshot {
            instance: bulkhead.instance().to_owned(),
            concurrent_calls,
            waiting_calls: bulkhead.waiting_calls(),
            max_concurrent: config.max_concurrent(),
            available: config.max_concurrent().saturating_sub(concurrent_calls),
            max_wait: config.max_wait(),
            enabled: config.enabled(),
        }
    }
}

/// Every policy of a registry at one moment, each list sorted by instance id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RegistrySnapshot {
    bulkheads: Vec<BulkheadSnapshot>,
}

impl RegistrySnapshot {
    pub(crate) fn new(mut bulkheads: Vec<BulkheadSnapshot>) -> Self {
        bulkheads.sort_by(|a, b| a.instance.cmp(&b.instance));
        RegistrySnapshot { bulkheads }
    }

    /// The bulkheads, sorted by instance id.
    pub fn bulkheads(&self) -> &[BulkheadSnapshot] {
        &self.bulkheads
    }
}
