//! Fleet resources on a registry (feature `redis`):
//! [`Registry::fleet_resource`], [`Registry::leave_fleets`], and what puts
//! a bulkhead declared on such a resource under its share.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use bulkhead_core::Bulkhead;

use super::Registry;
use crate::error::RegistryError;
use crate::fleet::{Driver, FleetConfig, FleetSnapshot, Resource};

/// A registry's fleet resources and the thread that keeps their leases.
#[derive(Default)]
pub(super) struct Fleets {
    resources: Mutex<Vec<Arc<Resource>>>,
    /// Started with the first fleet resource.
    driver: Mutex<Option<Driver>>,
}

impl Fleets {
    fn resources(&self) -> MutexGuard<'_, Vec<Arc<Resource>>> {
        self.resources
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn get(&self, name: &str) -> Option<Arc<Resource>> {
        self.resources().iter().find(|r| r.name == name).cloned()
    }

    /// Puts `bulkhead`, just declared on `resource`, under the resource's
    /// share if it is a fleet resource: closed until the next tick of the
    /// driver splits the share anew.
    pub(super) fn adopt(&self, resource: &str, bulkhead: &Bulkhead) {
        if let Some(fleet) = self.get(resource) {
            fleet.members().add(bulkhead.clone());
        }
    }

    /// Sets the budget a fleet resource reports, if `resource` is one.
    pub(super) fn set_budget(&self, resource: &str, budget: u32) {
        if let Some(fleet) = self.get(resource) {
            fleet.set_budget(budget);
        }
    }
}

impl Drop for Fleets {
    /// The registry is gone: every resource leaves its fleet (its
    /// bulkheads closed, its calls in flight given up to the margin to
    /// finish), on the driver's thread, which then ends.
    fn drop(&mut self) {
        for resource in self.resources().iter() {
            resource
                .leave
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

impl fmt::Debug for Fleets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.resources().iter().map(|r| r.name))
            .finish()
    }
}

impl Registry {
    /// Gives the resource `name` a budget of `slots` shared by every
    /// process that names it with the same Redis and key prefix: across
    /// the fleet, calls in flight on its bulkheads never exceed `slots`.
    ///
    /// The budget is checked like [`resource`](Self::resource)'s (REG-010:
    /// the `max_concurrent` of this process's bulkheads on it add up to at
    /// most `slots`); each bulkhead's `max_concurrent` is then the most it
    /// may get, and its limit in force is its part of the share this
    /// process leases from Redis (0 until the first reply: declare fleet
    /// resources at startup). [`resource`](Self::resource) called later
    /// changes the budget this process reports; the fleet's budget is the
    /// smallest any live process reports. Calling this again with the same
    /// configuration changes the budget only.
    ///
    /// Nothing here waits for Redis: the lease is kept by a thread of the
    /// registry's (`bulkhead-fleet`), started with the first fleet resource.
    ///
    /// # Errors
    ///
    /// - REG-014 if `config` cannot be used for `name` (a `{` or `}` in
    ///   the name or prefix, a lease under 100 ms, a margin above half the
    ///   lease);
    /// - REG-015 if `name` already shares its budget with a fleet
    ///   configured otherwise;
    /// - REG-010 if this process's bulkheads on it need more than `slots`;
    /// - REG-016 if the thread cannot be started.
    ///
    /// Nothing changes then.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// use bulkhead_registry::fleet::FleetConfig;
    /// use bulkhead_registry::Registry;
    ///
    /// let registry = Registry::new();
    /// registry.fleet_resource("db", 100, FleetConfig::redis("redis://10.0.0.5:6379/0")?)?;
    /// # Ok::<(), bulkhead_registry::RegistryError>(())
    /// ```
    pub fn fleet_resource(
        &self,
        name: &str,
        slots: u32,
        config: FleetConfig,
    ) -> Result<(), RegistryError> {
        config.check(name)?;
        let _serialised = self.lock_declaring();
        let fleets = &self.inner.fleets;
        if let Some(running) = fleets.get(name) {
            if running.config != config {
                return Err(RegistryError::FleetConflict {
                    resource: name.to_owned(),
                    running: format!("{:?}", running.config),
                    requested: format!("{config:?}"),
                });
            }
            return self.resource(name, slots);
        }
        let mut driver = fleets.driver.lock().unwrap_or_else(PoisonError::into_inner);
        if driver.is_none() {
            *driver = Some(Driver::start(self.inner.context.clone()).map_err(|e| {
                RegistryError::FleetStart {
                    message: e.to_string(),
                }
            })?);
        }
        self.resource(name, slots)?;
        let resource = Arc::new(Resource::new(name, slots, config));
        {
            let mut members = resource.members();
            for bulkhead in self.bulkheads_on(name) {
                members.add(bulkhead);
            }
        }
        fleets.resources().push(Arc::clone(&resource));
        if let Some(driver) = driver.as_ref() {
            driver.add(resource);
        }
        Ok(())
    }

