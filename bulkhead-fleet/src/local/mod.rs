//! Applying a share to the bulkheads of one process on a fleet resource.
//!
//! The share is split among the bulkheads by the same allocation as the
//! fleet's (on their demand, up to each one's configured limit) and set as
//! a cap over each limit ([`Bulkhead::set_limit_cap`]): the live-resize
//! path, so calls in flight finish and waiters keep their place.
//!
//! The process promises Redis a bound on its calls in flight,
//! `Σ max(limit in force, in flight)` over its bulkheads, and keeps it
//! without a lock on the call path: a bulkhead admits a call only while its
//! calls in flight are below its limit, in one atomic word, so the bound
//! grows only when a limit is raised, and [`Members::apply`] raises limits
//! only while the bound stays within the share. An adaptive bulkhead's
//! algorithm raises its own limit, but never above its cap: its cap counts
//! as its limit in the bound.

mod leaving;

use bulkhead_core::Bulkhead;

use super::alloc::{Claim, allocate};
pub(crate) use leaving::Handover;
use leaving::Leaving;

/// One bulkhead on the resource.
#[derive(Debug)]
struct Member {
    bulkhead: Bulkhead,
    /// The cap last set on it.
    cap: u32,
    /// The most calls in flight and waiting seen in the current and the
    /// previous part of the demand window.
    peak: [u32; 2],
    /// Calls it refused in the current and the previous part.
    refused: [u32; 2],
    /// The handovers of the resources it came from, not done yet: until
    /// they are, it stays closed (their calls may still be in flight).
    after: Vec<Handover>,
}

impl Member {
    fn limit(&self) -> u32 {
        self.bulkhead.max_concurrent()
    }

    /// The most calls it may have in flight before the next `apply`: its
    /// limit in force or the calls above it. An adaptive bulkhead's
    /// algorithm may raise its limit up to the cap at any time, so the cap
    /// counts for it.
    fn held(&self) -> u32 {
        let limit = if self.bulkhead.adaptive().is_some() {
            self.limit().max(self.cap)
        } else {
            self.limit()
        };
        limit.max(self.bulkhead.concurrent_calls())
    }

    fn ceiling(&self) -> u32 {
        self.bulkhead.config().max_concurrent()
    }

    /// What it would use: its peak, and half as much again as its limit
    /// when it refused calls (refused calls show no concurrency of their
    /// own: how many more it needs is unknown, so it asks for more in
    /// steps).
    fn demand(&self) -> u32 {
        let peak = self.peak[0].max(self.peak[1]);
        if self.refused[0] > 0 || self.refused[1] > 0 {
            let limit = self.limit();
            peak.max(limit + (limit / 2).max(1))
        } else {
            peak
        }
    }

    /// Whether it still waits for a resource it came from.
    fn arriving(&mut self) -> bool {
        self.after.retain(|h| !h.done());
        !self.after.is_empty()
    }

    fn set_cap(&mut self, cap: u32) {
        if cap != self.cap {
            self.cap = cap;
            self.bulkhead.set_limit_cap(Some(cap));
        }
    }
}

/// The bulkheads of this process on one fleet resource, and those leaving
/// it (see `leaving`).
#[derive(Debug, Default)]
pub(crate) struct Members {
    members: Vec<Member>,
    leaving: Vec<Leaving>,
}

impl Members {
    /// Takes `bulkhead` in, closed (limit 0) until a share is applied: a
    /// bulkhead never admits a call the fleet has not granted. It stays
    /// closed until the handovers `after` are done (the resources it comes
    /// from still count its calls). A bulkhead that was leaving this
    /// resource is a member again at once.
    pub(crate) fn add(&mut self, bulkhead: Bulkhead, after: Vec<Handover>) {
        let instance = bulkhead.instance();
        if let Some(member) = self
            .members
            .iter_mut()
            .find(|m| m.bulkhead.instance() == instance)
        {
            member.after.extend(after);
            return;
        }
        let mut waits = after;
        // Only a declared instance comes back: there is one per id.
        if let Some(i) = self
            .leaving
            .iter()
            .position(|l| l.declared && l.instance() == instance)
        {
            waits.extend(self.leaving.swap_remove(i).take_back());
        }
        bulkhead.set_limit_cap(Some(0));
        self.members.push(Member {
            bulkhead,
            cap: 0,
            peak: [0; 2],
            refused: [0; 2],
            after: waits,
        });
        self.members
            .sort_by(|a, b| a.bulkhead.instance().cmp(b.bulkhead.instance()));
    }

