//! Resource budgets on a registry: [`Registry::resource`], the checks
//! that keep the bulkheads on a resource within its budget, and the room
//! its adaptive bulkheads grow into.

use std::collections::HashMap;
use std::sync::PoisonError;

use bulkhead_core::{Adaptive, Bulkhead, BulkheadConfig};

use super::Registry;
use crate::budget::reserved;
use crate::error::RegistryError;
use crate::source::ResourceSpec;
use crate::store::Change;

impl Registry {
    /// Gives the shared resource `name` (a connection pool, a database
    /// server) a budget of `slots`: from now on the registry refuses any
    /// bulkhead on that resource (`resource = "name"` in its attribute,
    /// `.resource("name")` in code, `resource` in configuration) whose
    /// `reserved` (by default its `max_concurrent`), added to the others',
    /// would exceed it: when it is
    /// declared, and when a reload or `BulkheadHandle::set_max_concurrent`
    /// raises a limit (REG-010). A disabled bulkhead admits every call, so
    /// it cannot name a resource (REG-013). Calling it again changes the
    /// budget.
    ///
    /// The bulkheads on a resource share its budget as a pool: each keeps
    /// its reserved slots for itself and, with `max_concurrent` above
    /// `reserved`, borrows the slots nobody reserved; at every instant the
    /// sum over them of `max(calls in flight, reserved)` stays within the
    /// budget. A raised reservation takes effect as borrowed slots come
    /// back.
    ///
    /// An adaptive bulkhead reserves its `min_concurrent`, or its `reserved`
    /// if given and higher (its `max_concurrent`, the ceiling, may exceed
    /// the budget), and grows above that only
    /// into the room the others' reservations leave, taken with a
    /// compare-exchange before it raises its limit and given back after it
    /// lowers it, so its limit in force never takes slots another bulkhead
    /// reserved. Room goes to whoever grows first: one adaptive bulkhead can
    /// keep another at its floor until it shrinks (see the adaptive guide).
    ///
    /// Without borrowing, the budget bounds the sum of the limits. When a change lowers one
    /// bulkhead and raises another, the calls in flight on the lowered one
    /// finish under its old limit: until they have, more calls than the
    /// budget can be in flight together.
    ///
    /// On a thread that holds an open [`declare`](Self::declare) batch the
    /// bulkheads the batch declared count as well.
    ///
    /// # Errors
    ///
    /// REG-010 if the bulkheads already on the resource need more than
    /// `slots`; the budget is then unchanged.
    pub fn resource(&self, name: &str, slots: u32) -> Result<(), RegistryError> {
        let _serialised = self.lock_declaring();
        let mut budgets = self
            .inner
            .budgets
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let previous = budgets.get(name);
        budgets.set(name, slots);
        let configs = self.inner.stores.of::<Bulkhead>().declared_configs();
        let checked = budgets.check(configs.iter().map(|(id, c)| (id.as_str(), c)));
        if checked.is_err() {
            match previous {
                Some(previous) => budgets.set(name, previous),
                None => budgets.remove(name),
            }
        }
        drop(budgets);
        if checked.is_ok()
            && let Some(pools) = self.inner.context.pools()
        {
            pools.set_budget(name, slots);
        }
        self.sync_rooms();
        if checked.is_ok() {
            self.set_fleet_budget(name, slots);
        }
        checked
    }

    /// Declares the resources a configuration source gave: budgets, and
    /// fleets (see `declare_fleet_resource`: a resource
    /// that gets a fleet joins it, one whose fleet changed or went is
    /// listed in `changes` as not applied). With `fall_back`, a fleet
    /// thread that cannot be started leaves a fleet resource on its
    /// fallback share instead of failing (`Registry::fleet_errors` keeps
    /// REG-016).
    pub(crate) fn declare_resources(
        &self,
        resources: &[ResourceSpec],
        changes: &mut Vec<Change>,
        fall_back: bool,
    ) -> Result<(), RegistryError> {
        for spec in resources {
            self.declare_fleet_resource(spec, changes, fall_back)?;
        }
        Ok(())
    }

    /// Sets the limit of `bulkhead`, one of this registry's, after checking
    /// it against its resource's budget (REG-010), under the lock that
    /// serialises declarations, so that no declaration or reload checks the
    /// budget against a stale limit.
    pub(crate) fn set_max_concurrent(
        &self,
        bulkhead: &Bulkhead,
        max_concurrent: u32,
    ) -> Result<(), RegistryError> {
        let _serialised = self.lock_declaring();
        let id = bulkhead.instance();
        let current = self
            .inner
            .stores
            .of::<Bulkhead>()
            .declared_configs()
            .into_iter()
            .find(|(known, _)| known == id)
            .map_or_else(|| bulkhead.config(), |(_, c)| c);
        let config = current.with_max_concurrent(max_concurrent)?;
        if config.resource().is_some() {
            self.check_budgets([(id, &config)])?;
        }
        bulkhead.set_max_concurrent(max_concurrent)?;
        self.sync_rooms();
        Ok(())
    }

