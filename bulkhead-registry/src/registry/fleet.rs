//! Fleet resources on a registry: [`Registry::fleet_resource`],
//! [`Registry::leave_fleets`], [`Registry::fleet_errors`], and the calls
//! that tell each fleet backend (see [`crate::fleet`]) which bulkheads are
//! on its resources: declared, moved by a reload, dropped with a batch.

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bulkhead_core::{Bulkhead, PolicyContext};

use super::Registry;
use crate::error::RegistryError;
use crate::fleet::{Declared, FleetBackend, FleetKind, FleetSnapshot, FleetSpec};
use crate::source::ResourceSpec;
use crate::store::Change;

/// How a [`Change`] of a resource shows that it has no fleet.
const NO_FLEET: &str = "no fleet";

/// A registry's fleet backends, one per kind of fleet, each created with
/// the first fleet resource of its kind (and dropped with the registry,
/// which is when it leaves its fleets).
#[derive(Default)]
pub(super) struct Fleets {
    backends: Mutex<Vec<(&'static str, Arc<dyn FleetBackend>)>>,
    /// What could not be returned: REG-016 met by `RegistryBuilder::build`.
    errors: Mutex<Vec<RegistryError>>,
}

/// What to do when a fleet backend cannot be started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnStartFailure {
    /// Return REG-016 and change nothing.
    Fail,
    /// Declare the resource anyway, with no slots (a process that never
    /// reached the fleet has no fallback), and keep the error
    /// (`Registry::fleet_errors`, the snapshot's `last_error`).
    FallBack,
}

impl Fleets {
    fn errors(&self) -> MutexGuard<'_, Vec<RegistryError>> {
        self.errors.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Every backend, for calls made without the lock on the list.
    fn all(&self) -> Vec<Arc<dyn FleetBackend>> {
        self.backends
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(_, backend)| Arc::clone(backend))
            .collect()
    }

    /// The backend of `kind`, created if this registry has none yet.
    fn of_kind(
        &self,
        kind: &'static dyn FleetKind,
        context: &PolicyContext,
    ) -> Arc<dyn FleetBackend> {
        let mut backends = self.backends.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, backend)) = backends.iter().find(|(name, _)| *name == kind.name()) {
            return Arc::clone(backend);
        }
        let backend = kind.backend(context);
        backends.push((kind.name(), Arc::clone(&backend)));
        backend
    }

    /// The fleet resource `resource` is in, if any.
    fn spec(&self, resource: &str) -> Option<Arc<dyn FleetSpec>> {
        self.all().iter().find_map(|backend| backend.spec(resource))
    }
}

impl fmt::Debug for Fleets {
    /// Each kind's backend, by the kind's name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let backends = self.backends.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_map()
            .entries(backends.iter().map(|(name, backend)| (name, backend)))
            .finish()
    }
}

impl Registry {
    /// Gives the resource `name` a budget of `slots` shared by every
    /// process that names it with the same fleet (for `bulkhead-fleet`'s
    /// `FleetConfig`, the same Redis and key prefix): across the fleet,
    /// calls in flight on its bulkheads never exceed `slots`.
    ///
    /// The budget is checked like [`resource`](Self::resource)'s (REG-010:
    /// the `max_concurrent` of this process's bulkheads on it add up to at
    /// most `slots`); each bulkhead's `max_concurrent` is then the most it
    /// may get, and its limit in force is its part of the share this
    /// process leases from the fleet (0 until the first reply: declare
    /// fleet resources at startup). [`resource`](Self::resource) called
    /// later changes the budget this process reports; the fleet's budget
    /// is the smallest any live process reports. Calling this again with
    /// the same configuration changes the budget only.
    ///
    /// Nothing here waits for the fleet: the lease is kept by the fleet's
    /// backend (for Redis, a thread of the registry's, `bulkhead-fleet`),
    /// started with the first fleet resource (and tried again here if it
    /// could not be started before, see [`fleet_errors`](Self::fleet_errors)).
    ///
    /// # Errors
    ///
    /// - REG-014 if `fleet` cannot be used for `name` (a `{` or `}` in
    ///   the name or prefix, a lease under 100 ms or over a day, a margin
    ///   above half the lease);
    /// - REG-015 if `name` already shares its budget with a fleet
    ///   configured otherwise;
    /// - REG-010 if this process's bulkheads on it need more than `slots`;
    /// - REG-016 if the fleet's thread cannot be started.
    ///
    /// Nothing changes then.
    ///
    /// # Examples
    ///
    /// With the facade's feature `redis` (the `FleetConfig` of
    /// `bulkhead-fleet`, re-exported as `bulkhead::fleet::FleetConfig`):
    /// `registry.fleet_resource("db", 100, FleetConfig::redis("redis://10.0.0.5:6379/0")?)?`.
    /// The extension point it goes through is [`crate::fleet`].
    pub fn fleet_resource(
        &self,
        name: &str,
        slots: u32,
        fleet: impl FleetSpec,
    ) -> Result<(), RegistryError> {
        self.join_fleet(name, slots, Arc::new(fleet), OnStartFailure::Fail)
    }

