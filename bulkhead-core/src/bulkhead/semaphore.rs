//! # Implementation details
//!
//! The slot accounting of a bulkhead: one 64-bit atomic word and, for the
//! callers that have to wait, a mutex-protected [`WaitQueue`].
//!
//! ## The state word
//!
//! ```text
//!  63               34 33   32 31                   2   1          0
//! +-------------------+-------+----------------------+----------+---------+
//! | max (limit)       | link  | in flight            | DISABLED | WAITERS |
//! +-------------------+-------+----------------------+----------+---------+
//! ```
//!
//! - *in flight* counts the slots held, including slots handed to a waiter
//!   that has not picked its slot up yet.
//! - *max* is the limit; it lives in the same word so that one load decides a
//!   rejection, and so that [`Semaphore::set_max`] is atomic with respect to
//!   every admission.
//! - `DISABLED` makes every acquisition succeed uncounted.
//! - *link* says which pool the bulkhead is on (0: none; see "Moving to
//!   another pool" below), so that a release knows, from the value its
//!   `fetch_sub` replaced, which pool a borrowed slot goes back to.
//! - `WAITERS` is set exactly while the wait queue is non-empty. It is only
//!   set or cleared with the queue's mutex held. While it is set, the
//!   lock-free acquire treats the bulkhead as full: every slot that comes
//!   free belongs to the queue.
//!
//! ## Fast paths
//!
//! - *Acquire*: load; if neither `WAITERS` nor `in_flight >= max`, one
//!   compare-exchange adding one. A rejection is the load alone.
//! - *Release*: one `fetch_sub`. If the value it replaced had `WAITERS`
//!   set, the releaser then reads the clock, takes the mutex and hands the
//!   slot it just freed to the next waiter whose deadline that reading has
//!   not reached (taking it back into *in flight* for the waiter), so a
//!   queued waiter never loses a slot to a lock-free newcomer: newcomers see
//!   `WAITERS` (or no free slot) and queue behind it.
//!
//! ## Bounded barging
//!
//! A blocked thread handed a slot is *offered* it (see the queue's docs):
//! the slot is counted in flight for it as for any hand-off, but until its
//! thread has woken up and taken it, a sync caller that is about to queue
//! (under the mutex, in [`Semaphore::enqueue`]) may take it instead, and
//! the waiter goes back to the head of its list. Without this, every
//! hand-off to a parked thread leaves the slot idle for the time it takes
//! to schedule that thread, while the releasing thread, about to call
//! again, queues behind it: a convoy, which caps a saturated bulkhead's
//! throughput at one wake-up latency per call. The waiter loses at most
//! `barging` offers in a row (then it is granted its slot outright) and
//! none once its deadline has passed; tasks are always granted (rule B6),
//! and callers that do not wait never take an offered slot (their path
//! takes no lock). In-flight accounting is unchanged: an offered slot moves
//! from the waiter to the newcomer without ever being free.
//!
//! ## Deadlines
//!
//! Every waiter is queued with its deadline. A hand-off (a release, a
//! cancelled waiter passing its slot on, a raised limit) passes over the
//! waiters whose deadline has passed: they are unlinked and marked expired,
//! hold nothing, and leave when their own timer wakes them. So an expired
//! waiter is never handed a slot, and a slot it would have got goes to the
//! next waiter in line or, if none is left, back to newcomers.
//!
//! ## Locks and wakers
//!
//! No waker is woken or dropped, and no clock is read, while the mutex is
//! held: the queue hands every waker it gives up back to its caller, which
//! lets go of it after unlocking. A waker's drop may run arbitrary code,
//! including releasing a slot of this bulkhead, which takes the mutex
//! (tokio's issue 5429).
//!
//! ## Panics
//!
//! A clock read by a hand-off happens after the slot is free: if it panics,
//! the slot is still handed over (as if no deadline had passed) before the
//! panic goes on, and not at all if the hand-off runs while the thread
//! already unwinds (a blocked waiter withdrawn because the clock panicked
//! passes its slot on that way). Waking several waiters at once, every one
//! is woken even if one of their wakers panics.
//!
//! ## Why no wake-up is lost
//!
//! A caller that finds no free slot takes the mutex and, in one
//! compare-exchange on the whole word, either takes a slot that came free or
//! sets `WAITERS` while `in_flight >= max`. Every release that frees a slot
//! after that sees `WAITERS` in the value its `fetch_sub` replaced, and so
//! makes a pass under the mutex that hands one free slot to the oldest
//! waiter, if any is left (an offered slot taken by a newcomer was never
//! free: the waiter it was offered to is queued again, `WAITERS` set). A slot freed while `WAITERS` is set stays free
//! only until that pass: no newcomer can take it, and a waiter that gives up
//! in between clears `WAITERS` when the queue empties, which frees the slot
//! for newcomers again.
//!
//! ## On a pool
//!
//! A bulkhead on a resource's pool (see `pool.rs`) keeps its reservation
//! as the limit in its word, so a call within it takes the fast path
//! above unchanged. Past it, up to its ceiling (`max_concurrent` in
//! force, beside the word), a call borrows: it takes a pool slot first,
//! then adds itself to the word past the limit; if a reserved slot came
//! free meanwhile it takes that and gives the pool slot back. A release
//! whose `fetch_sub` found the count past the limit gives a pool slot
//! back. Every slow path of a pooled bulkhead (queueing, hand-offs,
//! withdrawals, limit changes) runs under the pool's lock, then its own.
//!
//! The reservation in the word never exceeds the ceiling, at any instant:
//! a limit change lowers the reservation before the ceiling, and raises
//! the ceiling before the reservation grows into it (the ceiling is
//! stored with `Release` and read with `Acquire`, so whoever sees a
//! lowered ceiling sees the lowered reservation). The other order let a
//! call within the old reservation in for a moment after the new limit
//! was in force. A lock-free borrower checks the ceiling before its
//! compare-exchange on the word, which the ceiling is not part of: it
//! checks again after it (`recheck_ceiling`, a `SeqCst` fence paired with
//! the change's), and gives the slot back if a lowered ceiling came in
//! between, so that no borrower is admitted past a limit that was in
//! force before it was. A reading of the slots for a snapshot
//! ([`Semaphore::reading`]) takes the pool's lock and the queue's, under
//! which neither limit moves, and reads the calls in flight in the same
//! load of the word as the reservation.
//!
//! ## Moving to another pool
//!
//! A registry's reload can move a live bulkhead to another resource, or off
//! any (`Bulkhead::move_to_pool` does the same by hand), any number of
//! times. The *link* field of the word names the pool in force through one
//! of three fields, 0 for none (`links.rs`: which pool each field names,
//! and when a field may be mapped to another pool). A move (under the
//! locks of both pools, then the queue's) swaps the field and the limit in
//! the word in one compare-exchange, reading the calls in flight `n` it
//! replaced: the old pool gets back the `n - reserved` slots it lent
//! beyond the old reservation, the new one counts the `n` past the new
//! reservation as borrowed (past its cap if need be: nobody borrows there
//! until they have finished, as after a lowered budget). A release whose
//! `fetch_sub` came before the swap gives its slot back to the pool its
//! own replaced value names, which the move's `n` did not count: every
//! lent slot goes back to the pool that lent it exactly once (the field
//! it names is not mapped to another pool until it has). A borrower
//! holding a slot of the old pool finds the word's link changed, gives the
//! slot back there, and tries again.
//!
//! ## Memory ordering
//!
//! A successful acquire is `Acquire` and a release `Release`: the work done
//! under a slot happens-before the work of whoever takes the slot next. Under
//! the mutex, read-modify-writes use `AcqRel`; the mutex orders everything
//! else.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::{Arc, Weak};
use std::task::Context;
use std::time::Instant;

