//! One registry's fleets on Redis ([`Fleets`], its `FleetBackend`): its
//! fleet resources, the thread that keeps their leases, and what puts a
//! bulkhead declared on such a resource under its share, or takes it out
//! safely (a reload moved it, its batch was dropped).

use std::fmt;
use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use bulkhead_core::{Bulkhead, PolicyContext};
use bulkhead_registry::RegistryError;
use bulkhead_registry::fleet::{Declared, FleetBackend, FleetSnapshot, FleetSpec};

use crate::config::FleetConfig;
use crate::driver::Driver;
use crate::lease::later;
use crate::local::Handover;
use crate::resource::Resource;

/// A registry's fleet resources and the thread that keeps their leases.
pub(crate) struct Fleets {
    /// The registry's clock and event bus.
    context: PolicyContext,
    resources: Mutex<Vec<Arc<Resource>>>,
    /// Started with the first fleet resource.
    driver: Mutex<Option<Driver>>,
}

impl Fleets {
    pub(crate) fn new(context: PolicyContext) -> Self {
        Fleets {
            context,
            resources: Mutex::new(Vec::new()),
            driver: Mutex::new(None),
        }
    }

    fn resources(&self) -> MutexGuard<'_, Vec<Arc<Resource>>> {
        self.resources
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn get(&self, name: &str) -> Option<Arc<Resource>> {
        self.resources().iter().find(|r| r.name == name).cloned()
    }
}

impl FleetBackend for Fleets {
    /// Starts the fleet thread if it is not running, and gives it the
    /// resources that were declared without it.
    fn start(&self) -> Result<(), RegistryError> {
        let mut driver = self.driver.lock().unwrap_or_else(PoisonError::into_inner);
        if driver.is_some() {
            return Ok(());
        }
        let started =
            Driver::start(self.context.clone()).map_err(|e| RegistryError::FleetStart {
                message: e.to_string(),
            })?;
        for resource in self.resources().iter() {
            started.add(Arc::clone(resource));
        }
        *driver = Some(started);
        Ok(())
    }

    fn spec(&self, resource: &str) -> Option<Arc<dyn FleetSpec>> {
        self.get(resource)
            .map(|r| Arc::new(r.config.clone()) as Arc<dyn FleetSpec>)
    }

    fn join(
        &self,
        resource: &str,
        budget: u32,
        spec: Arc<dyn FleetSpec>,
        unstarted: Option<&RegistryError>,
        declared: &[Declared],
    ) {
        // The registry hands each kind's backend only its own specs.
        let Some(config) = spec.as_any().downcast_ref::<FleetConfig>() else {
            return;
        };
        let resource = Arc::new(Resource::new(resource, budget, config.clone()));
        if let Some(error) = unstarted {
            resource.unstarted(&self.context, error);
        }
        self.resources().push(Arc::clone(&resource));
        // Its bulkheads join before the driver first reports their ceiling.
        self.refresh(declared);
        if let Some(driver) = self
            .driver
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
        {
            driver.add(resource);
        }
    }

    /// A bulkhead that moved from one fleet resource to another stays
    /// closed on the new one until the old one has seen its calls finish.
    fn refresh(&self, declared: &[Declared]) {
        let resources: Vec<Arc<Resource>> = self.resources().clone();
        let on = |id: &str| {
            declared
                .iter()
                .find(|d| d.bulkhead.instance() == id)
                .and_then(|d| d.resource.as_deref())
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
                for declared in declared
                    .iter()
                    .filter(|d| d.resource.as_deref() == Some(resource.name))
                {
                    let after = owed
                        .iter()
                        .filter(|(id, _)| *id == declared.bulkhead.instance())
                        .map(|(_, h)| h.clone())
                        .collect();
                    members.add(declared.bulkhead.clone(), after);
                }
            }
            resource.apply_undriven();
        }
    }

    /// Closed until the next tick of the driver splits the share anew.
    fn adopt(&self, resource: &str, bulkhead: &Bulkhead) {
        if let Some(fleet) = self.get(resource) {
            fleet.members().add(bulkhead.clone(), Vec::new());
            fleet.apply_undriven();
        }
    }

    fn discard(&self, bulkheads: &[Bulkhead]) {
        for resource in self.resources().iter() {
            let mut members = resource.members();
            for bulkhead in bulkheads {
                members.discard(bulkhead.instance());
            }
        }
    }

    fn set_budget(&self, resource: &str, budget: u32) {
        if let Some(fleet) = self.get(resource) {
            fleet.set_budget(budget);
        }
    }

    /// Waits up to the margin and a reply from Redis (1050 ms: its
    /// response timeout is at most a second) for every resource.
    fn leave(&self) {
        let resources: Vec<Arc<Resource>> = self.resources().clone();
        let mut until = Instant::now();
        for resource in &resources {
            resource.leave.store(true, Relaxed);
            if !resource.driven.load(Acquire) {
                resource.leave_undriven(&self.context);
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

    fn snapshots(&self) -> Vec<FleetSnapshot> {
        self.resources().iter().map(|r| r.snapshot()).collect()
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
