//! Every policy's store ([`Stores`]) and every policy's configuration
//! layers ([`AllLayers`]): where the registry goes from a [`PolicyKind`] to
//! the policy's own types.

use std::fmt;

use bulkhead_core::{Bulkhead, CircuitBreaker, Fallback, Hedge, RateLimiter, Retry, Timeout};

use crate::budget::Budgets;
use crate::error::RegistryError;
use crate::kind::PolicyKind;
use crate::source::Setting;
use crate::store::{AnyLayers, AnyStore, Change, Layers, Store};

/// The configurations and instances of every policy.
pub(crate) struct Stores {
    pub(crate) bulkheads: Store<Bulkhead>,
    pub(crate) retries: Store<Retry>,
    pub(crate) circuit_breakers: Store<CircuitBreaker>,
    pub(crate) timeouts: Store<Timeout>,
    pub(crate) rate_limiters: Store<RateLimiter>,
    pub(crate) hedges: Store<Hedge>,
    pub(crate) fallbacks: Store<Fallback>,
}

impl Stores {
    pub(crate) fn new(layers: AllLayers) -> Self {
        let AllLayers {
            bulkheads,
            retries,
            circuit_breakers,
            timeouts,
            rate_limiters,
            hedges,
            fallbacks,
        } = layers;
        Stores {
            bulkheads: Store::new(bulkheads),
            retries: Store::new(retries),
            circuit_breakers: Store::new(circuit_breakers),
            timeouts: Store::new(timeouts),
            rate_limiters: Store::new(rate_limiters),
            hedges: Store::new(hedges),
            fallbacks: Store::new(fallbacks),
        }
    }

    /// The store of `kind`.
    pub(crate) fn get(&self, kind: PolicyKind) -> &dyn AnyStore {
        match kind {
            PolicyKind::Bulkhead => &self.bulkheads,
            PolicyKind::Retry => &self.retries,
            PolicyKind::CircuitBreaker => &self.circuit_breakers,
            PolicyKind::Timeout => &self.timeouts,
            PolicyKind::RateLimiter => &self.rate_limiters,
            PolicyKind::Hedge => &self.hedges,
            PolicyKind::Fallback => &self.fallbacks,
        }
    }

    /// Every policy's store, in the order of [`PolicyKind::ALL`].
    pub(crate) fn all(&self) -> impl Iterator<Item = &dyn AnyStore> {
        PolicyKind::ALL.into_iter().map(|kind| self.get(kind))
    }
}

/// Every policy's named configurations and overrides.
#[derive(Default, Clone)]
pub(crate) struct AllLayers {
    pub(crate) bulkheads: Layers<Bulkhead>,
    pub(crate) retries: Layers<Retry>,
    pub(crate) circuit_breakers: Layers<CircuitBreaker>,
    pub(crate) timeouts: Layers<Timeout>,
    pub(crate) rate_limiters: Layers<RateLimiter>,
    pub(crate) hedges: Layers<Hedge>,
    pub(crate) fallbacks: Layers<Fallback>,
}

impl AllLayers {
    /// The layers of `kind`.
    fn get(&self, kind: PolicyKind) -> &dyn AnyLayers {
        match kind {
            PolicyKind::Bulkhead => &self.bulkheads,
            PolicyKind::Retry => &self.retries,
            PolicyKind::CircuitBreaker => &self.circuit_breakers,
            PolicyKind::Timeout => &self.timeouts,
            PolicyKind::RateLimiter => &self.rate_limiters,
            PolicyKind::Hedge => &self.hedges,
            PolicyKind::Fallback => &self.fallbacks,
        }
    }

    /// The layers of `kind`, to change them.
    fn get_mut(&mut self, kind: PolicyKind) -> &mut dyn AnyLayers {
        match kind {
            PolicyKind::Bulkhead => &mut self.bulkheads,
            PolicyKind::Retry => &mut self.retries,
            PolicyKind::CircuitBreaker => &mut self.circuit_breakers,
            PolicyKind::Timeout => &mut self.timeouts,
            PolicyKind::RateLimiter => &mut self.rate_limiters,
            PolicyKind::Hedge => &mut self.hedges,
            PolicyKind::Fallback => &mut self.fallbacks,
        }
    }

    /// Applies `settings` in order; nothing changes if one is bad.
    pub(crate) fn apply(&mut self, settings: &[Setting]) -> Result<(), RegistryError> {
        let mut next = self.clone();
        for setting in settings {
            next.get_mut(setting.policy).apply(setting)?;
        }
        *self = next;
        Ok(())
    }

    /// Checks every named config and override, and every `base_config`.
    pub(crate) fn validate(&self) -> Result<(), RegistryError> {
        PolicyKind::ALL
            .into_iter()
            .try_for_each(|kind| self.get(kind).validate())
    }

    /// Puts these layers in place of `stores`' and reconfigures the live
    /// instances whose configuration they change; all or nothing.
    pub(crate) fn install(
        self,
        stores: &Stores,
        budgets: &Budgets,
    ) -> Result<Vec<Change>, RegistryError> {
        let AllLayers {
            bulkheads,
            retries,
            circuit_breakers,
            timeouts,
            rate_limiters,
            hedges,
            fallbacks,
        } = self;
        // Everything is planned, and the budgets checked, before anything
        // is installed.
        let bulkhead_plan = stores.bulkheads.plan(&bulkheads)?;
        let current = stores.bulkheads.declared_configs();
        budgets.check(
            current
                .iter()
                .map(|(id, c)| (id.as_str(), c))
                .chain(bulkhead_plan.iter().map(|(id, c)| (id.as_str(), c))),
        )?;
        let retry_plan = stores.retries.plan(&retries)?;
        let timeout_plan = stores.timeouts.plan(&timeouts)?;
        let limiter_plan = stores.rate_limiters.plan(&rate_limiters)?;
        let breaker_plan = stores.circuit_breakers.plan(&circuit_breakers)?;
        let hedge_plan = stores.hedges.plan(&hedges)?;
        let fallback_plan = stores.fallbacks.plan(&fallbacks)?;
        let mut changes = Vec::new();
        stores
            .bulkheads
            .install(bulkheads, bulkhead_plan, &mut changes);
        stores.retries.install(retries, retry_plan, &mut changes);
        stores
            .timeouts
            .install(timeouts, timeout_plan, &mut changes);
        stores
            .rate_limiters
            .install(rate_limiters, limiter_plan, &mut changes);
        stores
            .circuit_breakers
            .install(circuit_breakers, breaker_plan, &mut changes);
        stores.hedges.install(hedges, hedge_plan, &mut changes);
        stores
            .fallbacks
            .install(fallbacks, fallback_plan, &mut changes);
        Ok(changes)
    }
}

impl fmt::Debug for AllLayers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("AllLayers");
        let AllLayers {
            bulkheads,
            retries,
            circuit_breakers,
            timeouts,
            rate_limiters,
            hedges,
            fallbacks,
        } = self;
        debug
            .field("bulkheads", bulkheads)
            .field("retries", retries)
            .field("circuit_breakers", circuit_breakers)
            .field("timeouts", timeouts)
            .field("rate_limiters", rate_limiters)
            .field("hedges", hedges)
            .field("fallbacks", fallbacks)
            .finish()
    }
}