use super::links::{Links, PoolLink};
use super::pool::{Deferred, Inner, Member, Pool};
use super::queue::{Kind, Status, WaitQueue, WaiterKey};
use crate::clock::{Clock, Wake};
use crate::loom::atomic::{AtomicU32, AtomicU64, Ordering::*, fence};
use crate::loom::{Mutex, MutexGuard, OnceLock, lock, thread};

const WAITERS: u64 = 1;
const DISABLED: u64 = 1 << 1;
const IN_FLIGHT_SHIFT: u32 = 2;
const ONE: u64 = 1 << IN_FLIGHT_SHIFT;
const IN_FLIGHT_MASK: u64 = (MAX_CONCURRENT as u64) << IN_FLIGHT_SHIFT;
const LINK_SHIFT: u32 = 32;
const LINK_MASK: u64 = 3 << LINK_SHIFT;
const MAX_SHIFT: u32 = 34;
const MAX_MASK: u64 = (MAX_CONCURRENT as u64) << MAX_SHIFT;

/// The largest supported `max_concurrent`: 2^30 - 1.
pub(super) const MAX_CONCURRENT: u32 = (1 << 30) - 1;

#[inline(always)]
fn in_flight(state: u64) -> u32 {
    ((state & IN_FLIGHT_MASK) >> IN_FLIGHT_SHIFT) as u32
}

#[inline(always)]
fn max(state: u64) -> u32 {
    (state >> MAX_SHIFT) as u32
}

/// The link slot in force: 0 off a pool, else 1 to 3.
#[inline(always)]
fn link_of(state: u64) -> usize {
    ((state & LINK_MASK) >> LINK_SHIFT) as usize
}

#[inline(always)]
fn is_full(state: u64) -> bool {
    in_flight(state) >= max(state)
}

/// No slot for a newcomer: all taken, or the free ones belong to the queue.
#[inline(always)]
fn is_closed(state: u64) -> bool {
    state & WAITERS != 0 || is_full(state)
}

/// The outcome of trying to take a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Acquired {
    /// A slot was taken and must be released.
    Slot,
    /// The bulkhead is disabled: go ahead, nothing to release.
    Uncounted,
    /// No free slot.
    Full,
}

/// What a release found: the slots held and the limit just before it gave
/// its slot back (its own slot counted), read from the value its
/// `fetch_sub` replaced, at no further cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Released {
    /// Slots held before the release, the released one included (on a
    /// pool, borrowed ones too).
    pub(crate) in_flight: u32,
    /// The limit of the state word at the time: on a pool, the
    /// reservation in force (see [`Semaphore::limit`] for the limit).
    pub(crate) max: u32,
}

/// What [`Semaphore::reading`] found, at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Reading {
    pub(crate) in_flight: u32,
    pub(crate) waiting: u32,
    /// The limit in force (on a pool, the ceiling).
    pub(crate) limit: u32,
    pub(crate) available: u32,
    /// The reservation in force (off a pool, the limit).
    pub(crate) reserved: u32,
    pub(crate) borrowed: u32,
}

/// The outcome of queueing.
#[derive(Debug)]
pub(crate) enum Enqueued {
    /// No need to wait after all.
    Done(Acquired),
    Queued(WaiterKey),
}

#[derive(Debug)]
pub(crate) struct Semaphore {
    state: AtomicU64,
    /// Copy of the queue's length, for monitoring without the mutex.
    waiting: AtomicU32,
    queue: Mutex<WaitQueue>,
    /// The pools it has been on and which one the word's *link* field
    /// names (see `links.rs`).
    links: Links,
    /// On a pool, the limit in force (`max_concurrent`): no borrowing at
    /// or above it.
    ceiling: AtomicU32,
    /// The clock of hand-offs on a pool, set when it first joins one.
    clock: OnceLock<Arc<dyn Clock>>,
}

/// Reads `clock` for a hand-off whose slot is already free: `None` and the
/// panic, to raise once the slot is handed on, if the clock panics.
fn read_catching(clock: &dyn Clock) -> (Option<Instant>, Option<Box<dyn std::any::Any + Send>>) {
    match catch_unwind(AssertUnwindSafe(|| clock.now())) {
        Ok(now) => (Some(now), None),
        Err(panic) => (None, Some(panic)),
    }
}

