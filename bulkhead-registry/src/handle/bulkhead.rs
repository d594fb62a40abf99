//! [`BulkheadHandle`]: one bulkhead of a registry, its state and its limit.

use bulkhead_core::{Bulkhead, BulkheadEvent};

use crate::error::RegistryError;
use crate::events::InstanceEvents;
use crate::registry::Registry;
use crate::snapshot::BulkheadSnapshot;

/// A view of one bulkhead of a registry, from
/// [`Registry::bulkhead`](crate::Registry::bulkhead).
///
/// Cheap to clone; reads are lock-free.
#[derive(Debug, Clone)]
pub struct BulkheadHandle {
    bulkhead: Bulkhead,
    /// Its registry: its bus, and its budgets for `set_max_concurrent`.
    registry: Registry,
}

impl BulkheadHandle {
    pub(crate) fn new(bulkhead: Bulkhead, registry: Registry) -> Self {
        BulkheadHandle { bulkhead, registry }
    }

    /// Starts receiving this instance's events: its rejections and limit
    /// changes. Admitted calls publish nothing.
    ///
    /// The stream holds only this instance's events of this policy; it never
    /// slows a caller down (see [`InstanceEvents`]).
    pub fn subscribe(&self) -> InstanceEvents<BulkheadEvent> {
        InstanceEvents::new(self.registry.subscribe(), self.bulkhead.instance())
    }

    /// The instance id.
    pub fn instance(&self) -> &str {
        self.bulkhead.instance()
    }

    /// Calls holding a slot now.
    pub fn concurrent_calls(&self) -> u32 {
        self.bulkhead.concurrent_calls()
    }

    /// Calls waiting for a slot now (0 when `max_wait` is zero). For
    /// monitoring only: by the time you read it, it may have changed.
    pub fn waiting_calls(&self) -> u32 {
        self.bulkhead.waiting_calls()
    }

    /// The current limit.
    pub fn max_concurrent(&self) -> u32 {
        self.bulkhead.max_concurrent()
    }

    /// The bulkhead's state now.
    pub fn snapshot(&self) -> BulkheadSnapshot {
        BulkheadSnapshot::of(&self.bulkhead)
    }

    /// Changes the limit at once; see [`Bulkhead::set_max_concurrent`] for
    /// what happens to calls in flight and to waiters. A `LimitChanged`
    /// event is published.
    ///
    /// The change lasts until the next [`Registry::reload`], which puts
    /// every limit back to what the configuration says. A bulkhead on a
    /// resource stays within the resource's budget: unlike
    /// [`Bulkhead::set_max_concurrent`] on [`bulkhead`](Self::bulkhead),
    /// which knows nothing of budgets, this checks it.
    ///
    /// A `reserved` above the new limit is kept at most it (the
    /// reservation in force never exceeds the limit in force), and an
    /// adaptive bulkhead's `initial_concurrent`, which only mattered when
    /// it started, is no bound.
    ///
    /// # Errors
    ///
    /// - ATR-003 if `max_concurrent` is out of range;
    /// - ATR-015 if it is below an adaptive bulkhead's `min_concurrent`;
    /// - REG-010 if the bulkheads on its resource would then need more
    ///   slots than the resource's budget.
    ///
    /// The limit is then unchanged.
    ///
    /// It is serialised with declarations and reloads: it waits while
    /// another thread has a [`Registry::declare`] batch open. On the thread
    /// that holds the batch it runs at once, and the bulkheads the batch
    /// declared count against the budget.
    pub fn set_max_concurrent(&self, max_concurrent: u32) -> Result<(), RegistryError> {
        self.registry
            .set_max_concurrent(&self.bulkhead, max_concurrent)
    }

    /// The bulkhead itself, to enter it directly.
    pub fn bulkhead(&self) -> &Bulkhead {
        &self.bulkhead
    }
}
