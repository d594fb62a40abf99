//! One fleet resource of a registry ([`Resource`]): its configuration, its
//! bulkheads, and its state as the driver last left it, shared between the
//! registry (which adds bulkheads and reads snapshots) and the driver.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use super::config::FleetConfig;
use super::lease::Lease;
use super::local::Members;
use super::snapshot::FleetSnapshot;

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

    pub(crate) fn snapshot(&self) -> FleetSnapshot {
        let (limits, in_flight) = {
            let members = self.members();
            (members.limits(), members.in_flight())
        };
        let status = self.status();
        let lease = &status.lease;
        let now = Instant::now();
        FleetSnapshot {
            resource: self.name.to_owned(),
            redis: self.config.redis_url(),
            process_id: self.process_id.clone(),
            state: lease.state,
            share: lease.grant,
            target: lease.target,
            held: lease.recorded,
            owned: lease.owned,
            budget: lease.budget,
            demand: lease.demand,
            configured_budget: self.budget(),
            processes: lease.processes,
            limits,
            in_flight,
            lease: self.config.lease_duration(),
            lease_remaining: match lease.state {
                super::FleetState::Joined => {
                    lease.deadline.map(|d| d.saturating_duration_since(now))
                }
                _ => None,
            },
            recovering: (!lease.recover.is_zero()).then_some(lease.recover),
            renewals: lease.renewals,
            failures: lease.failures,
            last_error: status.last_error.clone(),
        }
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
