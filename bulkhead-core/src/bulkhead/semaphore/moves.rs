//! Moving to another pool, or off any (see "Moving to another pool" in
//! the parent module's docs, and `links.rs`).

use super::*;

/// Locks the pools of two links (either may be off a pool), in the order
/// of their addresses, so that two moves cannot deadlock.
pub(super) fn lock_pair<'a>(
    a: Option<&'a PoolLink>,
    b: Option<&'a PoolLink>,
) -> (Option<MutexGuard<'a, Inner>>, Option<MutexGuard<'a, Inner>>) {
    match (a, b) {
        (Some(a), Some(b)) if Arc::as_ptr(&a.pool) > Arc::as_ptr(&b.pool) => {
            let second = b.pool.lock();
            (Some(a.pool.lock()), Some(second))
        }
        _ => (a.map(|a| a.pool.lock()), b.map(|b| b.pool.lock())),
    }
}

impl Semaphore {
    /// Moves to `to` (`None`: off any pool), asking there for `reserved`
    /// slots under the ceiling `ceiling` (the limit in force); see "Moving
    /// to another pool" in the module docs. `member` is the bulkhead, as
    /// the pools know it. Call under the bulkhead's limits lock (which
    /// serialises moves and limit changes); the waiters served are in
    /// `deferred`, to wake once no lock is held.
    ///
    /// A move to a pool it has not been on since its field was mapped to
    /// another may first wait for a link to be quiet: for the releases that
    /// decremented the word before the last move to give their slots back
    /// (see `links.rs`), a matter of instructions.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn move_to(
        &self,
        member: Weak<dyn Member>,
        to: Option<&Arc<Pool>>,
        reserved: u32,
        ceiling: u32,
        clock: &Arc<dyn Clock>,
        now: Option<Instant>,
        deferred: &mut Deferred,
    ) {
        let ceiling = ceiling.min(MAX_CONCURRENT);
        let from_slot = link_of(self.state.load(Acquire));
        let to_slot = to.map_or(0, |pool| self.links.field_for(pool, from_slot));
        if to_slot == from_slot {
            return;
        }
        if to.is_some() {
            let _ = self.clock.set(Arc::clone(clock));
        }
        let (from, to) = (self.link(from_slot), self.link(to_slot));
        let (mut from_inner, mut to_inner) = lock_pair(from, to);
        let mut queue = lock(&self.queue);
        let granted = match (to, to_inner.as_mut()) {
            (Some(link), Some(inner)) => {
                self.ceiling.store(ceiling, Release);
                link.pool
                    .arrive(inner, member.clone(), reserved.min(ceiling))
            }
            _ => ceiling,
        };
        let mut state = self.state.load(Acquire);
        loop {
            // Counted by the new pool (and owed to it) before the word
            // names it: a release right after the swap gives back to it
            // lock-free.
            let lent = in_flight(state).saturating_sub(granted);
            if let (Some(link), Some(inner)) = (to, to_inner.as_deref()) {
                link.owe(lent);
                link.pool.lend(inner, lent);
            }
            let next = (state & !(LINK_MASK | MAX_MASK))
                | ((to_slot as u64) << LINK_SHIFT)
                | (u64::from(granted) << MAX_SHIFT);
            match self.state.compare_exchange(state, next, AcqRel, Acquire) {
                Ok(_) => break,
                Err(actual) => {
                    if let (Some(link), Some(inner)) = (to, to_inner.as_deref()) {
                        link.pool.unlend(inner, lent);
                        link.repay(lent);
                    }
                    state = actual;
                }
            }
        }
        // The calls in flight at the swap move with the bulkhead: releases
        // that came before it give their slots back to the old pool
        // themselves.
        let (in_flight, was_reserved) = (in_flight(state), max(state));
        if let (Some(link), Some(inner)) = (from, from_inner.as_mut()) {
            let refund = in_flight.saturating_sub(was_reserved);
            let address = member.as_ptr() as *const ();
            link.pool.depart(inner, address, was_reserved, refund);
            link.repay(refund);
        }
        if let Some(inner) = to_inner.as_mut() {
            queue.retick(|| inner.ticket());
        }
        self.grant_free(&mut queue, now, &mut deferred.wakes);
        self.queue_changed(&queue);
        drop(queue);
        for (link, inner) in [(from, from_inner.as_mut()), (to, to_inner.as_mut())] {
            if let (Some(link), Some(inner)) = (link, inner) {
                link.pool.serve(inner, now, deferred);
            }
        }
    }
}
