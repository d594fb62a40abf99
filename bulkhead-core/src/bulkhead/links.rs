//! # Implementation details
//!
//! The pools a semaphore has been on, and which of them each value of the
//! *link* field of its state word names.
//!
//! ## Why the word names a link
//!
//! A release of a borrowed slot gives a slot back to the pool that lent
//! it, lock-free, after its `fetch_sub` on the word. A move to another
//! pool may come between the two: the pool in force at the `fetch_sub` is
//! the one the value it replaced names (see the semaphore's "Moving to
//! another pool"). The field has 2 bits: 0 for no pool, and three
//! *fields* 1 to 3, each mapped to a [`PoolLink`].
//!
//! ## Any number of moves
//!
//! A move to a pool the semaphore was on reuses its link, and the field
//! mapped to it if one still is. A move to another pool maps a field to
//! that pool's link: a free field, else one the word does not name whose
//! link is *quiet*, that is owes nothing. A link's `owed` counts
//!
//! - the slots of its pool the semaphore holds past its reservation there
//!   (while it is in force) and the releases of such slots that have not
//!   given theirs back yet (after a move away: those whose `fetch_sub`
//!   came before the move's swap; the move gives back the rest);
//! - the borrowers that read the field and work on its link (*pins*).
//!
//! Every change of what a semaphore borrows from a pool counts in `owed`
//! before the slot it concerns can be given back, and is taken off after
//! the give-back (and its serve) are done; so while `owed` is 0 nothing
//! will use the link through a field any more, and the field can be
//! mapped to another link. A move waits for one of the two fields it may
//! take to be quiet: the releases it waits for had already decremented
//! the word, and pinned borrowers give up at once once they see the
//! field is no longer in force.
//!
//! A borrower pins the link of the field it read, then checks with a
//! read-modify-write of the word (which reads its latest value) that the
//! word names the field and that the field is still mapped to the link.
//! If the word named it then, its read-modify-write comes before any
//! later move's swap in the word's order, so that move (and the next
//! mapping of the field, under the same lock) sees the pin. If the word
//! names it again after a new mapping, the borrower sees the new link.
//!
//! ## Memory
//!
//! Links are never freed while the semaphore lives, so references to them
//! stay valid (no lock, no reference count on the paths that borrow); a
//! move back reuses a pool's link, so there is one per distinct pool the
//! bulkhead has been on (a registry's resources, a bounded set), not one
//! per move.
//!
//! ## Memory ordering
//!
//! A field's mapping is stored with `Release` before the word names the
//! field (the move's swap, `AcqRel`), and read with `Acquire` after the
//! word: whoever sees the word name a field sees its link. `owed` is
//! ordered by the word's read-modify-writes (pins) and by the locks (the
//! pool-side changes, the move).

use std::sync::Arc;

use super::pool::Pool;
use crate::loom::OnceLock;
use crate::loom::atomic::{AtomicU32, Ordering::*};
use crate::loom::thread;

/// The side of a pool a semaphore that has been on it keeps.
#[derive(Debug)]
pub(crate) struct PoolLink {
    pub(crate) pool: Arc<Pool>,
    /// Slots of `pool` owed back, and pins (see the module docs).
    owed: AtomicU32,
}

impl PoolLink {
    fn new(pool: Arc<Pool>) -> Self {
        PoolLink {
            pool,
            owed: AtomicU32::new(0),
        }
    }

    /// Counts `slots` more owed to the pool (or a pin).
    pub(crate) fn owe(&self, slots: u32) {
        if slots > 0 {
            self.owed.fetch_add(slots, Relaxed);
        }
    }

    /// Counts `slots` given back (or a pin let go), once everything done
    /// with the link for them is done.
    pub(crate) fn repay(&self, slots: u32) {
        if slots > 0 {
            self.owed.fetch_sub(slots, Release);
        }
    }

