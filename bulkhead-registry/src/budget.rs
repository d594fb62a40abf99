//! Resource budgets: the registry refuses bulkheads whose slots, added up,
//! would exceed the real limit of the resource behind them, and gives the
//! adaptive ones the room left to grow into.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use bulkhead_core::adaptive::Room;
use bulkhead_core::{Adaptive, BulkheadConfig};

use crate::error::RegistryError;

/// The budgets of the registry's resources, by name, and the room each
/// leaves for adaptive bulkheads to grow into.
#[derive(Debug, Default, Clone)]
pub(crate) struct Budgets {
    budgets: HashMap<String, u32>,
    rooms: HashMap<String, Arc<Room>>,
}

/// The slots a bulkhead reserves on its resource: a static one its
/// `reserved` (by default its limit), an adaptive one its floor, or its
/// `reserved` if given and higher (it takes more from the resource's
/// [`Room`] while it grows).
pub(crate) fn reserved(config: &BulkheadConfig) -> u32 {
    match config.adaptive() {
        Adaptive::Off => config.reserved(),
        Adaptive::Aimd | Adaptive::Vegas | Adaptive::Gradient2 => {
            let floor = config.min_concurrent();
            let base = config.reserved_set().map_or(floor, |r| r.max(floor));
            base.min(config.max_concurrent())
        }
    }
}

impl Budgets {
    /// The resources with a budget, and their budgets.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, u32)> {
        self.budgets
            .iter()
            .map(|(name, budget)| (name.as_str(), *budget))
    }

    /// The room of `resource`, if it has a budget.
    pub(crate) fn room(&mut self, resource: &str) -> Option<Arc<Room>> {
        self.budgets.get(resource)?;
        Some(Arc::clone(
            self.rooms
                .entry(resource.to_owned())
                .or_insert_with(|| Arc::new(Room::new(0))),
        ))
    }

    pub(crate) fn get(&self, resource: &str) -> Option<u32> {
        self.budgets.get(resource).copied()
    }

    pub(crate) fn set(&mut self, resource: &str, budget: u32) {
        self.budgets.insert(resource.to_owned(), budget);
    }

    pub(crate) fn remove(&mut self, resource: &str) {
        self.budgets.remove(resource);
    }

    /// Checks that the bulkheads `configs` (id and configuration; later
    /// entries of one id replace earlier ones) fit the budgets of the
    /// resources they name.
    pub(crate) fn check<'a>(
        &self,
        configs: impl IntoIterator<Item = (&'a str, &'a BulkheadConfig)>,
    ) -> Result<(), RegistryError> {
        // Later entries of one id replace earlier ones whatever resource
        // they name (a reload may move a bulkhead to another resource).
        let by_id: BTreeMap<&str, &BulkheadConfig> = configs.into_iter().collect();
        let mut by_resource: BTreeMap<&str, BTreeMap<&str, u32>> = BTreeMap::new();
        for (id, config) in by_id {
            if let Some(resource) = config.resource() {
                if !config.enabled() {
                    return Err(RegistryError::DisabledOnResource {
                        instance: id.to_owned(),
                        resource: resource.to_owned(),
                    });
                }
                by_resource
                    .entry(resource)
                    .or_default()
                    .insert(id, reserved(config));
            }
        }
        for (resource, bulkheads) in by_resource {
            let Some(budget) = self.get(resource) else {
                let instance = bulkheads.keys().next().copied().unwrap_or_default();
                return Err(RegistryError::UnknownResource {
                    instance: instance.to_owned(),
                    resource: resource.to_owned(),
                });
            };
            let needed: u64 = bulkheads.values().map(|&n| u64::from(n)).sum();
            if needed > u64::from(budget) {
                let usage = bulkheads
                    .iter()
                    .map(|(id, n)| format!("{id} ({n})"))
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(RegistryError::OverBudget {
                    resource: resource.to_owned(),
                    budget,
                    needed,
                    usage,
                });
            }
        }
        Ok(())
    }
}
