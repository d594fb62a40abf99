//! Fleet resources on a registry (feature `redis`):
//! [`Registry::fleet_resource`], [`Registry::leave_fleets`], and what puts
//! a bulkhead declared on such a resource under its share, or takes it out
//! safely (a reload moved it, its batch was dropped).

use std::fmt;
use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use bulkhead_core::Bulkhead;

use super::Registry;
use crate::error::RegistryError;
use crate::fleet::{Driver, FleetConfig, FleetSnapshot, Handover, Resource, later};
use crate::source::ResourceSpec;
use crate::store::Change;

/// How a [`Change`] of a resource shows that it has no fleet.
const NO_FLEET: &str = "no fleet";

/// A registry's fleet resources and the thread that keeps their leases.
#[derive(Default)]
pub(super) struct Fleets {
    resources: Mutex<Vec<Arc<Resource>>>,
    /// Started with the first fleet resource.
    driver: Mutex<Option<Driver>>,
    /// What could not be returned: REG-016 met by `RegistryBuilder::build`.
    errors: Mutex<Vec<RegistryError>>,
}

/// What to do when the fleet thread cannot be started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnStartFailure {
    /// Return REG-016 and change nothing.
    Fail,
    /// Declare the resource anyway, with no slots (a process that never
    /// reached Redis has no fallback), and keep the error
    /// (`Registry::fleet_errors`, the snapshot's `last_error`).
    FallBack,
}

impl Fleets {
    fn resources(&self) -> MutexGuard<'_, Vec<Arc<Resource>>> {
        self.resources
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn errors(&self) -> MutexGuard<'_, Vec<RegistryError>> {
        self.errors.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn get(&self, name: &str) -> Option<Arc<Resource>> {
        self.resources().iter().find(|r| r.name == name).cloned()
    }