    /// Leaves every fleet this registry is in, for a graceful shutdown:
    /// the bulkheads on fleet resources stop admitting calls (limit 0),
    /// their calls in flight get up to the margin to finish, and the share
    /// goes back to the fleet at once instead of when the lease runs out.
    /// Blocks until that is done (about the margin at most, plus a reply
    /// from Redis). Dropping the last clone of the registry does the same
    /// without waiting.
    pub fn leave_fleets(&self) {
        let resources: Vec<Arc<Resource>> = self.inner.fleets.resources().clone();
        let mut until = Instant::now();
        for resource in &resources {
            resource
                .leave
                .store(true, std::sync::atomic::Ordering::Relaxed);
            let wait = resource.config.margin_duration() + Duration::from_secs(1);
            until = until.max(Instant::now() + wait + Duration::from_millis(50));
        }
        while Instant::now() < until
            && resources
                .iter()
                .any(|r| !r.left.load(std::sync::atomic::Ordering::Acquire))
        {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// The fleet resources' shares now, sorted by resource.
    pub(crate) fn fleet_snapshots(&self) -> Vec<FleetSnapshot> {
        let resources: Vec<Arc<Resource>> = self.inner.fleets.resources().clone();
        let mut snapshots: Vec<FleetSnapshot> = resources.iter().map(|r| r.snapshot()).collect();
        snapshots.sort_by(|a, b| a.resource.cmp(&b.resource));
        snapshots
    }

    /// After a reload: the bulkheads a reload moved onto a fleet resource
    /// come under its share, those it moved away leave it.
    pub(super) fn refresh_fleets(&self) {
        let resources: Vec<Arc<Resource>> = self.inner.fleets.resources().clone();
        for resource in resources {
            let on = self.bulkheads_on(resource.name);
            let mut members = resource.members();
            members.retain(|id| on.iter().any(|b| b.instance() == id));
            for bulkhead in on {
                members.add(bulkhead);
            }
        }
    }

    /// The registered bulkheads on `resource`.
    fn bulkheads_on(&self, resource: &str) -> Vec<Bulkhead> {
        let bulkheads = &self.inner.stores.bulkheads;
        bulkheads
            .configs()
            .into_iter()
            .filter(|(_, config)| config.resource() == Some(resource))
            .filter_map(|(id, _)| bulkheads.get(&id).ok())
            .collect()
    }

    /// Puts a bulkhead just declared on `resource` under its share.
    pub(super) fn adopt_on_fleet(&self, resource: &str, bulkhead: &Bulkhead) {
        self.inner.fleets.adopt(resource, bulkhead);
    }

    /// Sets the budget fleet resource `resource` reports, if it is one.
    pub(super) fn set_fleet_budget(&self, resource: &str, budget: u32) {
        self.inner.fleets.set_budget(resource, budget);
    }
}