/// Locks the pools of two links (either may be off a pool), in the order
/// of their addresses, so that two moves cannot deadlock.
fn lock_pair<'a>(
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

/// The link in force and its pool's lock, if on a pool.
type Locked<'a> = Option<(&'a PoolLink, MutexGuard<'a, Inner>)>;

/// What a borrower found once it held a pool slot.
enum Claim {
    /// A slot past the reservation, `.0` calls in flight before it: the
    /// pool slot is in use.
    Borrowed(u32),
    /// A reserved slot came free: taken, the pool slot is to give back.
    Reserved,
    /// No slot for it (the ceiling, or waiters): the pool slot is to give
    /// back.
    Refused,
    /// The bulkhead moved to another pool: the slot is to give back, and
    /// the call to try again there.
    Moved,
}

impl Semaphore {
    pub(crate) fn new(max: u32, enabled: bool) -> Self {
        let max = max.min(MAX_CONCURRENT);
        let disabled = if enabled { 0 } else { DISABLED };
        Semaphore {
            state: AtomicU64::new(((max as u64) << MAX_SHIFT) | disabled),
            waiting: AtomicU32::new(0),
            queue: Mutex::new(WaitQueue::new()),
            links: Links::default(),
            ceiling: AtomicU32::new(0),
            clock: OnceLock::default(),
        }
    }

    /// A semaphore on `pool`, its ceiling `ceiling`, no slot reserved yet
    /// (joining the pool sets the reservation).
    pub(crate) fn pooled(ceiling: u32, pool: Arc<Pool>, clock: Arc<dyn Clock>) -> Self {
        let semaphore = Semaphore {
            state: AtomicU64::new(1 << LINK_SHIFT),
            waiting: AtomicU32::new(0),
            queue: Mutex::new(WaitQueue::new()),
            links: Links::on(&pool),
            ceiling: AtomicU32::new(ceiling.min(MAX_CONCURRENT)),
            clock: OnceLock::default(),
        };
        let _ = semaphore.clock.set(clock);
        semaphore
    }

    /// The link named by the link field `slot` of a state word (read
    /// after the word: see `links.rs`).
    #[inline]
    fn link(&self, slot: usize) -> Option<&PoolLink> {
        self.links.get(slot)
    }

    /// The link in force (as the word names it now: a move may follow).
    fn current(&self) -> Option<&PoolLink> {
        self.link(link_of(self.state.load(Acquire)))
    }

    /// The pool in force, if on one.
    pub(crate) fn pool(&self) -> Option<&Arc<Pool>> {
        self.current().map(|link| &link.pool)
    }

    /// Whether the word names a pool now.
    #[inline]
    pub(crate) fn is_pooled(&self) -> bool {
        link_of(self.state.load(Acquire)) != 0
    }

    /// The ceiling; `Acquire`, pairing with a change's `Release`: whoever
    /// sees a lowered ceiling sees the reservation lowered under it.
    fn ceiling(&self) -> u32 {
        self.ceiling.load(Acquire)
    }

    /// The time for a hand-off on a pool; unknown (nobody counts as
    /// expired) if the clock panics.
    fn now(&self) -> Option<Instant> {
        let clock = self.clock.get()?;
        catch_unwind(AssertUnwindSafe(|| clock.now())).ok()
    }

    /// Takes a free slot if there is one. Never waits, never locks.
    #[inline]
    pub(crate) fn try_acquire(&self) -> Acquired {
        let mut state = self.state.load(Relaxed);
        loop {
            if state & DISABLED != 0 {
                return Acquired::Uncounted;
            }
            if is_closed(state) {
                if link_of(state) == 0 {
                    return Acquired::Full;
                }
                // The field was mapped before the word named it (by a
                // move, with release): see it mapped.
                fence(Acquire);
                return self.try_borrow(link_of(state));
            }
            match self
                .state
                .compare_exchange_weak(state, state + ONE, Acquire, Relaxed)
            {
                Ok(_) => return Acquired::Slot,
                Err(actual) => state = actual,
            }
        }
    }

    /// One try of [`try_acquire`](Self::try_acquire)'s plain path, without
    /// its loop: `Some(Slot)` if the word's compare-exchange took a slot,
    /// `Some(Full)` if the word is closed with no pool to borrow from, and
    /// `None` for everything else (disabled, a pool to ask, or the
    /// compare-exchange lost to another caller), which the caller asks of
    /// the whole path. Inlined, it is a load, a test and a compare-exchange
    /// that need no register kept across a call.
    #[inline]
    pub(crate) fn try_acquire_once(&self) -> Option<Acquired> {
        let state = self.state.load(Relaxed);
        if state & DISABLED != 0 {
            return None;
        }
        if is_closed(state) {
            return (link_of(state) == 0).then_some(Acquired::Full);
        }
        self.state
            .compare_exchange_weak(state, state + ONE, Acquire, Relaxed)
            .ok()
            .map(|_| Acquired::Slot)
    }

    /// Past the reservation: borrows a pool slot of the link field
    /// `slot` names if the ceiling allows and nobody waits ahead.
    #[cold]
    #[inline(never)]
    fn try_borrow(&self, slot: usize) -> Acquired {
        let Some(link) = self.link(slot) else {
            return Acquired::Full;
        };
        // Pinned, then checked with a read-modify-write of the word: the
        // link stays the field's while we work on it (see `links.rs`).
        link.owe(1);
        let state = self.state.fetch_add(0, AcqRel);
        if link_of(state) != slot || !self.links.names(slot, link) {
            // Moved to another pool meanwhile.
            link.repay(1);
            return self.try_acquire();
        }
        if state & WAITERS != 0 || in_flight(state) >= self.ceiling() {
            link.repay(1);
            return Acquired::Full;
        }
        if !link.pool.try_take() {
            return if link.pool.has_waiters() {
                // Free pool slots may belong to waiters: serve them first.
                self.borrow_locked(link, slot)
            } else {
                link.repay(1);
                Acquired::Full
            };
        }
        match self.claim(slot) {
            // The pin is now the slot owed.
            Claim::Borrowed(before) => self.recheck_ceiling(before),
            Claim::Reserved => {
                self.give_back(link);
                Acquired::Slot
            }
            Claim::Refused => {
                self.give_back(link);
                Acquired::Full
            }
            Claim::Moved => {
                self.give_back(link);
                self.try_acquire()
            }
        }
    }