    /// Nothing owed, no pin: its field may be mapped to another link.
    fn is_quiet(&self) -> bool {
        self.owed.load(Acquire) == 0
    }
}

/// How many links a chunk of [`Known`] holds.
const CHUNK: usize = 4;

/// The links, in the order the pools were first joined; append-only.
#[derive(Debug, Default)]
struct Known {
    links: [OnceLock<PoolLink>; CHUNK],
    more: OnceLock<Box<Known>>,
}

impl Known {
    fn get(&self, index: usize) -> Option<&PoolLink> {
        match self.links.get(index) {
            Some(link) => link.get(),
            None => self.more.get()?.get(index - CHUNK),
        }
    }

    /// The index of `pool`'s link, added if new. Called by one thread at a
    /// time (under the bulkhead's limits lock).
    fn index_of(&self, pool: &Arc<Pool>) -> usize {
        let mut index = 0;
        let mut chunk = self;
        loop {
            for link in &chunk.links {
                match link.get() {
                    Some(link) if Arc::ptr_eq(&link.pool, pool) => return index,
                    Some(_) => index += 1,
                    None => {
                        // The one writer: the slot is still empty.
                        let _ = link.set(PoolLink::new(Arc::clone(pool)));
                        return index;
                    }
                }
            }
            if chunk.more.get().is_none() {
                let _ = chunk.more.set(Box::default());
            }
            chunk = chunk.more.get().expect("set just above");
        }
    }
}

/// A semaphore's links and the mapping of its word's link field.
#[derive(Debug, Default)]
pub(crate) struct Links {
    /// The link each field 1 to 3 names, as an index into `known` plus
    /// one (0: not mapped yet).
    fields: [AtomicU32; 3],
    known: Known,
}

impl Links {
    /// Links with `pool` mapped to field 1.
    pub(crate) fn on(pool: &Arc<Pool>) -> Self {
        let links = Links::default();
        let index = links.known.index_of(pool);
        links.fields[0].store(index as u32 + 1, Release);
        links
    }

    /// The link field `field` names (0: none).
    #[inline]
    pub(crate) fn get(&self, field: usize) -> Option<&PoolLink> {
        let mapped = self.fields.get(field.checked_sub(1)?)?.load(Acquire);
        self.known.get(mapped.checked_sub(1)? as usize)
    }

    /// Whether field `field` still names `link` (after the word named the
    /// field: see the module docs).
    pub(crate) fn names(&self, field: usize, link: &PoolLink) -> bool {
        self.get(field)
            .is_some_and(|named| std::ptr::eq(named, link))
    }

