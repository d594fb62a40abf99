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
//! only while the bound stays within the share.

use bulkhead_core::Bulkhead;

use super::alloc::{Claim, allocate};

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
}

impl Member {
    fn limit(&self) -> u32 {
        self.bulkhead.max_concurrent()
    }

    fn held(&self) -> u32 {
        self.limit().max(self.bulkhead.concurrent_calls())
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

    fn set_cap(&mut self, cap: u32) {
        if cap != self.cap {
            self.cap = cap;
            self.bulkhead.set_limit_cap(Some(cap));
        }
    }
}

/// The bulkheads of this process on one fleet resource.
#[derive(Debug, Default)]
pub(crate) struct Members {
    members: Vec<Member>,
}

impl Members {
    /// Takes `bulkhead` in, closed (limit 0) until a share is applied: a
    /// bulkhead never admits a call the fleet has not granted.
    pub(crate) fn add(&mut self, bulkhead: Bulkhead) {
        if self.contains(bulkhead.instance()) {
            return;
        }
        bulkhead.set_limit_cap(Some(0));
        self.members.push(Member {
            bulkhead,
            cap: 0,
            peak: [0; 2],
            refused: [0; 2],
        });
        self.members
            .sort_by(|a, b| a.bulkhead.instance().cmp(b.bulkhead.instance()));
    }

    pub(crate) fn contains(&self, instance: &str) -> bool {
        self.members
            .iter()
            .any(|m| m.bulkhead.instance() == instance)
    }

    /// Lets go of the bulkheads not in `keep` (a reload moved them to
    /// another resource): their cap is lifted.
    pub(crate) fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.members.retain(|m| {
            let kept = keep(m.bulkhead.instance());
            if !kept {
                m.bulkhead.set_limit_cap(None);
            }
            kept
        });
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

    /// The bound on the calls in flight: `Σ max(limit in force, in flight)`.
    pub(crate) fn bound(&self) -> u32 {
        self.members.iter().map(Member::held).sum()
    }

    /// The calls in flight.
    pub(crate) fn in_flight(&self) -> u32 {
        self.members
            .iter()
            .map(|m| m.bulkhead.concurrent_calls())
            .sum()
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
    /// `share` (calls in flight above a lowered limit hold their slots
    /// until they finish).
    pub(crate) fn apply(&mut self, share: u32) {
        let ceilings: Vec<u32> = self.members.iter().map(Member::ceiling).collect();
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
mod tests {
    use bulkhead_core::{Bulkhead, BulkheadConfig};

    use super::Members;

    fn bulkhead(id: &str, max: u32) -> Bulkhead {
        Bulkhead::new(
            id,
            BulkheadConfig::builder()
                .max_concurrent(max)
                .build()
                .unwrap(),
        )
    }

    #[test]
    fn a_new_member_admits_nothing_until_a_share_is_applied() {
        let mut members = Members::default();
        let a = bulkhead("local-a", 5);
        members.add(a.clone());
        assert!(a.try_enter().is_err());
        members.apply(3);
        assert_eq!(a.max_concurrent(), 3);
        assert_eq!(members.bound(), 3);
    }

    #[test]
    fn the_share_is_split_on_demand_and_never_above_a_limit() {
        let mut members = Members::default();
        let (a, b) = (bulkhead("local-b1", 2), bulkhead("local-b2", 10));
        members.add(a.clone());
        members.add(b.clone());
        members.apply(10);
        assert_eq!((a.max_concurrent(), b.max_concurrent()), (2, 8));
        assert_eq!(members.ceiling(), 12);
    }

    #[test]
    fn a_smaller_share_raises_nothing_while_calls_run_over_it() {
        let mut members = Members::default();
        let (a, b) = (bulkhead("local-c1", 10), bulkhead("local-c2", 10));
        members.add(a.clone());
        members.add(b.clone());
        members.apply(8);
        assert_eq!((a.max_concurrent(), b.max_concurrent()), (4, 4));
        let permits: Vec<_> = (0..4).map(|_| a.try_enter().unwrap()).collect();
        // a is busy: the split moves toward it, but b's slots come back only
        // as b's own calls... b has none, so it drops at once; a may rise
        // only within the share.
        members.sample();
        members.apply(4);
        assert!(members.bound() <= 4, "bound {}", members.bound());
        assert_eq!(a.concurrent_calls(), 4);
        drop(permits);
        members.apply(4);
        assert!(members.bound() <= 4);
    }

    #[test]
    fn calls_in_flight_above_a_lowered_limit_keep_the_bound_until_they_end() {
        let mut members = Members::default();
        let a = bulkhead("local-d1", 10);
        members.add(a.clone());
        members.apply(6);
        let permits: Vec<_> = (0..6).map(|_| a.try_enter().unwrap()).collect();
        members.apply(2);
        assert_eq!(a.max_concurrent(), 2);
        assert_eq!(members.bound(), 6);
        drop(permits);
        assert_eq!(members.bound(), 2);
    }
}
