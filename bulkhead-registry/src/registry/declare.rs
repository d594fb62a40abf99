//! Declaring policy instances: [`Registry::declare`] opens a batch of
//! [`Declarations`], registered together on [`Declarations::commit`] or not
//! at all.

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use bulkhead_core::{
    Bulkhead, BulkheadConfigBuilder, CircuitBreaker, CircuitBreakerConfigBuilder, Fallback,
    FallbackConfigBuilder, Hedge, HedgeConfigBuilder, Policies, RateLimiter,
    RateLimiterConfigBuilder, Retry, RetryConfigBuilder, Timeout, TimeoutConfigBuilder,
};

use super::Registry;
use crate::error::RegistryError;
use crate::kind::PolicyKind;
use crate::policy::Policy;
use crate::serial::SerialGuard;
use crate::specs::PolicySpecs;
use crate::store::{Batch, Store};

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

    /// Resolves the configuration of bulkhead `id` and returns its instance,
    /// creating it on first use.
    ///
    /// `source` says who declares it (a method's id, a pipeline), for error
    /// messages; `spec` holds the values given in code. The configuration is
    /// resolved, highest precedence first, from: the registry's overrides for
    /// this id; `spec`'s values; the named config `spec` (or the override)
    /// chooses; the `default` config; the built-in defaults.
    ///
    /// To declare several instances all-or-nothing (as a wrapper's `new`
    /// does), use [`declare`](Self::declare).
    ///
    /// # Errors
    ///
    /// - REG-004 if a named config does not exist;
    /// - REG-008 if the instance exists with a different configuration;
    /// - CFG-004 if environment variables name the normalized form of `id`
    ///   (or of a config it uses) and another declared id (or config name)
    ///   has that form too;
    /// - the ATR code of an invalid value.
    pub fn bulkhead_policy(
        &self,
        id: &str,
        source: &str,
        spec: &BulkheadConfigBuilder,
    ) -> Result<Bulkhead, RegistryError> {
        let mut declarations = self.declare();
        let bulkhead = declarations.bulkhead(id, source, spec)?;
        declarations.commit();
        Ok(bulkhead)
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
        let source = specs.source();
        let mut policies = Policies::on_clock(Arc::clone(self.registry.clock()));
        for kind in PolicyKind::OUTSIDE_IN {
            policies = match kind {
                PolicyKind::Fallback => match specs.spec::<Fallback>() {
                    Some((id, spec)) => policies.with_fallback(self.fallback(id, source, spec)?),
                    None => policies,
                },
                PolicyKind::Hedge => match specs.spec::<Hedge>() {
                    Some((id, spec)) => policies.with_hedge(self.hedge(id, source, spec)?),
                    None => policies,
                },
                PolicyKind::Retry => match specs.spec::<Retry>() {
                    Some((id, spec)) => policies.with_retry(self.retry(id, source, spec)?),
                    None => policies,
                },
                PolicyKind::CircuitBreaker => match specs.spec::<CircuitBreaker>() {
                    Some((id, spec)) => {
                        policies.with_circuit_breaker(self.circuit_breaker(id, source, spec)?)
                    }
                    None => policies,
                },
                PolicyKind::RateLimiter => match specs.spec::<RateLimiter>() {
                    Some((id, spec)) => {
                        policies.with_rate_limiter(self.rate_limiter(id, source, spec)?)
                    }
                    None => policies,
                },
                PolicyKind::Timeout => match specs.spec::<Timeout>() {
                    Some((id, spec)) => policies.with_timeout(self.timeout(id, source, spec)?),
                    None => policies,
                },
                PolicyKind::Bulkhead => match specs.spec::<Bulkhead>() {
                    Some((id, spec)) => policies.with_bulkhead(self.bulkhead(id, source, spec)?),
                    None => policies,
                },
            };
        }
        Ok(policies)
    }

    /// Declares bulkhead `id`; see [`Registry::bulkhead_policy`].
    ///
    /// # Errors
    ///
    /// - REG-004 if a named config does not exist;
    /// - REG-008 if the registry or this batch has the instance with a
    ///   different configuration;
    /// - REG-010, REG-011 or REG-013 if it names a resource whose budget
    ///   it does not fit;
    /// - CFG-004 if environment variables name the normalized form of `id`
    ///   (or of a config it uses) and another declared id (or config name)
    ///   has that form too;
    /// - the ATR code of an invalid value.
    pub fn bulkhead(
        &mut self,
        id: &str,
        source: &str,
        spec: &BulkheadConfigBuilder,
    ) -> Result<Bulkhead, RegistryError> {
        let bulkheads = &self.registry.stores().bulkheads;
        let config = bulkheads.resolve(id, spec)?;
        // A bulkhead already declared (registered, or staged by an open
        // batch) is shared or refused with REG-008: its slots were counted
        // when it was created.
        let new = !bulkheads.is_declared(id);
        if config.resource().is_some() && new {
            self.registry.check_budgets([(id, &config)])?;
        }
        let bulkhead = self.declare(bulkheads, id, source, spec)?;
        if config.resource().is_some() {
            // What it reserves comes out of the room the adaptive
            // bulkheads on the resource grow into; an adaptive one gets it.
            self.registry.sync_rooms();
        }
        // A new bulkhead on a fleet resource admits nothing the fleet has
        // not granted: it is closed before anyone can call it.
        if let Some(resource) = config.resource().filter(|_| new) {
            self.registry.adopt_on_fleet(resource, &bulkhead);
        }
        Ok(bulkhead)
    }

    /// Declares retry policy `id`, as [`bulkhead`](Self::bulkhead) does.
    ///
    /// # Errors
    ///
    /// REG-004, REG-008, CFG-004 or the ATR code of an invalid value.
    pub fn retry(
        &mut self,
        id: &str,
        source: &str,
        spec: &RetryConfigBuilder,
    ) -> Result<Retry, RegistryError> {
        self.declare(&self.registry.stores().retries, id, source, spec)
    }

    /// Declares timeout policy `id`, as [`bulkhead`](Self::bulkhead) does.
    ///
    /// # Errors
    ///
    /// REG-004, REG-008, CFG-004 or the ATR code of an invalid value.
    pub fn timeout(
        &mut self,
        id: &str,
        source: &str,
        spec: &TimeoutConfigBuilder,
    ) -> Result<Timeout, RegistryError> {
        self.declare(&self.registry.stores().timeouts, id, source, spec)
    }

    /// Declares rate limiter `id`, as [`bulkhead`](Self::bulkhead) does.
    ///
    /// # Errors
    ///
    /// REG-004, REG-008, CFG-004 or the ATR code of an invalid value.
    pub fn rate_limiter(
        &mut self,
        id: &str,
        source: &str,
        spec: &RateLimiterConfigBuilder,
    ) -> Result<RateLimiter, RegistryError> {
        self.declare(&self.registry.stores().rate_limiters, id, source, spec)
    }

    /// Declares circuit breaker `id`, as [`bulkhead`](Self::bulkhead) does.
    ///
    /// # Errors
    ///
    /// REG-004, REG-008, CFG-004 or the ATR code of an invalid value.
    pub fn circuit_breaker(
        &mut self,
        id: &str,
        source: &str,
        spec: &CircuitBreakerConfigBuilder,
    ) -> Result<CircuitBreaker, RegistryError> {
        self.declare(&self.registry.stores().circuit_breakers, id, source, spec)
    }

    /// Declares hedge `id`, as [`bulkhead`](Self::bulkhead) does.
    ///
    /// # Errors
    ///
    /// REG-004, REG-008, CFG-004 or the ATR code of an invalid value.
    pub fn hedge(
        &mut self,
        id: &str,
        source: &str,
        spec: &HedgeConfigBuilder,
    ) -> Result<Hedge, RegistryError> {
        self.declare(&self.registry.stores().hedges, id, source, spec)
    }

    /// Declares fallback `id`, as [`bulkhead`](Self::bulkhead) does.
    ///
    /// # Errors
    ///
    /// REG-004, REG-008, CFG-004 or the ATR code of an invalid value.
    pub fn fallback(
        &mut self,
        id: &str,
        source: &str,
        spec: &FallbackConfigBuilder,
    ) -> Result<Fallback, RegistryError> {
        self.declare(&self.registry.stores().fallbacks, id, source, spec)
    }

    /// Declares instance `id` of `store` in this batch.
    pub(crate) fn declare<P: Policy>(
        &self,
        store: &Store<P>,
        id: &str,
        source: &str,
        spec: &P::Spec,
    ) -> Result<P, RegistryError> {
        let context = &self.registry.inner.context;
        store.declare(self.batch, context, id, source, spec)
    }

    /// Registers every instance declared in this batch.
    pub fn commit(self) {
        let inner = &self.registry.inner;
        if inner.context.tracks_sizing() {
            let now = inner.context.clock().now();
            let mut windows = inner.windows.lock().unwrap_or_else(PoisonError::into_inner);
            for bulkhead in inner.stores.bulkheads.staged_in(self.batch) {
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
        let staged = self.registry.stores().bulkheads.staged_in(self.batch);
        for store in self.registry.stores().all() {
            store.discard(self.batch);
        }
        let bulkheads = &self.registry.stores().bulkheads;
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