    /// A lock-free borrower just added itself to the word, `before` calls
    /// in flight: the ceiling, outside the word, may have been lowered
    /// between its check and its compare-exchange, and the change may
    /// have returned. With the change's fence (in
    /// [`set_pooled_limits`](Self::set_pooled_limits)), either this reading
    /// sees the lowered ceiling, or everything that follows the change
    /// sees the call in flight (which was then admitted before it): a
    /// call that finds itself past the lowered ceiling gives its slot back
    /// (through a release, which settles the pool slot and what it owed)
    /// and is refused.
    fn recheck_ceiling(&self, before: u32) -> Acquired {
        fence(SeqCst);
        if before < self.ceiling() {
            return Acquired::Slot;
        }
        if let Some(clock) = self.clock.get() {
            self.release(clock);
        }
        Acquired::Full
    }

    /// Holding a slot of the pool of link field `slot`, owed there: adds
    /// the call to the word.
    fn claim(&self, slot: usize) -> Claim {
        let mut state = self.state.load(Relaxed);
        loop {
            if link_of(state) != slot {
                return Claim::Moved;
            }
            if state & WAITERS != 0 || in_flight(state) >= self.ceiling() {
                return Claim::Refused;
            }
            match self
                .state
                .compare_exchange_weak(state, state + ONE, Acquire, Relaxed)
            {
                Ok(before) if is_full(before) => return Claim::Borrowed(in_flight(before)),
                Ok(_) => return Claim::Reserved,
                Err(actual) => state = actual,
            }
        }
    }

    /// Gives a pool slot back and what the pinned borrower owed for it,
    /// serving the pool's waiters if there are (a borrower's slot it did
    /// not use: a panicking clock is not raised, since the caller may hold
    /// a slot not yet handed out).
    fn give_back(&self, link: &PoolLink) {
        let waiters = link.pool.give_back();
        // Repaid before anything that may unwind (a waker, the clock):
        // what is owed must never stay counted. The link itself stays
        // valid, and a serve checks the mapping under the lock.
        link.repay(1);
        if waiters {
            self.serve_pool(link, None, false);
        }
    }

    /// A newcomer finding the pool's waiters flag, pinned on `link`: under
    /// the pool's lock, serves the waiters a pool slot can serve, then
    /// borrows what is left. Lets go of the pin unless it borrowed.
    #[cold]
    fn borrow_locked(&self, link: &PoolLink, slot: usize) -> Acquired {
        let now = self.now();
        let pool = &link.pool;
        let mut inner = pool.lock();
        let mut deferred = Deferred::default();
        pool.serve(&mut inner, now, &mut deferred);
        let mut borrowed = false;
        let acquired = if pool.take_locked(&inner) {
            match self.claim(slot) {
                // Under the pool's lock, which a change of the ceiling
                // takes: no recheck.
                Claim::Borrowed(_) => {
                    borrowed = true;
                    Some(Acquired::Slot)
                }
                Claim::Reserved => {
                    pool.give_back();
                    Some(Acquired::Slot)
                }
                Claim::Refused => {
                    pool.give_back();
                    Some(Acquired::Full)
                }
                Claim::Moved => {
                    pool.give_back();
                    None
                }
            }
        } else {
            Some(Acquired::Full)
        };
        pool.serve(&mut inner, now, &mut deferred);
        // Borrowed: the pin is now the slot owed. Else let go of it before
        // any waker runs (one may unwind).
        if !borrowed {
            link.repay(1);
        }
        drop(inner);
        deferred.finish();
        // Moved to another pool meanwhile: try there.
        acquired.unwrap_or_else(|| self.try_acquire())
    }

    /// Under the pool's lock: own waiters first (a slot below the
    /// reservation) if `own` names the field `link` is in force by, then
    /// the pool's. A clock that panics is raised again afterwards if
    /// `raise`.
    #[cold]
    fn serve_pool(&self, link: &PoolLink, own: Option<usize>, raise: bool) {
        // As in `hand_over`: the slot is already free; if the clock panics,
        // it is still handed on (nobody counted as expired) before the
        // panic goes on, unless this runs during another unwind.
        let (now, panicked) = match self.clock.get() {
            Some(clock) => read_catching(&**clock),
            None => (None, None),
        };
        let pool = &link.pool;
        let mut inner = pool.lock();
        let mut deferred = Deferred::default();
        if let Some(slot) = own {
            let mut queue = lock(&self.queue);
            let state = self.state.load(Acquire);
            // Only while on this pool: a move (under this lock) grants
            // what a release before its swap freed.
            let on = link_of(state) == slot && self.links.names(slot, link);
            if on && !queue.is_empty() && !is_full(state) {
                if let Some(wake) = queue.grant_next(now) {
                    self.state.fetch_add(ONE, Acquire);
                    deferred.wakes.push(wake);
                }
                self.queue_changed(&queue);
            }
        }
        pool.serve(&mut inner, now, &mut deferred);
        drop(inner);
        deferred.finish();
        if let Some(panic) = panicked
            && raise
            && !std::thread::panicking()
        {
            resume_unwind(panic);
        }
    }

