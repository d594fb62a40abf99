//! One process's side of a fleet lease, as a state machine without I/O: it
//! is told the time, the bound on its calls in flight and Redis's replies,
//! and says when to send, what, and which share applies (the driver does
//! the talking, `local` the applying).
//!
//! - A share is granted by a reply and kept until `sent + lease - margin`
//!   on this process's clock (`sent`: when the request left, so a slow
//!   reply only makes the deadline earlier). Redis lets the lease run out
//!   at `TIME + lease` on its own clock, later.
//! - Renewals go every third of the lease; every twelfth while the grant
//!   is below the target (others are still giving slots back), and at once
//!   when a smaller grant has been applied and the calls in flight fit it
//!   (the second phase of a shrink: Redis frees the slots only then).
//! - When the deadline passes without a renewal the share falls back, in
//!   two steps. First to its fallback or its last grant, whichever is
//!   smaller: the fleet's grants, made before Redis was lost, may all be
//!   in use for up to a lease still, and this grant is one of them. Then,
//!   once no grant made before the loss can be in use anywhere, to the
//!   whole fallback. The loss came after the last reply and before the
//!   first failure after it; a grant made before it is used until its
//!   process's deadline and its calls end within the margin after: so
//!   from the first failure plus one lease and the margin (which also
//!   covers clocks that run at slightly different rates), nothing else of
//!   the fleet runs but fallbacks.
//! - The fallback is what Redis last said: each process's part of the
//!   budget among what the processes' `on_unreachable` ask for, recorded
//!   so that the fallbacks add up to at most the budget. A process that
//!   never reached Redis has none.
//! - The first reply after a fallback rejoins.
//!
//! On highly available Redis the primary can change; the scripts fence
//! the nodes that are not it (`lua/acquire.lua`'s header):
//!
//! - A node that is not the primary writes and grants nothing: the script
//!   checks `role:master` first and the reply is a `READONLY` error here
//!   ([`Scripts::acquire`](super::script::Scripts::acquire)), an
//!   [`on_error`](Lease::on_error) like any other. So is a reply the
//!   driver cannot confirm came from the primary: its grant is not
//!   applied, and `acked`, the epoch and the fallback stay those of the
//!   last trusted reply, which the next request reports.
//! - A promoted node holds growth for one lease from its first script
//!   (`meta.replid` changed): each process keeps at most what it owns
//!   there, its replicated record, which the old primary counted too.
//!   Every grant of the old primary was sent before the promotion, so it
//!   is over by one lease after it (its deadline, then the margin), before
//!   the hold ends. The cost: after a failover, service is back within one
//!   lease of the first script on the promoted node (about one lease after
//!   the Sentinels name it); a process whose lease outlived the failover
//!   keeps its share meanwhile, only growth waits.

use std::time::{Duration, Instant};

use bulkhead_core::FleetShareReason;

use super::config::{FleetConfig, OnUnreachable};
use super::script::{Reply, Request};
use bulkhead_registry::fleet::FleetState;

/// A change of the share the process applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Change {
    pub(crate) from: u32,
    pub(crate) to: u32,
    pub(crate) reason: FleetShareReason,
}

/// The lease of one process on one fleet resource.
#[derive(Debug)]
pub(crate) struct Lease {
    lease: Duration,
    margin: Duration,
    on_unreachable: OnUnreachable,
    pub(crate) state: FleetState,
    /// The number of the last request sent, and of the last one answered.
    seq: u64,
    acked: u64,
    /// The epoch of the last reply: which incarnation of Redis's state.
    epoch: String,
    /// When the lease of the reply to `acked` runs out on Redis's clock.
    acked_exp: u64,
    /// The slots to fall back to, as the last applied reply said.
    pub(crate) fallback: u32,
    /// The first failure since Redis last answered: Redis was lost after
    /// its last answer and before this.
    lost_since: Option<Instant>,
    /// Until when the share of the last applied reply may be used.
    pub(crate) deadline: Option<Instant>,
    /// The slots the bulkheads may use now.
    pub(crate) grant: u32,
    /// What the last reply said: the target, Redis's record of this
    /// process (held, owned), the fleet's budget and processes, the
    /// recovery hold.
    pub(crate) target: u32,
    pub(crate) recorded: u32,
    pub(crate) owned: u32,
    pub(crate) budget: u32,
    pub(crate) processes: u32,
    pub(crate) recover: Duration,
    /// The demand the last request reported.
    pub(crate) demand: u32,
    /// When the next request is due, and no earlier than when, after an
    /// error; when the last one was sent.
    next: Instant,
    last_sent: Option<Instant>,
    backoff_until: Instant,
    pub(crate) renewals: u64,
    pub(crate) failures: u64,
    pub(crate) last_renewal: Option<Instant>,
}

