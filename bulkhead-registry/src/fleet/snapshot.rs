//! [`FleetSnapshot`]: a fleet resource's share at one moment, as
//! `registry.snapshot().fleets()` shows it. The registry shows it; a fleet
//! backend ([`FleetBackend::snapshots`](super::FleetBackend::snapshots))
//! fills it in.

use std::time::Duration;

/// Where a process stands with a fleet resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FleetState {
    /// No reply from Redis yet: no slots.
    Joining,
    /// Holding a lease: the share is the fleet's grant.
    Joined,
    /// The lease ran out without a renewal: the share is the fallback
    /// (at most the last grant until no grant made before Redis was lost
    /// can be in use) until Redis answers again.
    Unreachable,
    /// Left the fleet (`Registry::leave_fleets`, or the registry dropped):
    /// no slots.
    Left,
}

impl FleetState {
    /// The state in lower case, as metrics name it.
    pub fn as_str(self) -> &'static str {
        match self {
            FleetState::Joining => "joining",
            FleetState::Joined => "joined",
            FleetState::Unreachable => "unreachable",
            FleetState::Left => "left",
        }
    }
}

/// A fleet resource's share at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FleetSnapshot {
    /// The resource's name.
    pub resource: String,
    /// The Redis URL, its password shown as `***`.
    pub redis: String,
    /// This process's id in the fleet (`host:pid:random`).
    pub process_id: String,
    /// Where this process stands.
    pub state: FleetState,
    /// The slots this process's bulkheads on the resource may hold
    /// together now: the grant, or the fallback.
    pub share: u32,
    /// The share the fleet's allocation aims at for this process; the
    /// grant reaches it once other processes have given their slots back.
    pub target: u32,
    /// What Redis counts for this process: a bound on its calls in flight
    /// (at least the share while a shrink is being acknowledged).
    pub held: u32,
    /// The part of `held` that is this process's own share.
    pub owned: u32,
    /// The slots this process would fall back to if it lost Redis, once
    /// no grant made before could be in use (see `OnUnreachable`): its
    /// part of the budget among the processes' fallbacks, as Redis last
    /// said.
    pub fallback: u32,
    /// The fleet's budget (the smallest any live process configured).
    pub budget: u32,
    /// The demand this process last reported: the most calls in flight
    /// and waiting on its bulkheads over the last renewal period (more when
    /// they refused calls), at least 1, at most its limits.
    pub demand: u32,
    /// This process's configured budget.
    pub configured_budget: u32,
    /// The processes holding a lease, this one included.
    pub processes: u32,
    /// The limits in force of this process's bulkheads on the resource,
    /// added up.
    pub limits: u32,
    /// Calls in flight on the resource's bulkheads, those draining
    /// included.
    pub in_flight: u32,
    /// This process's bulkheads on the resource, by id: the share is
    /// split among them.
    pub bulkheads: Vec<String>,
    /// Bulkheads leaving the resource (a reload moved them elsewhere, or
    /// the batch that declared them was dropped), by id: they admit no
    /// call, and their calls in flight count against the share until they
    /// have finished; then they are let go.
    pub draining: Vec<String>,
    /// The lease.
    pub lease: Duration,
    /// Time left before the share falls back without a renewal.
    pub lease_remaining: Option<Duration>,
    /// While Redis recovers from losing its data: nobody's share grows
    /// until this has passed.
    pub recovering: Option<Duration>,
    /// Successful renewals since the process joined.
    pub renewals: u64,
    /// Failed requests (errors and timeouts) since the process joined.
    pub failures: u64,
    /// The last error, if the last request failed (without secrets).
    pub last_error: Option<String>,
}

impl FleetSnapshot {
    /// The snapshot of `resource` in `state` with nothing else known yet
    /// (no share, no processes, no bulkheads, a zero lease), for a fleet
    /// backend to fill in field by field.
    pub fn new(resource: &str, state: FleetState) -> Self {
        FleetSnapshot {
            resource: resource.to_owned(),
            redis: String::new(),
            process_id: String::new(),
            state,
            share: 0,
            target: 0,
            held: 0,
            owned: 0,
            fallback: 0,
            budget: 0,
            demand: 0,
            configured_budget: 0,
            processes: 0,
            limits: 0,
            in_flight: 0,
            bulkheads: Vec::new(),
            draining: Vec::new(),
            lease: Duration::ZERO,
            lease_remaining: None,
            recovering: None,
            renewals: 0,
            failures: 0,
            last_error: None,
        }
    }
}
