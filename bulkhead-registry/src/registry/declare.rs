//! Declaring policy instances: [`Registry::declare`] opens a batch of
//! [`Declarations`], registered together on [`Declarations::commit`] or not
//! at all.

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use bulkhead_core::{Bulkhead, Policies};

use super::Registry;
use crate::error::RegistryError;
use crate::policy::Managed;
use crate::registry::lock::SerialGuard;
use crate::specs::PolicySpecs;
use crate::store::Batch;

impl Registry {
    /// Starts declaring several policy instances that are registered together
    /// by [`Declarations::commit`], or not at all if a declaration fails or
    /// the batch is dropped.
    ///
    /// Declarations are serialised: while a batch is open, declarations,
    /// reloads, [`resource`](Self::resource) and
    /// [`BulkheadHandle::set_max_concurrent`](crate::BulkheadHandle::set_max_concurrent)
    /// on other threads wait until it is committed or dropped (lookups do
    /// not wait). On the thread that holds it they run at once, and take
    /// the instances of its open batches (declared, not yet committed) into
    /// account:
    ///
    /// - a budget check (a declaration, `resource`, `set_max_concurrent`,
    ///   a reload) counts their bulkheads as if they were registered;
    /// - another batch opened meanwhile is a batch of its own, committed or
    ///   dropped on its own: an id an open batch declared is shared with it
    ///   (or refused with REG-008, or CFG-004 as for registered ids), and
    ///   whichever of the two commits first registers it;
    /// - a reload resolves them again with the registered ones and
    ///   reconfigures them the same way (they are among its
    ///   [`Change`](crate::Change)s), and later declarations of the batch
    ///   resolve under the new configuration.
    ///
    /// A batch belongs to the thread that opened it: [`Declarations`] is
    /// not `Send`.
    pub fn declare(&self) -> Declarations<'_> {
        let serialised = self.lock_declaring();
        Declarations {
            registry: self,
            batch: self.inner.next_batch.fetch_add(1, Ordering::Relaxed),
            _serialised: serialised,
        }
    }
}

/// Policy instances being declared together; see [`Registry::declare`].
///
/// Each method resolves one instance as [`Registry::bulkhead_policy`] would,
/// checking it against the registry and against the earlier declarations of
/// the batch (and of other batches open on this thread), and returns it at
/// once; none becomes visible in the registry until
/// [`commit`](Self::commit). Dropped without a commit, the batch registers
/// nothing.
#[must_use = "nothing is registered until the declarations are committed"]
pub struct Declarations<'r> {
    registry: &'r Registry,
    /// Which instances the stores keep staged for this batch.
    batch: Batch,
    /// Released last, after `Drop` has discarded what was not committed.
    _serialised: SerialGuard<'r>,
}

impl Declarations<'_> {
    /// Declares every policy of `specs`, each under its own id (its name,
    /// or the id of the set), and returns them composed.
    ///
    /// The policies are declared outermost first (fallback, retry, hedge,
    /// circuit breaker, rate limiter, timeout, bulkhead), each as its own
    /// method here would
    /// declare it; the first error is returned, and the batch should then be
    /// dropped, so that none of them is registered.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_registry::{PolicySpecs, Registry};
    /// use bulkhead_core::{BulkheadConfig, RetryConfig};
    ///
    /// let registry = Registry::new();
    /// let specs = PolicySpecs::new("shop::checkout")
    ///     .retry(None, RetryConfig::builder().wait(Duration::ZERO))
    ///     .bulkhead(Some("payments"), BulkheadConfig::builder().max_concurrent(4));
    ///
    /// let mut declarations = registry.declare();
    /// let policies = declarations.policies(&specs)?;
    /// declarations.commit();
    ///
    /// assert_eq!(policies.bulkhead().unwrap().instance(), "payments");
    /// assert_eq!(registry.retry("shop::checkout")?.instance(), "shop::checkout");
    /// # Ok::<(), bulkhead_registry::RegistryError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// As for each policy's own method: REG-004, REG-008, REG-010,
    /// REG-011, REG-013, CFG-004 or the ATR code of an invalid value.
    pub fn policies(&mut self, specs: &PolicySpecs) -> Result<Policies, RegistryError> {
        let policies = specs.declare(self, Arc::clone(self.registry.clock()))?;
        // Its histograms are its bulkhead's instance's, or the set's own.
        let instance = policies
            .bulkhead()
            .map_or_else(|| specs.id(), |bulkhead| bulkhead.instance());
        let telemetry = self.registry.telemetry().instance(instance);
        Ok(policies.with_telemetry(telemetry))
    }

    /// Declares instance `id` of `P` in this batch, with nothing of its
    /// own to check: what [`Managed::declare`] does by default.
    ///
    /// # Errors
    ///
    /// REG-004, REG-008, CFG-004 or the ATR code of an invalid value.
    pub(crate) fn stage<P: Managed>(
        &self,
        id: &str,
        source: &str,
        spec: &P::Spec,
    ) -> Result<P, RegistryError> {
        let context = &self.registry.inner.context;
        let store = self.registry.stores().of::<P>();
        store.declare(self.batch, context, id, source, spec)
    }

    /// The registry the batch declares in.
    pub(crate) fn registry(&self) -> &Registry {
        self.registry
    }

    /// Registers every instance declared in this batch.
    pub fn commit(self) {
        let inner = &self.registry.inner;
        if inner.context.tracks_sizing() {
            let now = inner.context.clock().now();
            let mut windows = inner.windows.lock().unwrap_or_else(PoisonError::into_inner);
            for bulkhead in inner.stores.of::<Bulkhead>().staged_in(self.batch) {
                windows.open(bulkhead.instance(), now);
            }
        }
        for store in inner.stores.all() {
            store.commit(self.batch);
        }
    }
}

impl Drop for Declarations<'_> {
    /// Discards what was declared and not committed, before the lock is
    /// released.
    fn drop(&mut self) {
        // The bulkheads of the batch not kept (another open batch may share
        // one, which then stays declared): an adaptive one gives its room
        // back (a clone the caller holds runs on without a budget), one on
        // a fleet resource leaves it.
        let staged = self
            .registry
            .stores()
            .of::<Bulkhead>()
            .staged_in(self.batch);
        for store in self.registry.stores().all() {
            store.discard(self.batch);
        }
        let bulkheads = self.registry.stores().of::<Bulkhead>();
        let gone: Vec<Bulkhead> = staged
            .into_iter()
            .filter(|b| !bulkheads.is_declared(b.instance()))
            .collect();
        let mut dropped = false;
        for bulkhead in gone.iter().filter(|b| b.adaptive().is_some()) {
            bulkhead.set_room(None);
            dropped = true;
        }
        if dropped {
            self.registry.sync_rooms();
        }
        self.registry.forget_on_fleets(&gone);
    }
}

impl fmt::Debug for Declarations<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("Declarations");
        for store in self.registry.stores().all() {
            debug.field(store.kind().plural(), &store.staged_ids(self.batch));
        }
        debug.finish()
    }
}