    /// Gives a slot back, and hands it to the next waiter if one is queued.
    ///
    /// `clock` is read only on a hand-off, to pass over waiters whose
    /// deadline has passed. Returns what the release found.
    #[inline]
    pub(crate) fn release(&self, clock: &Arc<dyn Clock>) -> Released {
        let before = self.state.fetch_sub(ONE, Release);
        if before & WAITERS != 0 || in_flight(before) > max(before) {
            self.release_slow(before, clock);
        }
        Released {
            in_flight: in_flight(before),
            max: max(before),
        }
    }

    /// A release that found waiters, or the count past the limit (a
    /// borrowed slot, or a limit lowered under the calls in flight).
    #[cold]
    #[inline(never)]
    fn release_slow(&self, before: u64, clock: &Arc<dyn Clock>) {
        // The pool the word named when this slot came back: the one that
        // lent it, if it was borrowed (see "Moving to another pool"). Its
        // slot was set before the word named it: see it set.
        fence(Acquire);
        let slot = link_of(before);
        // A dependent access for loom's exploration, right before the read
        // of the field's mapping, for the models of remapping (see
        // `loom::explore_remaps`).
        #[cfg(loom)]
        if crate::loom::exploring_remaps() {
            let _ = self.waiting.load(Relaxed);
        }
        match self.link(slot) {
            None if before & WAITERS != 0 => self.hand_over(&**clock),
            None => {}
            Some(link) => {
                // A borrowed slot is owed to `link` until repaid: the
                // field keeps naming it meanwhile (see `links.rs`).
                let borrowed = in_flight(before) > max(before);
                let pool_waiters = borrowed && link.pool.give_back();
                if borrowed {
                    // Repaid before the serves, which may unwind (a
                    // panicking clock or waker): what is owed must never
                    // stay counted. The link stays valid, and the serve
                    // checks the mapping under the lock.
                    link.repay(1);
                }
                if before & WAITERS != 0 {
                    self.serve_pool(link, Some(slot), true);
                } else if pool_waiters {
                    self.serve_pool(link, None, true);
                }
            }
        }
    }

    /// After a release that found waiters: gives a free slot, if the limit
    /// allows one, to the next waiter whose deadline has not passed.
    #[cold]
    fn hand_over(&self, clock: &dyn Clock) {
        // Read before locking: no lock of ours is held while a clock runs.
        // The hand-off takes effect at this reading: a waiter whose deadline
        // it has reached gets nothing. The slot is already free: if the
        // clock panics, it is still handed over (to the oldest waiter, as if
        // no deadline had passed) before the panic goes on, unless this
        // runs during another unwind (a waiter withdrawn because the clock
        // panicked), which must not panic again.
        let (now, panicked) = read_catching(clock);
        let mut queue = lock(&self.queue);
        let state = self.state.load(Acquire);
        let wake = if !queue.is_empty() && !is_full(state) {
            // Newcomers cannot take the slot (WAITERS is set) and only we
            // hand slots out, under the lock: it is still free.
            let wake = queue.serve_next(now);
            if wake.is_some() {
                self.state.fetch_add(ONE, Acquire);
            }
            // If every waiter had expired, the queue is now empty and this
            // clears WAITERS: the slot is free for newcomers again.
            self.queue_changed(&queue);
            wake
        } else {
            None
        };
        drop(queue);
        if let Some(wake) = wake {
            wake.wake();
        }
        if let Some(panic) = panicked
            && !std::thread::panicking()
        {
            resume_unwind(panic);
        }
    }

    /// Records a change of the queue's length; clears `WAITERS` once it is
    /// empty. Call with the lock held, after the change.
    fn queue_changed(&self, queue: &MutexGuard<'_, WaitQueue>) {
        if queue.is_empty() {
            self.state.fetch_and(!WAITERS, AcqRel);
        }
        self.waiting.store(queue.len(), Relaxed);
    }

    /// Takes a slot that came free, or queues the caller until `deadline`
    /// (`None`: no deadline). A thread (`kind` [`Kind::Thread`]) that would
    /// queue takes instead the slot offered to a waiting thread that has not
    /// woken up to take it yet, if that waiter's deadline has not passed at
    /// `now` (see [`WaitQueue::take_offer`]). A bulkhead on a pool does not
    /// barge: its waiters are served in arrival order across the pool.
    pub(crate) fn enqueue(
        &self,
        kind: Kind,
        wake: Wake,
        deadline: Option<Instant>,
        now: Option<Instant>,
    ) -> Enqueued {
        let mut wake = wake;
        loop {
            let slot = link_of(self.state.load(Acquire));
            let tried = match self.link(slot) {
                Some(link) => self.enqueue_pooled(link, slot, kind, wake, deadline, now),
                None => self.enqueue_alone(kind, wake, deadline, now),
            };
            match tried {
                Ok(enqueued) => return enqueued,
                // Moved to another pool (or off one) meanwhile: again.
                Err(back) => wake = back,
            }
        }
    }

    /// [`enqueue`](Self::enqueue) off a pool; `Err` gives `wake` back if
    /// the bulkhead is on one now.
    fn enqueue_alone(
        &self,
        kind: Kind,
        wake: Wake,
        deadline: Option<Instant>,
        now: Option<Instant>,
    ) -> Result<Enqueued, Wake> {
        let mut queue = lock(&self.queue);
        let mut state = self.state.load(Acquire);
        if link_of(state) != 0 {
            return Err(wake);
        }
        loop {
            if state & DISABLED != 0 {
                return Ok(Enqueued::Done(Acquired::Uncounted));
            }
            let queue_up = is_closed(state);
            if queue_up && kind == Kind::Thread && queue.take_offer(now) {
                // The slot stays counted in flight, now ours; its waiter
                // is queued again, so WAITERS must be set (the offer may
                // have emptied the queue and cleared it).
                self.state.fetch_or(WAITERS, AcqRel);
                self.waiting.store(queue.len(), Relaxed);
                return Ok(Enqueued::Done(Acquired::Slot));
            }
            if queue_up && state & WAITERS != 0 {
                break;
            }
            let next = if queue_up {
                state | WAITERS
            } else {
                state + ONE
            };
            match self.state.compare_exchange(state, next, AcqRel, Acquire) {
                Ok(_) if queue_up => break,
                Ok(_) => return Ok(Enqueued::Done(Acquired::Slot)),
                Err(actual) => state = actual,
            }
        }
        let key = queue.push(kind, wake, deadline);
        self.queue_changed(&queue);
        Ok(Enqueued::Queued(key))
    }