    /// The ids of the members.
    pub(crate) fn ids(&self) -> Vec<&'static str> {
        self.members.iter().map(|m| m.bulkhead.instance()).collect()
    }

    /// The ids of the bulkheads leaving.
    pub(crate) fn leaving_ids(&self) -> Vec<&'static str> {
        let mut ids: Vec<&'static str> = self.leaving.iter().map(Leaving::instance).collect();
        ids.dedup();
        ids
    }

    /// Member `instance` leaves (a reload moved it elsewhere): closed,
    /// counted until its calls in flight finish, then let go; `release`:
    /// its cap is lifted then (it went to no other fleet resource).
    pub(crate) fn depart(&mut self, instance: &str, release: bool) {
        self.remove(instance, release, true);
    }

    /// Bulkhead `instance`, declared in a batch that was dropped, leaves:
    /// as [`depart`](Self::depart), and it never comes back.
    pub(crate) fn discard(&mut self, instance: &str) {
        self.remove(instance, true, false);
        for leaving in self.leaving.iter_mut().filter(|l| l.instance() == instance) {
            leaving.declared = false;
        }
    }

    fn remove(&mut self, instance: &str, release: bool, declared: bool) {
        let Some(i) = self
            .members
            .iter()
            .position(|m| m.bulkhead.instance() == instance)
        else {
            return;
        };
        let member = self.members.remove(i);
        let mut leaving = Leaving::new(member.bulkhead, member.after, release, declared);
        if !leaving.settle() {
            self.leaving.push(leaving);
        }
    }

    /// `instance` goes to another fleet resource: the handovers it must
    /// wait for there. Nothing here lifts its cap any more.
    pub(crate) fn hand_over(&mut self, instance: &str) -> Vec<Handover> {
        self.leaving
            .iter_mut()
            .filter(|l| l.declared && l.instance() == instance)
            .map(|l| {
                l.release = false;
                l.handover()
            })
            .collect()
    }

    /// Lets go of the leaving bulkheads whose calls have finished.
    pub(crate) fn settle(&mut self) {
        self.leaving.retain_mut(|l| !l.settle());
    }

    /// Counts a call `instance` refused.
    pub(crate) fn refused(&mut self, instance: &str) {
        if let Some(m) = self
            .members
            .iter_mut()
            .find(|m| m.bulkhead.instance() == instance)
        {
            m.refused[0] = m.refused[0].saturating_add(1);
        }
    }

    /// Records the calls in flight and waiting now.
    pub(crate) fn sample(&mut self) {
        for m in &mut self.members {
            let now = m.bulkhead.concurrent_calls() + m.bulkhead.waiting_calls();
            m.peak[0] = m.peak[0].max(now);
        }
    }

    /// Starts a new part of the demand window: the demand is what the
    /// current and the previous part saw, so a change shows within two
    /// parts, and a peak is remembered as long.
    pub(crate) fn rotate_window(&mut self) {
        for m in &mut self.members {
            m.peak = [
                m.bulkhead.concurrent_calls() + m.bulkhead.waiting_calls(),
                m.peak[0],
            ];
            m.refused = [0, m.refused[0]];
        }
    }

    /// The bound on the calls in flight: `Σ max(limit in force, in flight)`
    /// over the members, and the calls in flight of those leaving.
    pub(crate) fn bound(&self) -> u32 {
        self.members.iter().map(Member::held).sum::<u32>() + self.leaving_in_flight()
    }

    /// The calls in flight, those of the bulkheads leaving included.
    pub(crate) fn in_flight(&self) -> u32 {
        self.members
            .iter()
            .map(|m| m.bulkhead.concurrent_calls())
            .sum::<u32>()
            + self.leaving_in_flight()
    }

    fn leaving_in_flight(&self) -> u32 {
        self.leaving.iter().map(Leaving::in_flight).sum()
    }

    /// The limits in force, added up.
    pub(crate) fn limits(&self) -> u32 {
        self.members.iter().map(Member::limit).sum()
    }

    /// The most the process could use: its configured limits, added up.
    pub(crate) fn ceiling(&self) -> u32 {
        self.members.iter().map(Member::ceiling).sum()
    }

    /// What the process would use in this window.
    pub(crate) fn demand(&self) -> u32 {
        self.members.iter().map(Member::demand).sum()
    }

    /// Splits `share` among the bulkheads and applies it: lowered limits
    /// first, then raised ones only as far as the bound stays within
    /// `share` (calls in flight above a lowered limit, and those of the
    /// bulkheads leaving, hold their slots until they finish). A member
    /// still arriving from another fleet resource gets nothing yet.
    pub(crate) fn apply(&mut self, share: u32) {
        let ceilings: Vec<u32> = self
            .members
            .iter_mut()
            .map(|m| if m.arriving() { 0 } else { m.ceiling() })
            .collect();
        let claims: Vec<Claim<'_>> = self
            .members
            .iter()
            .zip(&ceilings)
            .map(|(m, &ceiling)| Claim {
                id: m.bulkhead.instance(),
                demand: m.demand(),
                ceiling,
            })
            .collect();
        let targets = allocate(share, &claims);
        for (m, &target) in self.members.iter_mut().zip(&targets) {
            if target < m.cap {
                m.set_cap(target);
            }
        }
        let mut bound = self.bound();
        for (m, &target) in self.members.iter_mut().zip(&targets) {
            if target <= m.cap {
                continue;
            }
            // Raising a limit from `l` to `x` adds `max(x, f) - max(l, f)`
            // to the bound (`f` in flight; it cannot pass `l` meanwhile).
            let held = m.held();
            let room = share.saturating_sub(bound);
            let cap = target.min(held + room);
            if cap > m.cap {
                m.set_cap(cap);
                let now = m.held();
                bound = bound - held + now;
            }
        }
    }
}

#[cfg(test)]
mod tests;