/// `at + wait`; past what an `Instant` can hold, `at` plus the longest
/// lease (or `at` itself): no duration makes it panic.
pub(crate) fn later(at: Instant, wait: Duration) -> Instant {
    at.checked_add(wait)
        .or_else(|| at.checked_add(FleetConfig::MAX_LEASE))
        .unwrap_or(at)
}

impl Lease {
    pub(crate) fn new(config: &FleetConfig, now: Instant) -> Self {
        // A checked configuration is within these bounds already
        // (`FleetConfig::check`); kept so that no value makes the
        // arithmetic below overflow.
        let lease = config
            .lease_duration()
            .clamp(FleetConfig::MIN_LEASE, FleetConfig::MAX_LEASE);
        Lease {
            lease,
            margin: config.margin_duration().min(lease / 2),
            on_unreachable: config.unreachable(),
            state: FleetState::Joining,
            seq: 0,
            acked: 0,
            epoch: String::new(),
            acked_exp: 0,
            fallback: 0,
            lost_since: None,
            deadline: None,
            grant: 0,
            target: 0,
            recorded: 0,
            owned: 0,
            budget: 0,
            processes: 0,
            recover: Duration::ZERO,
            demand: 0,
            next: now,
            last_sent: None,
            backoff_until: now,
            renewals: 0,
            failures: 0,
            last_renewal: None,
        }
    }

    /// The renewal period: a third of the lease.
    pub(crate) fn period(&self) -> Duration {
        self.lease / 3
    }

    /// How long a request may take: a tenth of the lease, at most 1 s.
    pub(crate) fn response_timeout(&self) -> Duration {
        (self.lease / 10).min(Duration::from_secs(1))
    }

    /// When a request sent at `sent` stops being waited for: after the
    /// response timeout, and no later than the deadline of the share in
    /// force, so that no wait delays a fallback.
    pub(crate) fn give_up_at(&self, sent: Instant) -> Instant {
        let timeout = later(sent, self.response_timeout());
        match self.deadline {
            Some(deadline) if self.state == FleetState::Joined && deadline > sent => {
                timeout.min(deadline)
            }
            _ => timeout,
        }
    }

    /// At `now`: falls back if the deadline passed (to the fallback or the
    /// last grant, whichever is smaller), and raises a fallback share to
    /// the whole fallback once no grant made before Redis was lost can be
    /// in use (see [`raise_at`](Self::raise_at)).
    pub(crate) fn expire(&mut self, now: Instant) -> Option<Change> {
        match self.state {
            FleetState::Joined if self.deadline.is_some_and(|d| now >= d) => Some(self.fall_back()),
            FleetState::Unreachable
                if self.grant < self.fallback && self.raise_at().is_some_and(|t| now >= t) =>
            {
                let from = self.grant;
                self.grant = self.fallback;
                Some(Change {
                    from,
                    to: self.grant,
                    reason: FleetShareReason::Unreachable,
                })
            }
            _ => None,
        }
    }

    /// When a fallback share may rise above the last grant: the first
    /// failure since Redis last answered, plus one lease and the margin.
    /// `None` while Redis answers (late, or too late to use).
    pub(crate) fn raise_at(&self) -> Option<Instant> {
        self.lost_since
            .map(|lost| later(lost, self.lease.saturating_add(self.margin)))
    }

    fn fall_back(&mut self) -> Change {
        let from = self.grant;
        self.grant = self.grant.min(self.fallback);
        self.state = FleetState::Unreachable;
        self.target = 0;
        Change {
            from,
            to: self.grant,
            reason: FleetShareReason::Unreachable,
        }
    }

    /// Whether to send a request at `now`, the calls in flight being bound
    /// by `bound` and the demand being `demand`: a renewal is due, a shrink
    /// can be acknowledged, or the demand moved from the one last reported
    /// (by at least an eighth; no sooner than a twelfth of the lease after
    /// the last request), so that the fleet hears of it before the next
    /// renewal.
    pub(crate) fn due(&self, now: Instant, bound: u32, demand: u32) -> bool {
        if self.state == FleetState::Left || now < self.backoff_until {
            return false;
        }
        if now >= self.next {
            return true;
        }
        if self.state != FleetState::Joined {
            return false;
        }
        let shrink_fits = self.recorded > self.grant && bound <= self.grant;
        let moved = demand.abs_diff(self.demand) >= (self.demand / 8).max(1);
        let cooled = self
            .last_sent
            .is_none_or(|sent| now >= later(sent, self.period() / 4));
        shrink_fits || (moved && cooled)
    }