    /// [`enqueue`](Self::enqueue) on a pool: a reserved slot, else a pool
    /// slot once the older waiters a pool slot can serve were served, else
    /// the queue, with the pool's waiters flag set while no pool slot is
    /// free (so that the release of one serves it). `now` is the caller's
    /// reading if it took one (a blocking caller, for its deadline), else
    /// one is taken here.
    fn enqueue_pooled(
        &self,
        link: &PoolLink,
        slot: usize,
        kind: Kind,
        wake: Wake,
        deadline: Option<Instant>,
        now: Option<Instant>,
    ) -> Result<Enqueued, Wake> {
        let now = now.or_else(|| self.now());
        let pool = &link.pool;
        let mut inner = pool.lock();
        // Fixed from here on: a move takes this pool's lock.
        if link_of(self.state.load(Acquire)) != slot || !self.links.names(slot, link) {
            return Err(wake);
        }
        let mut deferred = Deferred::default();
        pool.serve(&mut inner, now, &mut deferred);
        let mut queue = lock(&self.queue);
        let mut state = self.state.load(Acquire);
        let enqueued = loop {
            if state & DISABLED != 0 {
                break Enqueued::Done(Acquired::Uncounted);
            }
            if !is_closed(state) {
                match self
                    .state
                    .compare_exchange(state, state + ONE, AcqRel, Acquire)
                {
                    Ok(_) => break Enqueued::Done(Acquired::Slot),
                    Err(actual) => {
                        state = actual;
                        continue;
                    }
                }
            }
            if state & WAITERS == 0 {
                if in_flight(state) < self.ceiling() {
                    if pool.take_locked(&inner) {
                        // Owed before the word counts it (see `links.rs`).
                        link.owe(1);
                        match self.claim(slot) {
                            Claim::Borrowed(_) => break Enqueued::Done(Acquired::Slot),
                            Claim::Reserved => {
                                pool.give_back();
                                link.repay(1);
                                break Enqueued::Done(Acquired::Slot);
                            }
                            // Not moved: we hold the pool's lock.
                            Claim::Refused | Claim::Moved => {
                                pool.give_back();
                                link.repay(1);
                                state = self.state.load(Acquire);
                                continue;
                            }
                        }
                    }
                    if !pool.close_if_full(&inner) {
                        // A pool slot came back meanwhile.
                        state = self.state.load(Acquire);
                        continue;
                    }
                }
                if let Err(actual) =
                    self.state
                        .compare_exchange(state, state | WAITERS, AcqRel, Acquire)
                {
                    state = actual;
                    continue;
                }
            }
            let ticket = inner.ticket();
            let key = queue.push_ticketed(kind, wake, deadline, ticket);
            self.queue_changed(&queue);
            break Enqueued::Queued(key);
        };
        drop(queue);
        pool.serve(&mut inner, now, &mut deferred);
        drop(inner);
        deferred.finish();
        Ok(enqueued)
    }

    /// Locks the pool in force (if on one), then the queue; returns the
    /// link locked.
    fn lock_both(&self) -> (Locked<'_>, MutexGuard<'_, WaitQueue>) {
        loop {
            let slot = link_of(self.state.load(Acquire));
            let link = self.link(slot);
            let locked = link.map(|link| (link, link.pool.lock()));
            let queue = lock(&self.queue);
            // A move holds both locks: under them the link is fixed.
            if link_of(self.state.load(Acquire)) == slot
                && link.is_none_or(|link| self.links.names(slot, link))
            {
                return (locked, queue);
            }
        }
    }

    /// After a change of the queue under [`lock_both`](Self::lock_both):
    /// refreshes the pool's waiters flag, then unlocks. A flag it sets
    /// where it was clear makes it serve the pool (see `Pool::serve`), at
    /// no time read (nobody counts as expired): no clock runs under a lock.
    ///
    /// That serve is a guard, not a path the callers take: they only remove
    /// a waiter or refresh its waker, which cannot make anyone newly wait,
    /// and every change that can (a waiter queued, a reservation raised, a
    /// move) refreshes the flag under the pool's lock before letting go of
    /// it. So the flag is clear here only if nobody waits, and the serve
    /// never runs; were it to run, an expired waiter it granted would get
    /// its slot late rather than lose one.
    fn unlock_both(&self, locked: Locked<'_>, queue: MutexGuard<'_, WaitQueue>) {
        drop(queue);
        if let Some((link, mut inner)) = locked {
            let mut deferred = Deferred::default();
            if link.pool.refresh_waiters(&inner, &mut deferred) {
                link.pool.serve(&mut inner, None, &mut deferred);
            }
            drop(inner);
            deferred.finish();
        }
    }

    /// Checks a queued waiter: takes its slot if one was handed over, else,
    /// if `expired` or passed over as expired, removes it from the queue,
    /// else refreshes its waker. Returns `None` while it keeps waiting.
    ///
    /// A slot handed over is the waiter's even if it notices only after its
    /// deadline: hand-offs pass over waiters already expired, so the slot
    /// was given while the waiter was still entitled to it.
    pub(crate) fn poll_waiter(
        &self,
        key: WaiterKey,
        expired: bool,
        cx: Option<&Context<'_>>,
    ) -> Option<Acquired> {
        let (inner, mut queue) = self.lock_both();
        let (acquired, stale) = match queue.status(key) {
            Status::Granted | Status::Offered => {
                let (_, wake) = queue.remove(key);
                (Some(Acquired::Slot), wake)
            }
            Status::Expired => {
                let (_, wake) = queue.remove(key);
                (Some(Acquired::Full), wake)
            }
            Status::Queued if expired => {
                let (_, wake) = queue.remove(key);
                self.queue_changed(&queue);
                (Some(Acquired::Full), wake)
            }
            Status::Queued => (None, cx.and_then(|cx| queue.update_waker(key, cx))),
            // Not reachable through the public types, which remove a key
            // exactly once; answering "full" keeps the accounting intact.
            Status::Gone => (Some(Acquired::Full), None),
        };
        self.unlock_both(inner, queue);
        drop(stale);
        acquired
    }