    /// [`fleet_resource`](Self::fleet_resource), with `on_failure` saying
    /// what a failure to start the fleet's backend does.
    pub(crate) fn join_fleet(
        &self,
        name: &str,
        slots: u32,
        fleet: Arc<dyn FleetSpec>,
        on_failure: OnStartFailure,
    ) -> Result<(), RegistryError> {
        fleet.check(name)?;
        let _serialised = self.lock_declaring();
        let fleets = &self.inner.fleets;
        let running = fleets.spec(name);
        if let Some(running) = running.as_ref().filter(|r| !r.same(&*fleet)) {
            return Err(RegistryError::FleetConflict {
                resource: name.to_owned(),
                running: format!("{running:?}"),
                requested: format!("{fleet:?}"),
            });
        }
        let backend = fleets.of_kind(fleet.kind(), &self.inner.context);
        let started = backend.start();
        if let (Err(error), OnStartFailure::Fail) = (&started, on_failure) {
            return Err(error.clone());
        }
        if running.is_some() {
            return self.resource(name, slots);
        }
        self.resource(name, slots)?;
        if let Err(error) = &started {
            #[cfg(feature = "tracing")]
            tracing::error!(resource = name, %error, "fleet resource without its thread: no slots until it runs");
            fleets.errors().push(error.clone());
        }
        backend.join(
            name,
            slots,
            fleet,
            started.as_ref().err(),
            &self.declared_bulkheads(),
        );
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
    /// With `fall_back`, a fleet backend that cannot be started leaves the
    /// resource on its fallback share (see [`OnStartFailure::FallBack`]).
    pub(super) fn declare_fleet_resource(
        &self,
        spec: &ResourceSpec,
        changes: &mut Vec<Change>,
        fall_back: bool,
    ) -> Result<(), RegistryError> {
        let running = self.inner.fleets.spec(&spec.name);
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
        match self.join_fleet(&spec.name, spec.budget, Arc::clone(fleet), on_failure) {
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

    /// What keeping the fleet resources met and could not return, oldest
    /// first: REG-016 when [`RegistryBuilder::build`](crate::RegistryBuilder::build)
    /// could not start the fleet's thread for a resource its configuration
    /// declares. Such a resource is declared all the same, with the share of
    /// a process that never reached the fleet: none, whatever
    /// `on_unreachable` says (the others may hold the whole budget); its
    /// snapshot shows the state `Unreachable` and the error. The next
    /// [`fleet_resource`](Self::fleet_resource) (or a reload that declares
    /// a fleet resource) tries to start the thread again.
    pub fn fleet_errors(&self) -> Vec<RegistryError> {
        self.inner.fleets.errors().clone()
    }

    /// Leaves every fleet this registry is in, for a graceful shutdown:
    /// the bulkheads on fleet resources stop admitting calls (limit 0),
    /// their calls in flight get up to the margin to finish, and the share
    /// goes back to the fleet at once instead of when the lease runs out.
    /// Blocks until that is done (about the margin at most, plus a reply
    /// from the fleet's store). Dropping the last clone of the registry
    /// does the same without waiting.
    pub fn leave_fleets(&self) {
        for backend in self.inner.fleets.all() {
            backend.leave();
        }
    }

    /// The fleet resources' shares now, sorted by resource.
    pub(crate) fn fleet_snapshots(&self) -> Vec<FleetSnapshot> {
        let mut snapshots: Vec<FleetSnapshot> = self
            .inner
            .fleets
            .all()
            .iter()
            .flat_map(|backend| backend.snapshots())
            .collect();
        snapshots.sort_by(|a, b| a.resource.cmp(&b.resource));
        snapshots
    }

    /// The bulkheads declared (registered, or staged by an open batch)
    /// and the resource each names.
    fn declared_bulkheads(&self) -> Vec<Declared> {
        self.inner
            .stores
            .of::<Bulkhead>()
            .declared_policies()
            .into_iter()
            .map(|(_, bulkhead, config)| Declared {
                bulkhead,
                resource: config.resource().map(str::to_owned),
            })
            .collect()
    }

    /// After a reload: the bulkheads on a fleet resource come under its
    /// share, those that left it (for another resource, or none) drain
    /// first.
    pub(super) fn refresh_fleets(&self) {
        let backends = self.inner.fleets.all();
        if backends.is_empty() {
            return;
        }
        let declared = self.declared_bulkheads();
        for backend in backends {
            backend.refresh(&declared);
        }
    }

    /// The bulkheads of a dropped batch that no other batch declared:
    /// they leave their fleet resource for good (their calls in flight, if
    /// someone used them meanwhile, drain first).
    pub(super) fn forget_on_fleets(&self, discarded: &[Bulkhead]) {
        if discarded.is_empty() {
            return;
        }
        for backend in self.inner.fleets.all() {
            backend.discard(discarded);
        }
    }

    /// Puts a bulkhead just declared on `resource` under its share, if it
    /// is a fleet resource.
    pub(crate) fn adopt_on_fleet(&self, resource: &str, bulkhead: &Bulkhead) {
        for backend in self.inner.fleets.all() {
            backend.adopt(resource, bulkhead);
        }
    }

    /// Sets the budget fleet resource `resource` reports, if it is one.
    pub(super) fn set_fleet_budget(&self, resource: &str, budget: u32) {
        for backend in self.inner.fleets.all() {
            backend.set_budget(resource, budget);
        }
    }
}