    /// The request to send at `now`.
    pub(crate) fn request(
        &mut self,
        now: Instant,
        bound: u32,
        demand: u32,
        budget: u32,
        ceiling: u32,
    ) -> Request {
        self.seq += 1;
        self.last_sent = Some(now);
        self.demand = demand.max(1).min(ceiling);
        let lease_valid =
            self.state == FleetState::Joined && self.deadline.is_some_and(|d| now < d);
        Request {
            seq: self.seq,
            acked: self.acked,
            seen_epoch: self.epoch.clone(),
            held: bound,
            demand: self.demand,
            lease_ms: u64::try_from(self.lease.as_millis()).unwrap_or(u64::MAX),
            budget,
            lease_valid,
            ceiling,
            acked_exp: self.acked_exp,
            asks: self.on_unreachable.asks(budget),
            fallback: self.fallback,
        }
    }

    /// Applies the reply to `request`, sent at `sent`, received at `now`.
    pub(crate) fn on_reply(
        &mut self,
        sent: Instant,
        now: Instant,
        request: &Request,
        reply: Reply,
    ) -> Option<Change> {
        // Redis answered: whenever it was lost, it was after this.
        self.lost_since = None;
        if !reply.ok {
            // Redis already applied a newer request: ask again at once.
            self.next = now;
            return None;
        }
        self.acked = request.seq;
        self.acked_exp = reply.exp;
        self.epoch = reply.epoch;
        self.recorded = reply.held;
        self.owned = reply.owned;
        self.budget = reply.budget;
        self.processes = reply.processes;
        self.recover = Duration::from_millis(reply.recover_ms);
        let deadline = later(sent, self.lease.saturating_sub(self.margin));
        if now >= deadline {
            // Too late to use: the share may already be someone else's by
            // Redis's clock. What it records of us stays counted.
            self.next = now;
            return None;
        }
        self.renewals += 1;
        self.last_renewal = Some(now);
        self.deadline = Some(deadline);
        self.target = reply.target;
        self.fallback = reply.fallback;
        let from = self.grant;
        self.grant = reply.grant;
        let reason = match self.state {
            FleetState::Joining => Some(FleetShareReason::Joined),
            FleetState::Unreachable => Some(FleetShareReason::Rejoined),
            _ if from != self.grant => Some(FleetShareReason::Rebalanced),
            _ => None,
        };
        self.state = FleetState::Joined;
        let renew_in = if self.grant < self.target {
            self.period() / 4
        } else {
            self.period()
        };
        self.next = later(sent, renew_in);
        reason.map(|reason| Change {
            from,
            to: self.grant,
            reason,
        })
    }

    /// A request failed (error or timeout) at `now`: try again a twelfth
    /// of the lease after it was sent (at once after a timeout that long).
    /// A process that never had a lease falls back at once (to nothing: it
    /// has no share to keep, and no fallback).
    pub(crate) fn on_error(&mut self, now: Instant) -> Option<Change> {
        self.failures += 1;
        self.lost_since.get_or_insert(now);
        let sent = self.last_sent.unwrap_or(now);
        self.next = later(sent, self.period() / 4).max(now);
        self.backoff_until = self.next;
        (self.state == FleetState::Joining).then(|| self.fall_back())
    }

    /// The primary changed (Sentinel's `+switch-master`) at `now`: the next
    /// request goes at once, without waiting out the backoff of a failure
    /// on the old primary.
    pub(crate) fn retry_now(&mut self, now: Instant) {
        self.next = self.next.min(now);
        self.backoff_until = self.backoff_until.min(now);
    }

    /// The process leaves: no slots any more. Returns the next request's
    /// number, for `leave`.
    pub(crate) fn leave(&mut self) -> (u64, Change) {
        self.seq += 1;
        let from = self.grant;
        self.grant = 0;
        self.state = FleetState::Left;
        (
            self.seq,
            Change {
                from,
                to: 0,
                reason: FleetShareReason::Left,
            },
        )
    }
}

#[cfg(test)]
mod tests;
