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
//! | max (limit)       | link  | in flight            | DETOUR   | WAITERS |
//! +-------------------+-------+----------------------+----------+---------+
//! ```
//!
//! - *in flight* counts the slots held, including slots handed to a waiter
//!   that has not picked its slot up yet.
//! - *max* is the limit; it lives in the same word so that one load decides a
//!   rejection, and so that [`Semaphore::set_max`] is atomic with respect to
//!   every admission.
//! - `DETOUR` sends every acquisition out of line: a disabled semaphore
//!   (every acquisition succeeds uncounted), or one whose calls nobody gave
//!   a class may not use the whole limit (see "Classes" below).
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
//! ## Classes
//!
//! A call may have a class (`crate::priority`: a thread-local byte, 0 when
//! none is set), and each class below `Critical` may take only a share of
//! the limit (`shed_at`, in `Classes`). The free-slot path reads the byte
//! once its word showed a free slot: 0 is the plain compare-exchange
//! above (an *untagged* call). Any other byte goes out of line to
//! [`Semaphore::acquire_classed`], which resolves the call's class (a
//! scope's, else the bulkhead's `priority`, else a tower layer's, else
//! `Normal`) and admits it only while the calls in flight, read in the same
//! load as the limit, are below `threshold = max(1, floor(limit *
//! share))`; its compare-exchange is on that same word, so no call is
//! admitted past the threshold of a limit that was replaced before it
//! (invariant P1: since the shares do not decrease with the class, a
//! higher class would have been admitted whenever a lower one was). A
//! call at or above its threshold, below the whole limit, is *shed*:
//! refused at once, without waiting (`Acquired::Shed`). A class that may
//! use the whole limit meets a full bulkhead as an untagged call does, and
//! may wait, queued in its class's lists (waiters are served by class, then
//! by arrival). Every hand-off (a release, a raised limit or share, a pool
//! slot) passes the queue the classes P1 admits at that instant (the
//! *eligible* mask, `Semaphore::eligible`), so no waiter is handed a slot
//! past its threshold (P2) even when a reload lowered its share while it
//! waited. A slot free under the limit that no queued waiter may take is a
//! newcomer's whose class may, under the lock (`enqueue_alone`, P3): a
//! hand-off would have given it to an eligible waiter, so it takes nothing
//! a waiter is owed. On a pool the threshold is of the ceiling (the limit in
//! force), and a borrower of class `c` also borrows only while fewer than
//! `max(1, floor(cap * share))` pool slots are lent.
//!
//! A rejection (the word closed) is still the load alone, whatever the
//! class: every threshold is at most the limit.
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
//! for newcomers again. With classes, the pass hands the slot to the
//! highest waiter the classes' shares admit; a newcomer takes a free slot
//! under the mutex while `WAITERS` is set only if no queued waiter may take
//! it (see "Classes"), which that pass would have left free: no slot a
//! waiter is owed is taken, and none is left idle while a newcomer of a
//! class that may take it queues.
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

mod borrow;
mod limits;
mod moves;
mod wait;

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::{Arc, Weak};
use std::task::Context;
use std::time::Instant;

use super::classes::Classes;
use super::links::{Links, PoolLink};
use super::pool::{Deferred, Inner, Member, Pool};
use super::queue::{Kind, Order, Served, Status, WaitQueue, WaiterKey};
use crate::clock::{Clock, Wake};
use crate::loom::atomic::{AtomicU32, AtomicU64, Ordering::*, fence};
use crate::loom::{Mutex, MutexGuard, OnceLock, lock, thread};
use crate::priority;
use crate::{Priority, ShedAt};

const WAITERS: u64 = 1;
/// Every acquisition takes the out-of-line path (`detour`).
const DETOUR: u64 = 1 << 1;
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
    /// Refused by its class's share of the limit (free slots were left
    /// for higher classes): not to wait.
    Shed,
    /// A slot was taken by a call of this class through the classed path,
    /// counted in its class: to release with it.
    Classed(Priority),
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
    /// Whether the word named a pool at the time (read from the value the
    /// release replaced: no second load of the word).
    pub(crate) pooled: bool,
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
    /// Each class under the limit in force.
    pub(crate) classes: [super::ClassOccupancy; 4],
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
    /// Whether it is disabled (`DETOUR` is then set for good).
    disabled: bool,
    /// The classes' shares, default and counts.
    pub(crate) classes: Classes,
}

