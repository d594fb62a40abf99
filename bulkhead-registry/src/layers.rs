//! The configuration layers of every kind of policy together, and applying
//! a source's settings to them.

use std::fmt;

use crate::budget::Budgets;
use crate::error::RegistryError;
use crate::kinds::{Bulkheads, CircuitBreakers, RateLimiters, Retries, Timeouts};
use crate::registry::Stores;
use crate::source::Setting;
use crate::store::{Change, Layers};

/// Every kind's named configurations and overrides.
#[derive(Default, Clone)]
pub(crate) struct AllLayers {
    pub(crate) bulkheads: Layers<Bulkheads>,
    pub(crate) retries: Layers<Retries>,
    pub(crate) timeouts: Layers<Timeouts>,
    pub(crate) rate_limiters: Layers<RateLimiters>,
    pub(crate) circuit_breakers: Layers<CircuitBreakers>,
}

impl AllLayers {
    /// Applies `settings` in order; nothing changes if one is bad.
    pub(crate) fn apply(&mut self, settings: &[Setting]) -> Result<(), RegistryError> {
        let mut next = self.clone();
        for setting in settings {
            match setting.policy {
                "bulkhead" => next.bulkheads.apply(setting)?,
                "retry" => next.retries.apply(setting)?,
                "timeout" => next.timeouts.apply(setting)?,
                "rate_limiter" => next.rate_limiters.apply(setting)?,
                _ => next.circuit_breakers.apply(setting)?,
            }
        }
        *self = next;
        Ok(())
    }

    /// Checks every named config and override, and every `base_config`.
    pub(crate) fn validate(&self) -> Result<(), RegistryError> {
        self.bulkheads.validate()?;
        self.retries.validate()?;
        self.timeouts.validate()?;
        self.rate_limiters.validate()?;
        self.circuit_breakers.validate()
    }

    /// Puts these layers in place of `stores`' and reconfigures the live
    /// instances whose configuration they change; all or nothing.
    pub(crate) fn install(
        self,
        stores: &Stores,
        budgets: &Budgets,
    ) -> Result<Vec<Change>, RegistryError> {
        let bulkheads = stores.bulkheads.plan(&self.bulkheads)?;
        let current = stores.bulkheads.declared_configs();
        budgets.check(
            current
                .iter()
                .map(|(id, c)| (id.as_str(), c))
                .chain(bulkheads.iter().map(|(id, c)| (id.as_str(), c))),
        )?;
        let retries = stores.retries.plan(&self.retries)?;
        let timeouts = stores.timeouts.plan(&self.timeouts)?;
        let rate_limiters = stores.rate_limiters.plan(&self.rate_limiters)?;
        let circuit_breakers = stores.circuit_breakers.plan(&self.circuit_breakers)?;
        let mut changes = Vec::new();
        stores
            .bulkheads
            .install(self.bulkheads, bulkheads, &mut changes);
        stores.retries.install(self.retries, retries, &mut changes);
        stores
            .timeouts
            .install(self.timeouts, timeouts, &mut changes);
        stores
            .rate_limiters
            .install(self.rate_limiters, rate_limiters, &mut changes);
        stores
            .circuit_breakers
            .install(self.circuit_breakers, circuit_breakers, &mut changes);
        Ok(changes)
    }
}

impl fmt::Debug for AllLayers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AllLayers")
            .field("bulkheads", &self.bulkheads)
            .field("retries", &self.retries)
            .field("timeouts", &self.timeouts)
            .field("rate_limiters", &self.rate_limiters)
            .field("circuit_breakers", &self.circuit_breakers)
            .finish()
    }
}