    /// Withdraws a waiter that gives up (dropped or unwound). A slot that was
    /// already handed to it is released like any other, so it goes to the
    /// next waiter (or is freed): no capacity is lost.
    pub(crate) fn cancel(&self, key: WaiterKey, clock: &Arc<dyn Clock>) {
        let (inner, mut queue) = self.lock_both();
        let (status, wake) = queue.remove(key);
        if status == Status::Queued {
            self.queue_changed(&queue);
        }
        self.unlock_both(inner, queue);
        drop(wake);
        if matches!(status, Status::Granted | Status::Offered) {
            self.release(clock);
        }
    }

    /// Blocks the calling thread until it gets a slot or `deadline` passes on
    /// `clock` (`None`: no deadline); `now` is the clock's time as it starts
    /// waiting.
    pub(crate) fn acquire_blocking(
        &self,
        clock: &Arc<dyn Clock>,
        now: Instant,
        deadline: Option<Instant>,
    ) -> Acquired {
        let wake = Wake::Thread(thread::current());
        let key = match self.enqueue(Kind::Thread, wake, deadline, Some(now)) {
            Enqueued::Done(acquired) => return acquired,
            Enqueued::Queued(key) => key,
        };
        // Withdraws the waiter if the clock panics while we wait.
        let guard = CancelOnDrop {
            semaphore: self,
            key,
            clock,
        };
        loop {
            let expired = deadline.is_some_and(|d| clock.now() >= d);
            if let Some(acquired) = self.poll_waiter(key, expired, None) {
                std::mem::forget(guard);
                return acquired;
            }
            match deadline {
                Some(deadline) => clock.park_until(deadline),
                None => thread::park(),
            }
        }
    }

    /// Changes the limit. Raising it hands the new slots to waiters at once
    /// (passing over those whose deadline `now` has reached); lowering it
    /// lets the calls in flight finish and admits new ones only once fewer
    /// than the new limit are in flight. A limit of 0 admits nothing
    /// (waiters keep waiting, up to their deadline, for it to be raised).
    ///
    /// Returns the limit it replaced, and the waiters that got a slot: the
    /// caller wakes them (`wake_all`) once it holds no lock, so that no
    /// waker runs under one (see the module docs).
    #[must_use = "the waiters handed a slot must be woken"]
    pub(crate) fn set_max(&self, new_max: u32, now: Instant) -> (u32, Vec<Wake>) {
        let new_max = new_max.min(MAX_CONCURRENT);
        let mut queue = lock(&self.queue);
        let mut state = self.state.load(Acquire);
        loop {
            let next = (state & !MAX_MASK) | ((new_max as u64) << MAX_SHIFT);
            match self.state.compare_exchange(state, next, AcqRel, Acquire) {
                Ok(_) => break,
                Err(actual) => state = actual,
            }
        }
        let before = max(state);
        let mut wakes = Vec::new();
        self.grant_free(&mut queue, Some(now), &mut wakes);
        self.queue_changed(&queue);
        drop(queue);
        (before, wakes)
    }

    /// Grants the slots free under the limit in the word to the waiters,
    /// oldest first (passing over those whose deadline `now` has reached).
    /// While the queue is not empty `WAITERS` is set: nobody else takes a
    /// slot, and releases only lower the count, so a slot found free stays
    /// free until it is granted. Call with the queue's lock held, then
    /// `queue_changed`.
    fn grant_free(&self, queue: &mut WaitQueue, now: Option<Instant>, wakes: &mut Vec<Wake>) {
        while !queue.is_empty() && !is_full(self.state.load(Acquire)) {
            let Some(wake) = queue.grant_next(now) else {
                break;
            };
            self.state.fetch_add(ONE, AcqRel);
            wakes.push(wake);
        }
    }

    /// On a pool: sets the ceiling and the reservation asked for (at most
    /// the ceiling), which the pool puts in force as far as it has room.
    /// Returns the ceiling it replaced; the waiters served are in
    /// `deferred`, to wake once no lock is held.
    pub(crate) fn set_pooled_limits(
        &self,
        member: &dyn super::pool::Member,
        reserved: u32,
        ceiling: u32,
        now: Instant,
        deferred: &mut Deferred,
    ) -> u32 {
        // The bulkhead's limits lock, held by the caller, keeps moves out.
        let Some(link) = self.current() else {
            return self.max();
        };
        let ceiling = ceiling.min(MAX_CONCURRENT);
        let mut inner = link.pool.lock();
        // The reservation in force (the word's limit) never exceeds the
        // ceiling, even for a moment: a lowered one comes down before the
        // ceiling does (a call admitted lock-free within the old
        // reservation after the new limit took effect would be one past
        // it), and a raised ceiling goes up before anything grows into it.
        link.pool.retarget(
            &mut inner,
            member,
            reserved.min(ceiling),
            Some(now),
            deferred,
        );
        // Paired with a lock-free borrower's fence (`recheck_ceiling`).
        let before = self.ceiling.swap(ceiling, SeqCst);
        fence(SeqCst);
        link.pool.serve(&mut inner, Some(now), deferred);
        drop(inner);
        before
    }