    /// Puts `bulkhead`, just declared on `resource`, under the resource's
    /// share if it is a fleet resource: closed until the next tick of the
    /// driver splits the share anew.
    pub(super) fn adopt(&self, resource: &str, bulkhead: &Bulkhead) {
        if let Some(fleet) = self.get(resource) {
            fleet.members().add(bulkhead.clone(), Vec::new());
            fleet.apply_undriven();
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
            resource.leave.store(true, Relaxed);
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
    #[cfg_attr(bulkhead_docsrs, doc(cfg(feature = "redis")))]
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
    /// registry's (`bulkhead-fleet`), started with the first fleet
    /// resource (and tried again here if it could not be started before,
    /// see [`fleet_errors`](Self::fleet_errors)).
    ///
    /// # Errors
    ///
    /// - REG-014 if `config` cannot be used for `name` (a `{` or `}` in
    ///   the name or prefix, a lease under 100 ms or over a day, a margin
    ///   above half the lease);
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
        self.join_fleet(name, slots, config, OnStartFailure::Fail)
    }

    /// [`fleet_resource`](Self::fleet_resource), with `on_failure` saying
    /// what a failure to start the fleet thread does.
    pub(crate) fn join_fleet(
        &self,
        name: &str,
        slots: u32,
        config: FleetConfig,
        on_failure: OnStartFailure,
    ) -> Result<(), RegistryError> {
        config.check(name)?;
        let _serialised = self.lock_declaring();
        let fleets = &self.inner.fleets;
        let running = fleets.get(name);
        if let Some(running) = running.as_ref().filter(|r| r.config != config) {
            return Err(RegistryError::FleetConflict {
                resource: name.to_owned(),
                running: format!("{:?}", running.config),
                requested: format!("{config:?}"),
            });
        }
        let started = self.start_fleet_thread();
        if let (Err(error), OnStartFailure::Fail) = (&started, on_failure) {
            return Err(error.clone());
        }
        if running.is_some() {
            return self.resource(name, slots);
        }
        self.resource(name, slots)?;
        let resource = Arc::new(Resource::new(name, slots, config));
        if let Err(error) = &started {
            resource.unstarted(&self.inner.context, error);
            #[cfg(feature = "tracing")]
            tracing::error!(resource = name, %error, "fleet resource without its thread: no slots until it runs");
            fleets.errors().push(error.clone());
        }
        fleets.resources().push(Arc::clone(&resource));
        // Its bulkheads join before the driver first reports their ceiling.
        self.refresh_fleets();
        if let Some(driver) = fleets
            .driver
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
        {
            driver.add(resource);
        }
        Ok(())
    }

    /// Declares the resource `spec` gives, from a configuration source:
    /// its budget, and its fleet.
    ///
    /// - With a fleet, on a resource that has none yet, it joins the fleet
    ///   (its bulkheads closed until the first share), listed in `changes`
    ///   as applied.
    /// - A fleet other than the one the resource is in, or none for a
    ///   resource in a fleet, is listed in `changes` as not applied: a
    ///   process stays in one fleet per resource for its life. The budget
    ///   applies all the same.
    ///
    /// With `fall_back`, a fleet thread that cannot be started leaves the
    /// resource on its fallback share (see [`OnStartFailure::FallBack`]).
    pub(super) fn declare_fleet_resource(
        &self,
        spec: &ResourceSpec,
        changes: &mut Vec<Change>,
        fall_back: bool,
    ) -> Result<(), RegistryError> {
        let running = self.inner.fleets.get(&spec.name).map(|r| r.config.clone());
        let change = |from: String, to: String, applied| {
            Change::of_key("resource", &spec.name, "fleet", from, to, applied)
        };
        let Some(fleet) = &spec.fleet else {
            if let Some(running) = running {
                changes.push(change(format!("{running:?}"), NO_FLEET.to_owned(), false));
            }
            return self.resource(&spec.name, spec.budget);
        };
        let on_failure = if fall_back {
            OnStartFailure::FallBack
        } else {
            OnStartFailure::Fail
        };
        match self.join_fleet(&spec.name, spec.budget, fleet.clone(), on_failure) {
            Err(RegistryError::FleetConflict {
                running, requested, ..
            }) => {
                changes.push(change(running, requested, false));
                self.resource(&spec.name, spec.budget)
            }
            Ok(()) if running.is_none() => {
                changes.push(change(NO_FLEET.to_owned(), format!("{fleet:?}"), true));
                Ok(())
            }
            other => other,
        }
    }

    /// Starts the fleet thread if it is not running, and gives it the
    /// resources that were declared without it.
    fn start_fleet_thread(&self) -> Result<(), RegistryError> {
        let fleets = &self.inner.fleets;
        let mut driver = fleets.driver.lock().unwrap_or_else(PoisonError::into_inner);
        if driver.is_some() {
            return Ok(());
        }
        let started =
            Driver::start(self.inner.context.clone()).map_err(|e| RegistryError::FleetStart {
                message: e.to_string(),
            })?;
        for resource in fleets.resources().iter() {
            started.add(Arc::clone(resource));
        }
        *driver = Some(started);
        Ok(())
    }

    #[cfg_attr(bulkhead_docsrs, doc(cfg(feature = "redis")))]
    /// What keeping the fleet resources met and could not return, oldest
    /// first: REG-016 when [`RegistryBuilder::build`](crate::RegistryBuilder::build)
    /// could not start the fleet thread for a resource its configuration
    /// declares. Such a resource is declared all the same, with the share of
    /// a process that never reached Redis: none, whatever `on_unreachable`
    /// says (the others may hold the whole budget); its snapshot shows the
    /// state `Unreachable` and the error. The next
    /// [`fleet_resource`](Self::fleet_resource) (or a reload that declares
    /// a fleet resource) tries to start the thread again.
    pub fn fleet_errors(&self) -> Vec<RegistryError> {
        self.inner.fleets.errors().clone()
    }

    #[cfg_attr(bulkhead_docsrs, doc(cfg(feature = "redis")))]
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
            resource.leave.store(true, Relaxed);
            if !resource.driven.load(Acquire) {
                resource.leave_undriven(&self.inner.context);
            }
            let wait = resource
                .config
                .margin_duration()
                .saturating_add(Duration::from_millis(1050));
            until = until.max(later(Instant::now(), wait));
        }
        while Instant::now() < until && resources.iter().any(|r| !r.left.load(Acquire)) {
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

    /// After a reload (or a new fleet resource): the bulkheads on a fleet
    /// resource come under its share, those that left it (for another
    /// resource, or none) drain first. A bulkhead that moved from one
    /// fleet resource to another stays closed on the new one until the old
    /// one has seen its calls finish.
    pub(super) fn refresh_fleets(&self) {
        let resources: Vec<Arc<Resource>> = self.inner.fleets.resources().clone();
        let declared: Vec<(Bulkhead, Option<String>)> = self
            .inner
            .stores
            .bulkheads
            .declared_policies()
            .into_iter()
            .map(|(_, bulkhead, config)| (bulkhead, config.resource().map(str::to_owned)))
            .collect();
        let on = |id: &str| {
            declared
                .iter()
                .find(|(b, _)| b.instance() == id)
                .and_then(|(_, r)| r.as_deref())
        };
        let is_fleet = |name: &str| resources.iter().any(|r| r.name == name);
        // Departures first, and what the arrivals must wait for.
        let mut owed: Vec<(&'static str, Handover)> = Vec::new();
        for resource in &resources {
            let mut members = resource.members();
            for id in members.ids() {
                match on(id) {
                    Some(name) if name == resource.name => {}
                    to => members.depart(id, !to.is_some_and(is_fleet)),
                }
            }
            for id in members.leaving_ids() {
                if on(id).is_some_and(|to| to != resource.name && is_fleet(to)) {
                    owed.extend(members.hand_over(id).into_iter().map(|h| (id, h)));
                }
            }
        }
        for resource in &resources {
            {
                let mut members = resource.members();
                for (bulkhead, _) in declared
                    .iter()
                    .filter(|(_, r)| r.as_deref() == Some(resource.name))
                {
                    let after = owed
                        .iter()
                        .filter(|(id, _)| *id == bulkhead.instance())
                        .map(|(_, h)| h.clone())
                        .collect();
                    members.add(bulkhead.clone(), after);
                }
            }
            resource.apply_undriven();
        }
    }

    /// The bulkheads of a dropped batch that no other batch declared:
    /// they leave their fleet resource for good (their calls in flight, if
    /// someone used them meanwhile, drain first).
    pub(super) fn forget_on_fleets(&self, discarded: &[Bulkhead]) {
        if discarded.is_empty() {
            return;
        }
        for resource in self.inner.fleets.resources().iter() {
            let mut members = resource.members();
            for bulkhead in discarded {
                members.discard(bulkhead.instance());
            }
        }
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
