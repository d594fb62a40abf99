//! One fleet resource of a registry ([`Resource`]): its configuration, its
//! bulkheads, and its state as the driver last left it, shared between the
//! registry (which adds bulkheads and reads snapshots) and the driver.

use std::sync::atomic::AtomicBool;
use std::sync::atomic::AtomicU32;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use bulkhead_core::{Event, FleetShareChanged, PolicyContext};

use super::config::FleetConfig;
use super::lease::{Change, Lease};
use super::local::Members;
use bulkhead_registry::RegistryError;
use bulkhead_registry::fleet::{FleetSnapshot, FleetState};

/// A resource whose budget this process shares with a fleet.
#[derive(Debug)]
pub(crate) struct Resource {
    pub(crate) name: &'static str,
    pub(crate) config: FleetConfig,
    /// This process's id in the fleet.
    pub(crate) process_id: String,
    /// The budget this process configured.
    budget: AtomicU32,
    pub(crate) members: Mutex<Members>,
    pub(crate) status: Mutex<Status>,
    /// Set to make the driver leave the fleet.
    pub(crate) leave: AtomicBool,
    /// Set by the driver once it left: the share is given back (or Redis
    /// could not be told, and the lease runs out).
    pub(crate) left: AtomicBool,
    /// Whether the driver keeps its lease: false while the fleet thread
    /// could not be started (the share is then `on_unreachable`'s).
    pub(crate) driven: AtomicBool,
}

/// What the driver last knew, for snapshots.
#[derive(Debug)]
pub(crate) struct Status {
    pub(crate) lease: Lease,
    pub(crate) last_error: Option<String>,
}

impl Resource {
    pub(crate) fn new(name: &str, budget: u32, config: FleetConfig) -> Self {
        let status = Status {
            lease: Lease::new(&config, Instant::now()),
            last_error: None,
        };
        Resource {
            // One per fleet resource of the process: a bounded set, kept for
            // the events that name it.
            name: Box::leak(name.into()),
            process_id: process_id(),
            budget: AtomicU32::new(budget),
            members: Mutex::new(Members::default()),
            status: Mutex::new(status),
            leave: AtomicBool::new(false),
            left: AtomicBool::new(false),
            driven: AtomicBool::new(false),
            config,
        }
    }

    pub(crate) fn budget(&self) -> u32 {
        self.budget.load(Relaxed)
    }

    pub(crate) fn set_budget(&self, budget: u32) {
        self.budget.store(budget, Relaxed);
    }

    pub(crate) fn members(&self) -> MutexGuard<'_, Members> {
        self.members.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn status(&self) -> MutexGuard<'_, Status> {
        self.status.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The fleet thread could not be started (`error`, REG-016): the share
    /// falls back to `on_unreachable` as if Redis could not be reached, and
    /// the error shows as the last one, until a driver takes the resource.
    pub(crate) fn unstarted(&self, context: &PolicyContext, error: &RegistryError) {
        let mut members = self.members();
        let mut status = self.status();
        status.last_error = Some(error.to_string());
        let change = status.lease.on_error(Instant::now());
        members.apply(status.lease.grant);
        if let Some(change) = change {
            self.publish(context, change, &status.lease);
        }
    }

    /// Applies the share in force to the bulkheads, when no driver does
    /// it for every tick.
    pub(crate) fn apply_undriven(&self) {
        if !self.driven.load(Acquire) {
            let mut members = self.members();
            members.settle();
            members.apply(self.status().lease.grant);
        }
    }

    /// Leaves the fleet without a driver (it never had one): the share
    /// was never Redis's, so only the bulkheads close.
    pub(crate) fn leave_undriven(&self, context: &PolicyContext) {
        let mut members = self.members();
        let mut status = self.status();
        let (_, change) = status.lease.leave();
        members.apply(0);
        self.publish(context, change, &status.lease);
        self.left.store(true, Release);
    }

    /// Publishes a change of the share.
    pub(crate) fn publish(&self, context: &PolicyContext, change: Change, lease: &Lease) {
        let (target, budget, processes) = match lease.state {
            FleetState::Joined => (lease.target, lease.budget, lease.processes),
            _ => (0, lease.budget, lease.processes),
        };
        context.publish(|at| {
            Event::FleetShareChanged(
                FleetShareChanged::new(self.name, change.reason, change.from, change.to, at)
                    .fleet(target, budget, processes),
            )
        });
    }

    pub(crate) fn snapshot(&self) -> FleetSnapshot {
        let (limits, in_flight, bulkheads, draining) = {
            let members = self.members();
            let names = |ids: Vec<&str>| ids.into_iter().map(str::to_owned).collect();
            (
                members.limits(),
                members.in_flight(),
                names(members.ids()),
                names(members.leaving_ids()),
            )
        };
        let status = self.status();
        let lease = &status.lease;
        let now = Instant::now();
        let mut snapshot = FleetSnapshot::new(self.name, lease.state);
        snapshot.redis = self.config.redis_url();
        snapshot.process_id = self.process_id.clone();
        snapshot.share = lease.grant;
        snapshot.target = lease.target;
        snapshot.held = lease.recorded;
        snapshot.owned = lease.owned;
        snapshot.fallback = lease.fallback;
        snapshot.budget = lease.budget;
        snapshot.demand = lease.demand;
        snapshot.configured_budget = self.budget();
        snapshot.processes = lease.processes;
        snapshot.limits = limits;
        snapshot.in_flight = in_flight;
        snapshot.bulkheads = bulkheads;
        snapshot.draining = draining;
        snapshot.lease = self.config.lease_duration();
        snapshot.lease_remaining = match lease.state {
            FleetState::Joined => lease.deadline.map(|d| d.saturating_duration_since(now)),
            _ => None,
        };
        snapshot.recovering = (!lease.recover.is_zero()).then_some(lease.recover);
        snapshot.renewals = lease.renewals;
        snapshot.failures = lease.failures;
        snapshot.last_error = status.last_error.clone();
        snapshot
    }
}

/// `<host>:<pid>:<64 random bits>`, one per fleet resource of a registry
/// (two registries of one process are two members of the fleet): new at
/// every start of the process, so
/// that a restarted process never inherits the lease of its predecessor.
fn process_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".to_owned());
    // RandomState is seeded from the operating system's randomness.
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    format!("{host}:{}:{:016x}", std::process::id(), hasher.finish())
}
