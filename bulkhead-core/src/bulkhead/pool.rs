//! # Implementation details
//!
//! The pool of a resource's budget that its bulkheads share: the slots
//! beyond their reservations, which any of them may borrow.
//!
//! ## The invariant
//!
//! For every bulkhead `b` on the pool, `reserved(b)` is the limit in its
//! state word (the reservation *in force*) and `excess(b) =
//! max(0, in_flight(b) - reserved(b))` the slots it holds beyond it. The
//! pool keeps
//!
//! ```text
//! sum(reserved) + cap = budget      (cap: the slots nobody reserved)
//! borrowed >= sum(excess)           (borrowed <= cap when taken)
//! ```
//!
//! so `sum(max(in_flight, reserved)) = sum(reserved) + sum(excess) <=
//! budget` at every instant, whatever the interleaving.
//!
//! ## The pool word
//!
//! ```text
//!  63                 32 31                   2   1          0
//! +---------------------+----------------------+----------+---------+
//! | cap                 | borrowed             | (unused) | WAITERS |
//! +---------------------+----------------------+----------+---------+
//! ```
//!
//! - *borrowed* is taken (one compare-exchange, below *cap*) before a
//!   bulkhead's own count goes past its reservation, and given back (one
//!   `fetch_sub`) after a release brought it down from past it: the pool
//!   count always covers the excess. A borrower that finds a reserved slot
//!   free after all takes that and gives the pool slot back.
//! - `WAITERS` is set exactly while some bulkhead of the pool has callers
//!   queued or a reservation waiting for room (set or cleared under the
//!   pool's lock). A newcomer that finds it set borrows only after the
//!   waiters a pool slot can serve were served; a release of a pool slot
//!   that finds it set serves them.
//!
//! ## Locks
//!
//! The pool's mutex orders every slow path of its bulkheads: queueing,
//! hand-offs, cancellation, limit changes. It is always taken before a
//! bulkhead's own queue lock, and never inside one. No waker runs and no
//! member is dropped under it: they are collected in [`Deferred`] and let
//! go after unlocking (a member's drop leaves the pool, which locks it).
//!
//! ## Order of service
//!
//! Each waiter carries a ticket from the pool's counter, in arrival order
//! across the resource. A pool slot that comes free goes first to a
//! reservation that is waiting for room (a raised `reserved`, a bulkhead
//! that joined a full pool), then to the waiter of the highest class with
//! the lowest ticket among the bulkheads below their ceiling (each
//! offering its first waiter its class's share admits). A slot released
//! below a bulkhead's reservation is its own and goes to its own waiters
//! first, by class too.
//!
//! ## Memory ordering
//!
//! As for the state word: taking a pool slot is `Acquire`, giving it back
//! `Release`; the mutex orders the rest.

use std::sync::{Arc, Weak};
use std::time::Instant;

use super::queue::Order;
use crate::clock::Wake;
use crate::loom::atomic::{AtomicU64, Ordering::*};
use crate::loom::{Mutex, MutexGuard, lock};
use crate::{Priority, ShedAt};

const WAITERS: u64 = 1;
const ONE: u64 = 1 << 2;
const BORROWED_MASK: u64 = ((1 << 30) - 1) << 2;
const CAP_SHIFT: u32 = 32;

#[inline(always)]
fn borrowed(word: u64) -> u32 {
    ((word & BORROWED_MASK) >> 2) as u32
}

#[inline(always)]
fn cap(word: u64) -> u32 {
    (word >> CAP_SHIFT) as u32
}

#[inline(always)]
fn room(word: u64) -> u32 {
    cap(word).saturating_sub(borrowed(word))
}

#[inline(always)]
fn with_cap(word: u64, cap: u32) -> u64 {
    (word & !(u64::from(u32::MAX) << CAP_SHIFT)) | (u64::from(cap) << CAP_SHIFT)
}