    /// Sets the limit in the word (a pooled semaphore's reservation in
    /// force), under the pool's lock; hands slots under a raised one to
    /// waiters. Returns the calls in flight at the change.
    pub(crate) fn set_word_limit(
        &self,
        to: u32,
        now: Option<Instant>,
        deferred: &mut Deferred,
    ) -> u32 {
        let mut queue = lock(&self.queue);
        let mut state = self.state.load(Acquire);
        loop {
            let next = (state & !MAX_MASK) | ((to as u64) << MAX_SHIFT);
            match self.state.compare_exchange(state, next, AcqRel, Acquire) {
                Ok(_) => break,
                Err(actual) => state = actual,
            }
        }
        self.grant_free(&mut queue, now, &mut deferred.wakes);
        self.queue_changed(&queue);
        in_flight(state)
    }

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

    /// The ticket of the waiter a pool slot would go to, if one waits and
    /// the ceiling allows one more call.
    pub(crate) fn next_borrower(&self) -> Option<u64> {
        self.current()?;
        let queue = lock(&self.queue);
        if self.in_flight() >= self.ceiling() {
            return None;
        }
        queue.next_ticket()
    }

    /// Counts `slots` more owed to the pool in force (see `links.rs`):
    /// called by the pool, under its lock, for a bulkhead on it.
    pub(crate) fn owe(&self, slots: u32) {
        if let Some(link) = self.current() {
            link.owe(slots);
        }
    }

    /// Counts `slots` given back to the pool in force, as
    /// [`owe`](Self::owe).
    pub(crate) fn repay(&self, slots: u32) {
        if let Some(link) = self.current() {
            link.repay(slots);
        }
    }

    /// Gives a pool slot just taken to the next waiter (see
    /// `pool::Member::grant_borrowed`).
    pub(crate) fn grant_borrowed(
        &self,
        now: Option<Instant>,
        deferred: &mut Deferred,
    ) -> Option<bool> {
        let mut queue = lock(&self.queue);
        let granted = queue.grant_next(now).map(|wake| {
            let before = self.state.fetch_add(ONE, AcqRel);
            deferred.wakes.push(wake);
            !is_full(before)
        });
        self.queue_changed(&queue);
        granted
    }

    /// The limit in force: the ceiling on a pool, else the word's limit.
    pub(crate) fn limit(&self) -> u32 {
        let state = self.state.load(Acquire);
        match link_of(state) {
            0 => max(state),
            _ => self.ceiling(),
        }
    }

    /// Slots a newcomer could take now: below the limit in the word and,
    /// on a pool, below the ceiling as far as the pool has room; none that
    /// queued callers are owed (this bulkhead's, or the pool's).
    pub(crate) fn available(&self) -> u32 {
        let state = self.state.load(Acquire);
        if state & WAITERS != 0 {
            return 0;
        }
        let (held, limit) = (in_flight(state), max(state));
        let own = limit.saturating_sub(held);
        match self.link(link_of(state)) {
            Some(link) if !link.pool.has_waiters() => {
                let borrowable = self.ceiling().saturating_sub(held.max(limit));
                own + borrowable.min(link.pool.room())
            }
            _ => own,
        }
    }

    /// One consistent reading of the slots: the calls in flight, the
    /// limit, the reservation and what is free, as they all stood at one
    /// instant. Every change of a limit, a reservation or a pool happens
    /// under the locks taken here (the pool's, then the queue's), and the
    /// calls in flight come from the same load of the word as the limit.
    pub(crate) fn reading(&self) -> Reading {
        loop {
            let slot = link_of(self.state.load(Acquire));
            let link = self.link(slot);
            let inner = link.map(|link| link.pool.lock());
            let queue = lock(&self.queue);
            let state = self.state.load(Acquire);
            if link_of(state) != slot || link.is_some_and(|link| !self.links.names(slot, link)) {
                // Moved meanwhile (a move holds both locks): again.
                continue;
            }
            let (held, limit) = (in_flight(state), max(state));
            let waiting = queue.len();
            let reading = match link {
                None => Reading {
                    in_flight: held,
                    waiting,
                    limit,
                    available: if state & WAITERS != 0 {
                        0
                    } else {
                        limit.saturating_sub(held)
                    },
                    reserved: limit,
                    borrowed: 0,
                },
                Some(link) => {
                    let ceiling = self.ceiling();
                    let (room, pool_waiters) = link.pool.reading();
                    let own = limit.saturating_sub(held);
                    let borrowable = if pool_waiters {
                        0
                    } else {
                        ceiling.saturating_sub(held.max(limit)).min(room)
                    };
                    Reading {
                        in_flight: held,
                        waiting,
                        limit: ceiling,
                        available: if state & WAITERS != 0 {
                            0
                        } else {
                            own + borrowable
                        },
                        reserved: limit,
                        borrowed: held.saturating_sub(limit),
                    }
                }
            };
            drop(queue);
            drop(inner);
            return reading;
        }
    }

    /// Slots held past the reservation in force (0 off a pool).
    pub(crate) fn borrowed(&self) -> u32 {
        let state = self.state.load(Relaxed);
        in_flight(state).saturating_sub(max(state))
    }

    pub(crate) fn in_flight(&self) -> u32 {
        in_flight(self.state.load(Relaxed))
    }

    pub(crate) fn max(&self) -> u32 {
        max(self.state.load(Relaxed))
    }

    pub(crate) fn waiting(&self) -> u32 {
        self.waiting.load(Relaxed)
    }

    /// How many offers in a row a waiting thread may lose to newcomers (0:
    /// strict hand-offs); see the module docs.
    pub(crate) fn set_barging(&self, barging: u32) {
        lock(&self.queue).set_barging(barging);
    }
}

/// Withdraws a queued waiter when dropped.
#[derive(Debug)]
pub(crate) struct CancelOnDrop<'a> {
    pub(crate) semaphore: &'a Semaphore,
    pub(crate) key: WaiterKey,
    pub(crate) clock: &'a Arc<dyn Clock>,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        self.semaphore.cancel(self.key, self.clock);
    }
}