    /// Puts every bulkhead on the pool of the resource it names (off any
    /// pool if that has no budget), then sets the capacity of the room of
    /// every resource with a budget (the
    /// budget less what its bulkheads reserve: see `budget::reserved`),
    /// gives each adaptive bulkhead on one its
    /// room (none to those on no budget), and has them give back what a
    /// lowered capacity no longer holds. Call it under the declarations
    /// lock, after anything that changes the bulkheads or the budgets.
    pub(crate) fn sync_rooms(&self) {
        let declared = self.inner.stores.of::<Bulkhead>().declared_policies();
        // Each bulkhead on the pool of the resource it names now (a reload
        // may have moved it to another resource, or off any): a move never
        // fails, so the accounting below, from the declared resources,
        // describes the pools the bulkheads are on.
        if let Some(pools) = self.inner.context.pools() {
            for (_, bulkhead, config) in &declared {
                let pool = config.resource().and_then(|r| pools.get(r));
                let on = match &pool {
                    Some(pool) => bulkhead.is_on(pool),
                    None => !bulkhead.is_pooled(),
                };
                if !on {
                    bulkhead.move_to_pool(pool.as_ref());
                }
            }
        }
        let mut budgets = self
            .inner
            .budgets
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut taken: HashMap<&str, u64> = HashMap::new();
        for (_, _, config) in &declared {
            if let Some(resource) = config.resource() {
                *taken.entry(resource).or_default() += u64::from(reserved(config));
            }
        }
        let capacities: Vec<(String, u32)> = budgets
            .iter()
            .map(|(resource, budget)| {
                let reserved = taken.get(resource).copied().unwrap_or(0);
                let free = u64::from(budget).saturating_sub(reserved);
                (resource.to_owned(), u32::try_from(free).unwrap_or(u32::MAX))
            })
            .collect();
        for (resource, capacity) in capacities {
            if let Some(room) = budgets.room(&resource) {
                room.set_capacity(capacity);
            }
        }
        let adaptive: Vec<(Bulkhead, Option<_>)> = declared
            .into_iter()
            .filter(|(_, _, config)| config.adaptive() != Adaptive::Off)
            .map(|(_, bulkhead, config)| {
                let room = config.resource().and_then(|r| budgets.room(r));
                (bulkhead, room)
            })
            .collect();
        drop(budgets);
        for (bulkhead, room) in &adaptive {
            bulkhead.set_room(room.clone());
            bulkhead.reclaim_room();
        }
    }

    /// Checks the resource budgets against the bulkheads, registered or
    /// staged by an open batch, with `changed` laid over them (later
    /// entries of one id win). Call it under the declarations lock.
    pub(crate) fn check_budgets<'a>(
        &self,
        changed: impl IntoIterator<Item = (&'a str, &'a BulkheadConfig)>,
    ) -> Result<(), RegistryError> {
        let declared = self.inner.stores.of::<Bulkhead>().declared_configs();
        let mut all: Vec<(&str, &BulkheadConfig)> =
            declared.iter().map(|(id, c)| (id.as_str(), c)).collect();
        for (id, config) in changed {
            all.push((id, config));
        }
        self.inner
            .budgets
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .check(all)
    }

    /// The budget of resource `name` and the slots its bulkheads take of
    /// it, if it has a budget: a static bulkhead its `reserved` (by default
    /// its `max_concurrent`), an adaptive one its floor (or its `reserved`,
    /// if given and higher) plus the room it holds above that, which is at
    /// least its limit in force.
    ///
    /// One consistent reading: it is taken under the lock that serialises
    /// declarations, reloads and `set_max_concurrent`, and the adaptive
    /// bulkheads' room is one counter (an adaptive bulkhead takes room
    /// before it raises its limit and gives it back after it lowered it).
    /// So it never shows more than the budget (a lowered budget takes
    /// its room back under the same lock). Summing
    /// the bulkheads' snapshots instead reads each at another moment, and
    /// may add one's limit before it fell to another's after it rose.
    pub fn resource_usage(&self, name: &str) -> Option<(u32, u64)> {
        let _serialised = self.lock_declaring();
        let (budget, room) = {
            let mut budgets = self
                .inner
                .budgets
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            (budgets.get(name)?, budgets.room(name))
        };
        let kept: u64 = self
            .inner
            .stores
            .of::<Bulkhead>()
            .registered_policies()
            .iter()
            .filter(|(_, _, config)| config.resource() == Some(name))
            .map(|(_, _, config)| u64::from(reserved(config)))
            .sum();
        let taken = room.map_or(0, |room| u64::from(room.taken()));
        Some((budget, kept + taken))
    }
}