/// What the pool needs of a bulkhead on it (implemented by the bulkhead,
/// over its semaphore).
pub(crate) trait Member: Send + Sync {
    /// The reservation in force: the limit in the state word.
    fn reserved_in_force(&self) -> u32;
    /// Sets the limit in the state word to `to`, handing slots under a
    /// raised limit to the bulkhead's own waiters (into `deferred`).
    /// Returns the calls in flight at the change.
    fn set_reserved_in_force(&self, to: u32, now: Option<Instant>, deferred: &mut Deferred) -> u32;
    /// The place (class, then ticket) of the waiter a pool slot would go
    /// to, if the bulkhead has one its class's share admits and is below
    /// its ceiling: the pool serves the smallest, the highest class first.
    fn next_borrower(&self) -> Option<Order>;
    /// Gives a pool slot, just taken, to the next waiter whose deadline
    /// `now` has not reached. `None` if there was none; else whether the
    /// waiter got a reserved slot after all (the pool slot is then the
    /// caller's to give back).
    fn grant_borrowed(&self, now: Option<Instant>, deferred: &mut Deferred) -> Option<bool>;
    /// How many callers are queued.
    fn waiting(&self) -> u32;
    /// Counts `slots` more of the pool's as held by the bulkhead (before
    /// its state word counts them: see the semaphore's `links.rs`).
    fn owe(&self, slots: u32);
    /// Counts `slots` given back to the pool (after they were).
    fn repay(&self, slots: u32);
}

/// What a pass under the pool's lock leaves to do once it is unlocked.
#[derive(Default)]
pub(crate) struct Deferred {
    pub(crate) wakes: Vec<Wake>,
    members: Vec<Arc<dyn Member>>,
}

impl Deferred {
    /// Wakes the waiters served and lets go of the members (after
    /// unlocking).
    pub(crate) fn finish(self) {
        let Deferred { wakes, members } = self;
        drop(members);
        crate::clock::wake_all(wakes);
    }
}

struct Entry {
    member: Weak<dyn Member>,
    /// The reservation the bulkhead asks for; the one in force may be
    /// lower while the pool has no room for the rest.
    target: u32,
}

/// The bookkeeping behind the pool's lock.
pub(crate) struct Inner {
    entries: Vec<Entry>,
    next_ticket: u64,
    budget: u32,
    /// The sum of the reservations in force.
    reserved: u32,
}

impl Inner {
    /// A ticket for a waiter arriving now.
    pub(crate) fn ticket(&mut self) -> u64 {
        self.next_ticket += 1;
        self.next_ticket
    }
}

/// A resource's pool: its budget, shared by the bulkheads on it.
pub(crate) struct Pool {
    state: AtomicU64,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let word = self.state.load(Relaxed);
        f.debug_struct("Pool")
            .field("cap", &cap(word))
            .field("borrowed", &borrowed(word))
            .finish()
    }
}