    /// The field to name `pool`'s link by, for a move from field `from`
    /// (0: off a pool): the field already mapped to it, else a free one,
    /// else one of the others once its link is quiet (waiting for that:
    /// see the module docs). Called under the bulkhead's limits lock,
    /// which serialises moves; the mapping is stored before the caller's
    /// swap names the field.
    pub(crate) fn field_for(&self, pool: &Arc<Pool>, from: usize) -> usize {
        let index = self.known.index_of(pool) as u32 + 1;
        let fields = 1..=self.fields.len();
        let mapped = |field: usize| self.fields[field - 1].load(Acquire);
        if let Some(field) = fields.clone().find(|&f| mapped(f) == index) {
            return field;
        }
        if let Some(field) = fields.clone().find(|&f| mapped(f) == 0) {
            self.fields[field - 1].store(index, Release);
            return field;
        }
        // The fields after `from` in turn: the one mapped longest ago
        // first, which has given its releases the most time. Off a pool
        // (`from` 0), any of the three.
        let others = [from % 3 + 1, (from + 1) % 3 + 1, (from + 2) % 3 + 1];
        let others = &others[..if from == 0 { 3 } else { 2 }];
        loop {
            let quiet = others
                .iter()
                .copied()
                .find(|&field| self.get(field).is_some_and(PoolLink::is_quiet));
            if let Some(field) = quiet {
                self.fields[field - 1].store(index, Release);
                return field;
            }
            // Releases that decremented the word before the last move
            // are giving their slots back, or borrowers are about to see
            // the move: a matter of a few instructions.
            thread::yield_now();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn pools(n: usize) -> Vec<Arc<Pool>> {
        (0..n).map(|_| Arc::new(Pool::new(2))).collect()
    }

    /// The pool of the link field `field` names.
    fn pool_of(links: &Links, field: usize) -> &Arc<Pool> {
        &links.get(field).expect("mapped").pool
    }

    #[test]
    fn a_pool_keeps_its_link_and_its_field_while_mapped() {
        let pools = pools(3);
        let links = Links::on(&pools[0]);
        assert_eq!(links.field_for(&pools[1], 1), 2);
        assert_eq!(links.field_for(&pools[2], 2), 3);
        // Back and forth: the same fields, the same links.
        let first = links.get(1).unwrap() as *const PoolLink;
        assert_eq!(links.field_for(&pools[0], 3), 1);
        assert!(std::ptr::eq(links.get(1).unwrap(), first));
        assert_eq!(links.field_for(&pools[2], 1), 3);
    }

    #[test]
    fn a_field_whose_link_is_owed_is_never_mapped_again_until_repaid() {
        let pools = pools(7);
        let links = Links::on(&pools[0]);
        assert_eq!(links.field_for(&pools[1], 1), 2);
        assert_eq!(links.field_for(&pools[2], 2), 3);
        // A release still giving back to pools[2] after the move away.
        links.get(3).unwrap().owe(1);
        // The field mapped longest ago goes first, the owed one never.
        assert_eq!(links.field_for(&pools[3], 3), 1);
        assert_eq!(links.field_for(&pools[4], 1), 2);
        assert_eq!(links.field_for(&pools[5], 2), 1, "field 3 is owed");
        assert!(Arc::ptr_eq(pool_of(&links, 3), &pools[2]));
        // Both others owed as well: the move waits for one to be repaid.
        links.get(2).unwrap().owe(1);
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(std::time::Duration::from_millis(20));
                links.get(3).unwrap().repay(1);
            });
            assert_eq!(links.field_for(&pools[6], 1), 3, "repaid: mapped again");
        });
        assert!(Arc::ptr_eq(pool_of(&links, 3), &pools[6]));
        assert!(Arc::ptr_eq(pool_of(&links, 2), &pools[4]));
        // A pool known before comes back to its own link.
        links.get(2).unwrap().repay(1);
        let field = links.field_for(&pools[2], 3);
        assert!(Arc::ptr_eq(pool_of(&links, field), &pools[2]));
    }

    #[test]
    fn off_a_pool_every_quiet_field_may_be_mapped_again() {
        let pools = pools(4);
        let links = Links::on(&pools[0]);
        assert_eq!(links.field_for(&pools[1], 1), 2);
        assert_eq!(links.field_for(&pools[2], 2), 3);
        links.get(1).unwrap().owe(1);
        links.get(2).unwrap().owe(1);
        // Moved off every pool meanwhile (`from` 0): field 3 is named by
        // nobody and owes nothing.
        assert_eq!(links.field_for(&pools[3], 0), 3);
        assert!(Arc::ptr_eq(pool_of(&links, 3), &pools[3]));
    }

    #[test]
    fn links_are_kept_per_pool_not_per_move() {
        let pools = pools(9);
        let links = Links::on(&pools[0]);
        let mut from = 1;
        for round in 0..5 {
            for pool in &pools {
                from = links.field_for(pool, from);
                assert!(Arc::ptr_eq(pool_of(&links, from), pool), "round {round}");
            }
        }
        assert!(links.known.get(pools.len() - 1).is_some());
        assert!(links.known.get(pools.len()).is_none(), "one link per pool");
    }
}