/// Reads `clock` for a hand-off whose slot is already free: `None` and the
/// panic, to raise once the slot is handed on, if the clock panics.
fn read_catching(clock: &dyn Clock) -> (Option<Instant>, Option<Box<dyn std::any::Any + Send>>) {
    match catch_unwind(AssertUnwindSafe(|| clock.now())) {
        Ok(now) => (Some(now), None),
        Err(panic) => (None, Some(panic)),
    }
}

impl Semaphore {
    pub(crate) fn new(max: u32, enabled: bool) -> Self {
        let max = max.min(MAX_CONCURRENT);
        let detour = if enabled { 0 } else { DETOUR };
        Semaphore {
            state: AtomicU64::new(((max as u64) << MAX_SHIFT) | detour),
            waiting: AtomicU32::new(0),
            queue: Mutex::new(WaitQueue::new()),
            links: Links::default(),
            ceiling: AtomicU32::new(0),
            clock: OnceLock::default(),
            disabled: !enabled,
            classes: Classes::new(ShedAt::DEFAULT, None),
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
            disabled: false,
            classes: Classes::new(ShedAt::DEFAULT, None),
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
            if state & DETOUR != 0 {
                return self.detour(state);
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
            // A free slot: a call with a class set goes out of line.
            if priority::raw() != 0 {
                return self.acquire_classed(state);
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
    /// `None` for everything else (disabled, a pool to ask, a class set,
    /// or the compare-exchange lost to another caller), which the caller
    /// asks of the whole path. Inlined, it is a load, a test and a compare-exchange
    /// that need no register kept across a call.
    #[inline]
    pub(crate) fn try_acquire_once(&self) -> Option<Acquired> {
        let state = self.state.load(Relaxed);
        if state & DETOUR != 0 {
            return None;
        }
        if is_closed(state) {
            return (link_of(state) == 0).then_some(Acquired::Full);
        }
        if priority::raw() != 0 {
            return None;
        }
        self.state
            .compare_exchange_weak(state, state + ONE, Acquire, Relaxed)
            .ok()
            .map(|_| Acquired::Slot)
    }

    /// `DETOUR` was set in `state`: a disabled semaphore admits uncounted;
    /// otherwise calls nobody gave a class are classed too.
    #[cold]
    #[inline(never)]
    fn detour(&self, state: u64) -> Acquired {
        if self.disabled {
            return Acquired::Uncounted;
        }
        self.acquire_classed(state)
    }

    /// The class of a call made now (its thread's byte, the bulkhead's
    /// default), and the shares in force.
    fn class_now(&self) -> (Priority, ShedAt) {
        let (shed_at, default) = self.classes.settings();
        (priority::resolve(priority::raw(), default), shed_at)
    }

    /// The class of a call made now if it is to be tagged (a class set, or
    /// a default class that may not use the whole limit); `None` for a
    /// call as untagged as the plain path's.
    fn tag_now(&self) -> Option<(Priority, ShedAt)> {
        let (shed_at, default) = self.classes.settings();
        let raw = priority::raw();
        if raw == 0 && !Classes::untagged_detour(shed_at, default) {
            return None;
        }
        Some((priority::resolve(raw, default), shed_at))
    }

    /// A call with a class, `state` its last reading of the word: admitted
    /// only while the calls in flight are below its class's threshold of
    /// the limit in force, read in the same load (see "Classes").
    #[cold]
    #[inline(never)]
    pub(crate) fn acquire_classed(&self, state: u64) -> Acquired {
        let (class, shed_at) = self.class_now();
        self.acquire_as(class, shed_at, state)
    }

    /// [`acquire_classed`](Self::acquire_classed) for `class`.
    pub(super) fn acquire_as(&self, class: Priority, shed_at: ShedAt, mut state: u64) -> Acquired {
        loop {
            let slot = link_of(state);
            let limit = if slot == 0 {
                max(state)
            } else {
                self.ceiling()
            };
            if let Some(refused) = self.refusal(class, shed_at, in_flight(state), limit) {
                return refused;
            }
            if is_closed(state) {
                if slot == 0 {
                    return Acquired::Full;
                }
                fence(Acquire);
                return self.try_borrow_as(slot, Some((class, shed_at)));
            }
            match self
                .state
                .compare_exchange_weak(state, state + ONE, Acquire, Relaxed)
            {
                Ok(_) => {
                    self.classes.admit(class);
                    return Acquired::Classed(class);
                }
                Err(actual) => state = actual,
            }
        }
    }

    /// Whether `class` is refused with `in_flight` calls in flight under
    /// `limit`: `Full` with the limit reached (as any call), `Shed`
    /// (counted) at or above its threshold below it.
    fn refusal(
        &self,
        class: Priority,
        shed_at: ShedAt,
        in_flight: u32,
        limit: u32,
    ) -> Option<Acquired> {
        if in_flight < shed_at.threshold(class, limit) {
            return None;
        }
        if in_flight >= limit || shed_at.is_whole(class) {
            return Some(Acquired::Full);
        }
        self.classes.shed(class);
        Some(Acquired::Shed)
    }

    /// Before a call that found no free slot waits: `Some(Shed)` (counted)
    /// if its class may not use the whole limit, which never waits (see
    /// "Classes"); `None` if it may wait.
    #[cold]
    pub(crate) fn refuse_waiting(&self) -> Option<Acquired> {
        let (class, shed_at) = self.tag_now()?;
        if shed_at.is_whole(class) {
            return None;
        }
        self.classes.shed(class);
        Some(Acquired::Shed)
    }

    /// A slot a waiter got (`Slot`), tagged with the class of the call made
    /// now if it has one, so that its release is counted in its class.
    #[cold]
    pub(crate) fn tag_waited(&self, acquired: Acquired) -> Acquired {
        match (acquired, self.tag_now()) {
            (Acquired::Slot, Some((class, _))) => {
                self.classes.admit(class);
                Acquired::Classed(class)
            }
            (acquired, _) => acquired,
        }
    }

    /// The class a caller about to wait queues as (0 = Sheddable to 3 =
    /// Critical), from its thread's byte and the bulkhead's default.
    #[cold]
    pub(crate) fn waiting_class(&self) -> u8 {
        self.class_now().0.index() as u8
    }

    /// The classes a slot may go to with the word `state` (read under the
    /// queue's lock): a bit (`1 << class`) per class whose threshold of the
    /// limit in force (on a pool, the ceiling) is above the calls in
    /// flight (P1, for hand-offs). Every queued class but after a reload
    /// lowered its share may use the whole limit (see "Classes"), so this
    /// is every class whenever a slot is free under the limit.
    pub(super) fn eligible(&self, state: u64) -> u8 {
        let limit = match link_of(state) {
            0 => max(state),
            _ => self.ceiling(),
        };
        let (shed_at, _) = self.classes.settings();
        Priority::ALL
            .into_iter()
            .filter(|class| in_flight(state) < shed_at.threshold(*class, limit))
            .fold(0, |mask, class| mask | 1 << class.index())
    }

    /// Puts new shares and a new default class in force: calls nobody gave
    /// a class detour while their class may not use the whole limit.
    pub(crate) fn set_classes(&self, shed_at: ShedAt, default: Option<Priority>) {
        // Under the queue's lock: two changes apply in order.
        let mut queue = lock(&self.queue);
        self.classes.set(shed_at, default);
        if self.disabled {
            return;
        }
        if Classes::untagged_detour(shed_at, default) {
            self.state.fetch_or(DETOUR, AcqRel);
        } else {
            self.state.fetch_and(!DETOUR, AcqRel);
        }
        // A raised share hands free slots to the waiters it now admits
        // (off a pool; on one, hand-offs take the pool's lock first, and
        // the next release serves them).
        let mut wakes = Vec::new();
        if link_of(self.state.load(Acquire)) == 0 {
            self.grant_free(&mut queue, None, &mut wakes);
            self.queue_changed(&queue);
        }
        drop(queue);
        crate::clock::wake_all(wakes);
    }

    /// Gives back a slot a call of `class` held through the classed path.
    #[inline(never)]
    pub(crate) fn release_classed(&self, class: Priority, clock: &Arc<dyn Clock>) -> Released {
        self.classes.release(class);
        self.release(clock)
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
            pooled: link_of(before) != 0,
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
        let served = if !queue.is_empty() && !is_full(state) {
            // Newcomers cannot take the slot (WAITERS is set) and only we
            // hand slots out, under the lock: it is still free.
            let served = queue.serve_next(now, self.eligible(state));
            if served.is_granted() {
                self.state.fetch_add(ONE, Acquire);
            }
            // If every waiter had expired, the queue is now empty and this
            // clears WAITERS: the slot is free for newcomers again.
            self.queue_changed(&queue);
            served
        } else {
            Served::default()
        };
        drop(queue);
        served.wake();
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