impl Pool {
    pub(crate) fn new(budget: u32) -> Self {
        Pool {
            state: AtomicU64::new(with_cap(0, budget)),
            inner: Mutex::new(Inner {
                entries: Vec::new(),
                next_ticket: 0,
                budget,
                reserved: 0,
            }),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        lock(&self.inner)
    }

    /// Pool slots borrowed now.
    pub(crate) fn borrowed(&self) -> u32 {
        borrowed(self.state.load(Relaxed))
    }

    /// The unreserved slots not borrowed now.
    pub(crate) fn room(&self) -> u32 {
        room(self.state.load(Relaxed))
    }

    /// The slots nobody reserved.
    pub(crate) fn unreserved(&self) -> u32 {
        cap(self.state.load(Relaxed))
    }

    /// The unreserved slots not borrowed now and whether callers queue
    /// for them, from one load.
    pub(crate) fn reading(&self) -> (u32, bool) {
        let word = self.state.load(Acquire);
        (room(word), word & WAITERS != 0)
    }

    /// Whether callers of some bulkhead on the pool are queued.
    pub(crate) fn has_waiters(&self) -> bool {
        self.state.load(Relaxed) & WAITERS != 0
    }

    /// Takes a pool slot if one is free and nobody waits. Lock-free.
    #[inline]
    pub(crate) fn try_take(&self) -> bool {
        self.try_take_if(|_| true)
    }

    /// [`try_take`](Self::try_take) for a borrower of `class`: only while
    /// fewer than `max(1, floor(cap * share))` slots are lent, its class's
    /// share of the cap, read in the same load as what is lent.
    pub(crate) fn try_take_for(&self, shed_at: ShedAt, class: Priority) -> bool {
        self.try_take_if(|word| borrowed(word) < shed_at.threshold(class, cap(word)))
    }

    /// Takes a pool slot if one is free, nobody waits and `admits` the
    /// word the slot would be taken from. Lock-free.
    #[inline]
    fn try_take_if(&self, admits: impl Fn(u64) -> bool) -> bool {
        let mut word = self.state.load(Relaxed);
        while word & WAITERS == 0 && room(word) > 0 && admits(word) {
            match self
                .state
                .compare_exchange_weak(word, word + ONE, Acquire, Relaxed)
            {
                Ok(_) => return true,
                Err(actual) => word = actual,
            }
        }
        false
    }

    /// [`take_locked`](Self::take_locked) within the share of `class`, as
    /// [`try_take_for`](Self::try_take_for).
    pub(crate) fn take_locked_for(&self, inner: &Inner, shed_at: ShedAt, class: Priority) -> bool {
        self.take_locked_if(inner, |word| {
            borrowed(word) < shed_at.threshold(class, cap(word))
        })
    }

    /// Takes a pool slot if one is free, waiters or not (under the lock,
    /// once the waiters a slot could serve were served).
    pub(crate) fn take_locked(&self, inner: &Inner) -> bool {
        self.take_locked_if(inner, |_| true)
    }

    /// Takes a pool slot if one is free and `admits` the word it would be
    /// taken from, waiters or not (under the lock).
    fn take_locked_if(&self, _inner: &Inner, admits: impl Fn(u64) -> bool) -> bool {
        let mut word = self.state.load(Acquire);
        while room(word) > 0 && admits(word) {
            match self
                .state
                .compare_exchange(word, word + ONE, AcqRel, Acquire)
            {
                Ok(_) => return true,
                Err(actual) => word = actual,
            }
        }
        false
    }

    /// Sets `WAITERS` if no pool slot is free; else leaves the word as it
    /// is. Returns whether it was set (under the lock: a waiter about to
    /// queue for a pool slot).
    pub(crate) fn close_if_full(&self, _inner: &Inner) -> bool {
        let mut word = self.state.load(Acquire);
        loop {
            if room(word) > 0 {
                return false;
            }
            match self
                .state
                .compare_exchange(word, word | WAITERS, AcqRel, Acquire)
            {
                Ok(_) => return true,
                Err(actual) => word = actual,
            }
        }
    }

    /// Gives one pool slot back. Returns whether callers were waiting (the
    /// caller then serves them, under the lock).
    #[inline]
    pub(crate) fn give_back(&self) -> bool {
        self.state.fetch_sub(ONE, Release) & WAITERS != 0
    }

    /// Sets or clears `WAITERS` as the members' queues and reservations
    /// say. Call under the lock after any change of either. Returns whether
    /// it set the flag where it was clear: a pool slot given back just
    /// before found no flag and served nobody (see [`serve`](Self::serve)).
    pub(crate) fn refresh_waiters(&self, inner: &Inner, deferred: &mut Deferred) -> bool {
        let waiting = inner.entries.iter().any(|entry| {
            entry.member.upgrade().is_some_and(|member| {
                let waiting = member.waiting() > 0 || entry.target > member.reserved_in_force();
                deferred.members.push(member);
                waiting
            })
        });
        if waiting {
            self.state.fetch_or(WAITERS, AcqRel) & WAITERS == 0
        } else {
            self.state.fetch_and(!WAITERS, AcqRel);
            false
        }
    }

    /// Adds `member`, asking for `reserved` slots: in force at once as far
    /// as the pool has room, the rest as room comes free.
    pub(crate) fn join(&self, member: Weak<dyn Member>, reserved: u32, now: Option<Instant>) {
        let mut inner = self.lock();
        inner.entries.push(Entry {
            member,
            target: reserved,
        });
        let mut deferred = Deferred::default();
        self.serve(&mut inner, now, &mut deferred);
        drop(inner);
        deferred.finish();
    }

    /// Removes the member at `member` (its address), which holds no slot
    /// any more: its reservation goes back to the pool.
    pub(crate) fn leave(&self, member: *const ()) {
        let mut inner = self.lock();
        let Some(index) = inner
            .entries
            .iter()
            .position(|entry| entry.member.as_ptr() as *const () == member)
        else {
            return;
        };
        inner.entries.swap_remove(index);
        // The member is being dropped: its reservation in force is what
        // the others' leave over.
        let others: u32 = inner
            .entries
            .iter()
            .filter_map(|entry| entry.member.upgrade())
            .map(|m| m.reserved_in_force())
            .sum();
        inner.reserved = others;
        let cap = inner.budget.saturating_sub(others);
        self.update(|word| with_cap(word, cap));
        let mut deferred = Deferred::default();
        self.serve(&mut inner, None, &mut deferred);
        drop(inner);
        deferred.finish();
    }

    /// A bulkhead moving here (see the semaphore's "Moving to another
    /// pool"), asking for `target` slots: adds its entry and takes for it
    /// what room there is, up to `target`. Returns the reservation in force
    /// it gets; the rest comes as room does. Under the lock.
    pub(crate) fn arrive(&self, inner: &mut Inner, member: Weak<dyn Member>, target: u32) -> u32 {
        inner.entries.push(Entry { member, target });
        let mut taken = 0;
        self.update(|word| {
            taken = room(word).min(target);
            with_cap(word, cap(word) - taken)
        });
        inner.reserved += taken;
        taken
    }

    /// Counts `slots` more as borrowed: the calls in flight of a bulkhead
    /// that moved here, past its reservation (past the cap if need be:
    /// nobody borrows until they have finished). Under the lock.
    pub(crate) fn lend(&self, _inner: &Inner, slots: u32) {
        self.state.fetch_add(u64::from(slots) * ONE, AcqRel);
    }

    /// Takes back `slots` counted by [`lend`](Self::lend) (a move whose
    /// swap failed and is tried again). Under the lock.
    pub(crate) fn unlend(&self, _inner: &Inner, slots: u32) {
        self.state.fetch_sub(u64::from(slots) * ONE, Release);
    }

    /// The bulkhead at `member` (its address) moved away, its reservation
    /// in force `reserved` and `refund` of its calls past it: its entry
    /// goes, and so does what it held (its calls in flight are counted by
    /// its new pool). Under the lock.
    pub(crate) fn depart(&self, inner: &mut Inner, member: *const (), reserved: u32, refund: u32) {
        if let Some(index) = inner
            .entries
            .iter()
            .position(|entry| entry.member.as_ptr() as *const () == member)
        {
            inner.entries.swap_remove(index);
        }
        inner.reserved = inner.reserved.saturating_sub(reserved);
        let cap = inner.budget.saturating_sub(inner.reserved);
        self.update(|word| with_cap(word, cap) - u64::from(refund) * ONE);
    }

    /// Changes the budget: the unreserved slots follow. Lowering it below
    /// what is borrowed lets the borrowed calls finish; nobody borrows
    /// until they have.
    pub(crate) fn set_budget(&self, budget: u32, now: Option<Instant>) {
        let mut inner = self.lock();
        inner.budget = budget;
        let cap = budget.saturating_sub(inner.reserved);
        self.update(|word| with_cap(word, cap));
        let mut deferred = Deferred::default();
        self.serve(&mut inner, now, &mut deferred);
        drop(inner);
        deferred.finish();
    }

    pub(crate) fn budget(&self) -> u32 {
        self.lock().budget
    }

    /// Sets the reservation `member` asks for to `target`, under the lock
    /// (the member calls it from its own limit changes). A lower one takes
    /// effect at once; a higher one as far as there is room once the
    /// caller [`serve`](Self::serve)s the pool, the rest as pool slots come
    /// back.
    pub(crate) fn retarget(
        &self,
        inner: &mut Inner,
        member: &dyn Member,
        target: u32,
        now: Option<Instant>,
        deferred: &mut Deferred,
    ) {
        let address = member as *const dyn Member as *const ();
        let Some(entry) = inner
            .entries
            .iter_mut()
            .find(|entry| entry.member.as_ptr() as *const () == address)
        else {
            return;
        };
        entry.target = target;
        let current = member.reserved_in_force();
        if target < current {
            self.lower(inner, member, current, target, now, deferred);
        }
    }

    /// Lowers `member`'s reservation in force from `from` to `to`.
    fn lower(
        &self,
        inner: &mut Inner,
        member: &dyn Member,
        from: u32,
        to: u32,
        now: Option<Instant>,
        deferred: &mut Deferred,
    ) {
        let freed = from - to;
        inner.reserved -= freed;
        let cap = inner.budget.saturating_sub(inner.reserved);
        // Count every freed slot as borrowed first, with the cap that
        // includes them: the calls in flight beyond the new reservation
        // are covered from the moment the limit drops.
        member.owe(freed);
        self.update(|word| with_cap(word, cap) + u64::from(freed) * ONE);
        let in_flight = member.set_reserved_in_force(to, now, deferred);
        let covered = excess(in_flight, to) - excess(in_flight, from);
        self.state
            .fetch_sub(u64::from(freed - covered) * ONE, Release);
        member.repay(freed - covered);
    }

    /// Raises `member`'s reservation in force from `from` by up to `by`,
    /// as far as the pool has room; returns by how much.
    fn raise(
        &self,
        inner: &mut Inner,
        member: &dyn Member,
        from: u32,
        by: u32,
        now: Option<Instant>,
        deferred: &mut Deferred,
    ) -> u32 {
        let mut taken = 0;
        self.update(|word| {
            taken = room(word).min(by);
            with_cap(word, cap(word) - taken)
        });
        if taken == 0 {
            return 0;
        }
        inner.reserved += taken;
        let to = from + taken;
        let in_flight = member.set_reserved_in_force(to, now, deferred);
        // The calls in flight past the old reservation and within the new
        // one no longer borrow.
        let returned = excess(in_flight, from) - excess(in_flight, to);
        self.state.fetch_sub(u64::from(returned) * ONE, Release);
        member.repay(returned);
        taken
    }

    /// Hands the room there is to the reservations waiting for it, then to
    /// the waiters below their ceiling, oldest first; refreshes `WAITERS`.
    ///
    /// A pool slot given back (lock-free) after the passes found no room
    /// and before `WAITERS` was set would serve nobody: its release saw no
    /// flag. So when the flag goes from clear to set, the passes run again
    /// on the room there is then; from the flag on, every slot given back
    /// serves the waiters itself.
    pub(crate) fn serve(&self, inner: &mut Inner, now: Option<Instant>, deferred: &mut Deferred) {
        loop {
            self.serve_once(inner, now, deferred);
            let newly_set = self.refresh_waiters(inner, deferred);
            if !newly_set || room(self.state.load(Acquire)) == 0 {
                return;
            }
        }
    }

    /// One pass of [`serve`](Self::serve), without the flag.
    fn serve_once(&self, inner: &mut Inner, now: Option<Instant>, deferred: &mut Deferred) {
        for index in 0..inner.entries.len() {
            if room(self.state.load(Acquire)) == 0 {
                break;
            }
            let Some(member) = inner.entries[index].member.upgrade() else {
                continue;
            };
            let (target, current) = (inner.entries[index].target, member.reserved_in_force());
            if target > current {
                self.raise(inner, &*member, current, target - current, now, deferred);
            }
            deferred.members.push(member);
        }
        loop {
            if room(self.state.load(Acquire)) == 0 {
                break;
            }
            let next = inner
                .entries
                .iter()
                .filter_map(|entry| {
                    let member = entry.member.upgrade()?;
                    let order = member.next_borrower();
                    deferred.members.push(Arc::clone(&member));
                    Some((order?, member))
                })
                .min_by_key(|(order, _)| *order);
            let Some((_, member)) = next else {
                break;
            };
            if !self.take_locked(inner) {
                break;
            }
            member.owe(1);
            match member.grant_borrowed(now, deferred) {
                Some(false) => {}
                Some(true) | None => {
                    self.state.fetch_sub(ONE, Release);
                    member.repay(1);
                }
            }
            deferred.members.push(member);
        }
    }

    /// Replaces the word with `change` of it, atomically.
    fn update(&self, mut change: impl FnMut(u64) -> u64) {
        let mut word = self.state.load(Acquire);
        loop {
            match self
                .state
                .compare_exchange(word, change(word), AcqRel, Acquire)
            {
                Ok(_) => return,
                Err(actual) => word = actual,
            }
        }
    }
}

fn excess(in_flight: u32, reserved: u32) -> u32 {
    in_flight.saturating_sub(reserved)
}
