//! The slots of a keyed bulkhead, whatever its keys' type: the global
//! count under `max_concurrent`, the waiters, and who gets a slot that
//! comes free (max-min fair among the keys that wait).
//!
//! The accounting. Each key holds `held` slots of its limit per key; a key
//! with a reservation `reserved` has it counted in the global `used` from
//! the start, and takes a global slot only for the calls beyond it. So at
//! every instant
//!
//! ```text
//! used >= sum over keys of max(held, reserved)   (unreserved: reserved = 0)
//! used <= max_concurrent                          (but for reservations
//!                                                  accepted at build)
//! ```
//!
//! A call takes a global slot first and then its key's (giving the global
//! one back if the key's word moved); a release gives its key's back
//! first and then the global one: `used` may only run ahead of the sum,
//! never behind it. Whether a call takes (or a release gives back) a
//! global slot is read from the key's word as the compare-exchange (the
//! `fetch_sub`) that counted it saw it, so the two always agree.
//!
//! Waiting. While a waiter could use a free global slot (its key has room)
//! [`WAITING`] is set in `used`: new calls then take the lock rather than a
//! free global slot (no barging), except within a key's reservation, which
//! is always theirs at once; a key with waiters of its own sends its new
//! calls to the lock too (first come first served within a key), whatever
//! holds them back. A release that finds [`WAITING`] (or waiters on its
//! key) hands the slot on under the lock ([`dispatch`](Slots::dispatch)),
//! which also sets or clears [`WAITING`]: waiters held back by their own
//! key's limit alone leave other keys' calls on the fast path. Waiters and
//! releasers meet on one atomic each (`used`, the key's word), so either
//! the releaser sees the waiter or the waiter's own dispatch sees the
//! slot.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::hash::{BuildHasherDefault, DefaultHasher};
use std::ptr::NonNull;

use super::node::{HELD, KeySlot, WAITER, WAITERS};
use crate::clock::Wake;
use crate::loom::atomic::{AtomicU32, AtomicU64, Ordering::*};
use crate::loom::{Mutex, lock, peek};

/// In `used`: somebody waits.
const WAITING: u64 = 1 << 63;

/// Why a call got no slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Its key holds its limit per key.
    KeyFull,
    /// The bulkhead holds `max_concurrent`.
    GlobalFull,
    /// The key is new and the bulkhead holds `max_keys` keys.
    TooManyKeys,
}

/// What a fast attempt found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Take {
    Taken,
    Refused(Refusal),
    /// Others wait: the attempt goes to the lock.
    Queue,
}

/// What the slow path did for a call.
#[derive(Debug)]
pub(crate) enum Admit {
    Taken,
    Refused(Refusal),
    /// Queued as this waiter; see [`Slots::granted`] and [`Slots::cancel`].
    Queued(u64),
}

/// A key's slot, as the waiting structures keep it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct SlotRef(NonNull<KeySlot>);

// SAFETY: a `SlotRef` is only dereferenced while its key has waiters
// (counted in its word) or held slots: a sweep frees a node only when its
// word shows neither, under its shard's write lock, and every waiter and
// slot is counted before the shard's read lock that found the node is let
// go. `KeySlot` itself is atomics only.
unsafe impl Send for SlotRef {}
// SAFETY: as for `Send`: shared access goes through atomics.
unsafe impl Sync for SlotRef {}

impl SlotRef {
    pub(crate) fn new(slot: &KeySlot) -> Self {
        SlotRef(NonNull::from(slot))
    }

    pub(crate) fn from_ptr(slot: NonNull<KeySlot>) -> Self {
        SlotRef(slot)
    }

    pub(crate) fn as_ptr(self) -> NonNull<KeySlot> {
        self.0
    }

    /// # Safety
    ///
    /// The key must have waiters or held slots (see the `Send` impl).
    pub(crate) unsafe fn get<'a>(self) -> &'a KeySlot {
        // SAFETY: the caller's promise: the node is not freed meanwhile.
        unsafe { self.0.as_ref() }
    }
}

/// A waiting key's place in the hand-off order: first the keys within
/// their reservation (false before true), then the fewest slots held, then
/// the oldest waiter.
type Rank = (bool, u64, u64);

#[derive(Debug, Default)]
struct KeyQueue {
    waiters: VecDeque<u64>,
    /// Its entry in [`Waiting::eligible`], if its key has room.
    rank: Option<Rank>,
}

#[derive(Debug)]
struct Entry {
    slot: SlotRef,
    wake: Option<Wake>,
    granted: bool,
}

/// The waiting structures' hasher: fixed, so that a model repeats (their
/// keys are addresses and sequence numbers, nobody's choice).
type Fixed = BuildHasherDefault<DefaultHasher>;

#[derive(Debug, Default)]
struct Waiting {
    keys: HashMap<SlotRef, KeyQueue, Fixed>,
    entries: HashMap<u64, Entry, Fixed>,
    next: u64,
    /// Waiters not yet given a slot.
    queued: usize,
    /// The waiting keys with room under their own limit, in hand-off
    /// order: a grant takes the first, in O(log n) rather than a scan.
    /// A key's rank is read again whenever its `held` may have moved: when
    /// it is granted a slot, when a waiter joins or leaves it, and when one
    /// of its calls gives a slot back (a key with waiters always hands its
    /// releases to the lock, naming itself); limits changed live re-read
    /// every key. Between a release and its hand-off a rank may be stale,
    /// never past that hand-off.
    eligible: BTreeSet<(Rank, SlotRef)>,
}

impl Waiting {
    /// Reads key `slot_ref`'s rank again (its `held`, its limits, its
    /// oldest waiter), and forgets the key if it has no waiter left.
    fn refresh(&mut self, slot_ref: SlotRef, default_per_key: u32) {
        let Some(queue) = self.keys.get_mut(&slot_ref) else {
            return;
        };
        if let Some(old) = queue.rank.take() {
            self.eligible.remove(&(old, slot_ref));
        }
        let Some(&head) = queue.waiters.front() else {
            self.keys.remove(&slot_ref);
            return;
        };
        // SAFETY: the key has waiters (this queue's, counted in its word).
        let slot = unsafe { slot_ref.get() };
        let (per_key, reserved) = slot.limits(default_per_key);
        let held = peek(&slot.word) & HELD;
        if held < per_key {
            let rank = (held >= reserved, held, head);
            queue.rank = Some(rank);
            self.eligible.insert((rank, slot_ref));
        }
    }

    /// [`refresh`](Self::refresh) of every waiting key (limits changed).
    fn refresh_all(&mut self, default_per_key: u32) {
        let keys: Vec<SlotRef> = self.keys.keys().copied().collect();
        for key in keys {
            self.refresh(key, default_per_key);
        }
    }
}

/// What [`Slots::grant`] did.
enum Grant {
    /// Its oldest waiter got a slot.
    Granted,
    /// Its key has no room (a limit lowered meanwhile).
    NoRoom,
    /// It needs a global slot and none is free.
    NoGlobal,
}

/// The slots of a keyed bulkhead.
#[derive(Debug)]
pub(crate) struct Slots {
    /// The global count (see the module's docs) and [`WAITING`].
    used: AtomicU64,
    /// `max_concurrent`.
    cap: AtomicU32,
    /// The limit per key of the keys without one of their own.
    per_key: AtomicU32,
    /// The sweep epoch new calls stamp on their key.
    pub(super) epoch: AtomicU32,
    waiting: Mutex<Waiting>,
}

impl Slots {
    pub(crate) fn new(cap: u32, per_key: u32, reserved: u64) -> Self {
        Slots {
            used: AtomicU64::new(reserved),
            cap: AtomicU32::new(cap),
            per_key: AtomicU32::new(per_key),
            epoch: AtomicU32::new(0),
            waiting: Mutex::new(Waiting::default()),
        }
    }

    pub(crate) fn cap(&self) -> u32 {
        peek(&self.cap)
    }

    pub(crate) fn per_key(&self) -> u32 {
        peek(&self.per_key)
    }

    /// The global count: reservations and the calls beyond them.
    #[cfg_attr(any(not(test), loom), allow(dead_code))]
    pub(crate) fn used(&self) -> u32 {
        (peek(&self.used) & !WAITING) as u32
    }

    /// How many calls wait.
    pub(crate) fn waiting(&self) -> usize {
        lock(&self.waiting).queued
    }

    /// What keeps waiter `slot` waiting now: its key's limit, or the
    /// global one.
    ///
    /// # Safety
    ///
    /// The waiter is still queued (its key counts it).
    pub(crate) unsafe fn blocked_by(&self, slot: SlotRef) -> Refusal {
        // SAFETY: the caller's promise: the key counts a waiter.
        let slot = unsafe { slot.get() };
        let (per_key, _) = slot.limits(peek(&self.per_key));
        if peek(&slot.word) & HELD >= per_key {
            Refusal::KeyFull
        } else {
            Refusal::GlobalFull
        }
    }

    /// Takes a global slot if one is free (and nobody waits, unless
    /// `barge`).
    #[inline]
    fn take_global(&self, barge: bool) -> bool {
        let cap = u64::from(peek(&self.cap));
        let mut used = peek(&self.used);
        loop {
            if (!barge && used & WAITING != 0) || used & !WAITING >= cap {
                return false;
            }
            match self.used.compare_exchange(used, used + 1, SeqCst, Relaxed) {
                Ok(_) => return true,
                Err(now) => used = now,
            }
        }
    }

    /// Gives a global slot back; false (nothing done) if somebody waits.
    #[inline]
    fn give_global(&self) -> bool {
        let mut used = peek(&self.used);
        loop {
            if used & WAITING != 0 {
                return false;
            }
            match self.used.compare_exchange(used, used - 1, SeqCst, Relaxed) {
                Ok(_) => return true,
                Err(now) => used = now,
            }
        }
    }

    /// One try at a slot of `slot`'s key, without the lock.
    #[inline]
    pub(crate) fn try_take(&self, slot: &KeySlot) -> Take {
        let (per_key, reserved) = slot.limits(peek(&self.per_key));
        let epoch = peek(&self.epoch) as u16;
        let mut word = peek(&slot.word);
        loop {
            if word & WAITERS != 0 {
                return Take::Queue;
            }
            let held = word & HELD;
            if held >= per_key {
                return Take::Refused(Refusal::KeyFull);
            }
            let global = held >= reserved;
            if global && !self.take_global(false) {
                return if peek(&self.used) & WAITING != 0 {
                    Take::Queue
                } else {
                    Take::Refused(Refusal::GlobalFull)
                };
            }
            let next = super::node::with_epoch(word + 1, epoch);
            match slot.word.compare_exchange(word, next, SeqCst, Relaxed) {
                Ok(_) => return Take::Taken,
                Err(now) => {
                    if global {
                        self.give_back_global();
                    }
                    word = now;
                }
            }
        }
    }

    /// Gives back a global slot taken for nothing.
    fn give_back_global(&self) {
        if !self.give_global() {
            let mut wakes = Vec::new();
            {
                let mut waiting = lock(&self.waiting);
                self.used.fetch_sub(1, SeqCst);
                self.dispatch(&mut waiting, &mut wakes);
            }
            crate::clock::wake_all(wakes);
        }
    }

    /// Gives back a slot of `slot`'s key, handing it on to a waiter.
    ///
    /// # Safety
    ///
    /// `slot` holds a slot this call gives back (so its node is alive).
    pub(crate) unsafe fn release(&self, slot: SlotRef) {
        // SAFETY: the caller holds one of the key's slots.
        let key = unsafe { slot.get() };
        // Read before the slot is given back: the node may be freed then.
        let (_, reserved) = key.limits(0);
        let before = key.word.fetch_sub(1, SeqCst);
        // `key` is not touched below unless it has waiters (alive then).
        let global = before & HELD > reserved;
        if before & WAITERS == 0 && (!global || self.give_global()) {
            return;
        }
        let mut wakes = Vec::new();
        {
            let mut waiting = lock(&self.waiting);
            // Its key's rank moved (if it has waiters: else it is not read).
            waiting.refresh(slot, peek(&self.per_key));
            if global {
                // Its waiters, held back by their key until now, may be
                // owed the global slot: flag them first, so that a new call
                // of another key cannot take it between the give-back and
                // the hand-off (the dispatch sets the flag right after).
                if !waiting.eligible.is_empty() {
                    self.used.fetch_or(WAITING, SeqCst);
                }
                self.used.fetch_sub(1, SeqCst);
            }
            self.dispatch(&mut waiting, &mut wakes);
        }
        crate::clock::wake_all(wakes);
    }

    /// The slow path of a call whose [`try_take`](Self::try_take) did not
    /// take a slot; under its shard's read lock (its node alive). With
    /// `wake`, a call that gets no slot now is queued, woken by it. Also
    /// returns the waiters it served, for the caller to wake once it holds
    /// no lock (and to undo what it got if a waker panics).
    pub(crate) fn admit(&self, slot: &KeySlot, wake: Option<Wake>) -> (Admit, Vec<Wake>) {
        let mut wakes = Vec::new();
        let admit = {
            let mut waiting = lock(&self.waiting);
            // Serve those who wait first (normally nobody can be).
            self.dispatch(&mut waiting, &mut wakes);
            match self.take_locked(slot) {
                Ok(()) => Admit::Taken,
                Err(refusal) => match wake {
                    // A key's word counts at most 2^24 - 1 waiters: one more
                    // is refused rather than counted into the epoch's bits.
                    Some(wake) if peek(&slot.word) & WAITERS != WAITERS => {
                        Admit::Queued(self.enqueue(&mut waiting, slot, wake, &mut wakes))
                    }
                    _ => Admit::Refused(refusal),
                },
            }
        };
        (admit, wakes)
    }

    /// Under the lock, after a dispatch: a slot for a call of `slot`'s key
    /// if its key has no waiters and it can take one.
    fn take_locked(&self, slot: &KeySlot) -> Result<(), Refusal> {
        let (per_key, reserved) = slot.limits(peek(&self.per_key));
        let epoch = peek(&self.epoch) as u16;
        let mut word = peek(&slot.word);
        loop {
            if word & WAITERS != 0 {
                return Err(Refusal::KeyFull);
            }
            let held = word & HELD;
            if held >= per_key {
                return Err(Refusal::KeyFull);
            }
            // After the dispatch nobody waiting can use a free global slot
            // (it would have been given it), so taking one is fair.
            let global = held >= reserved;
            if global && !self.take_global(true) {
                return Err(Refusal::GlobalFull);
            }
            let next = super::node::with_epoch(word + 1, epoch);
            match slot.word.compare_exchange(word, next, SeqCst, SeqCst) {
                Ok(_) => return Ok(()),
                Err(now) => {
                    if global {
                        self.used.fetch_sub(1, SeqCst);
                    }
                    word = now;
                }
            }
        }
    }

    fn enqueue(
        &self,
        waiting: &mut Waiting,
        slot: &KeySlot,
        wake: Wake,
        wakes: &mut Vec<Wake>,
    ) -> u64 {
        let seq = waiting.next;
        waiting.next += 1;
        let slot = SlotRef::new(slot);
        // SAFETY: the caller holds the shard's read lock (see `admit`).
        unsafe { slot.get() }.word.fetch_add(WAITER, SeqCst);
        waiting.keys.entry(slot).or_default().waiters.push_back(seq);
        waiting.refresh(slot, peek(&self.per_key));
        waiting.entries.insert(
            seq,
            Entry {
                slot,
                wake: Some(wake),
                granted: false,
            },
        );
        waiting.queued += 1;
        // A slot given back between the refusal and the count of this
        // waiter (in its key's word, or WAITING the dispatch sets) goes to
        // the waiters now (perhaps to this one: its wake is then spurious).
        self.dispatch(waiting, wakes);
        seq
    }

    /// Gives free slots to waiters while any can take one: first the keys
    /// within their reservation, then, max-min fair, the key holding the
    /// fewest slots (the oldest waiter among equals). Then sets [`WAITING`]
    /// if a waiter is left that a free global slot would serve (its key has
    /// room), clears it if not: waiters held back by their own key's limit
    /// only are served by their key's releases, which always come here, and
    /// do not send other keys' calls to the lock.
    fn dispatch(&self, waiting: &mut Waiting, wakes: &mut Vec<Wake>) {
        let default = peek(&self.per_key);
        loop {
            let mut needs_global = false;
            while let Some(&(_, slot_ref)) = waiting.eligible.first() {
                match self.grant(waiting, slot_ref, wakes) {
                    Grant::Granted | Grant::NoRoom => waiting.refresh(slot_ref, default),
                    Grant::NoGlobal => {
                        needs_global = true;
                        break;
                    }
                }
            }
            if !needs_global {
                self.used.fetch_and(!WAITING, SeqCst);
                return;
            }
            // A global slot given back before WAITING was seen went back
            // to the count: try once more now that releases will see it.
            if self.used.fetch_or(WAITING, SeqCst) & WAITING != 0 {
                return;
            }
        }
    }

    /// Gives the oldest waiter of `slot_ref`'s key a slot; false if the
    /// global count has none free for it.
    fn grant(&self, waiting: &mut Waiting, slot_ref: SlotRef, wakes: &mut Vec<Wake>) -> Grant {
        // SAFETY: the key has waiters.
        let slot = unsafe { slot_ref.get() };
        let (per_key, reserved) = slot.limits(peek(&self.per_key));
        let mut word = peek(&slot.word);
        loop {
            // Read again at each try: a grant holds no shard lock, so a
            // sweep may stamp the key (busy) between two tries, and its
            // epoch, stored before, must not be overwritten by an older one
            // (the key would be evicted up to a sweep period early); nor by
            // one read stale beside the sweep's stamp on the word.
            let read = peek(&self.epoch) as u16;
            let stamped = super::node::epoch_of(word);
            let epoch = if stamped.wrapping_sub(read).cast_signed() > 0 {
                stamped
            } else {
                read
            };
            // Only releases move the word meanwhile (new calls see its
            // waiters and come to the lock): `held` only falls.
            let held = word & HELD;
            if held >= per_key {
                return Grant::NoRoom;
            }
            let global = held >= reserved;
            if global && !self.take_global(true) {
                return Grant::NoGlobal;
            }
            let next = super::node::with_epoch(word + 1 - WAITER, epoch);
            match slot.word.compare_exchange(word, next, SeqCst, SeqCst) {
                Ok(_) => break,
                Err(now) => {
                    if global {
                        self.used.fetch_sub(1, SeqCst);
                    }
                    word = now;
                }
            }
        }
        // The key is in `eligible`, so in `keys` with a waiter (the caller
        // reads its rank again, and forgets it if that was the last).
        let seq = waiting
            .keys
            .get_mut(&slot_ref)
            .and_then(|queue| queue.waiters.pop_front());
        if let Some(seq) = seq {
            waiting.queued -= 1;
            if let Some(entry) = waiting.entries.get_mut(&seq) {
                entry.granted = true;
                wakes.extend(entry.wake.take());
            }
        }
        Grant::Granted
    }

    /// Whether waiter `seq` was given its slot (then forgotten: the caller
    /// holds the slot); else its waker is replaced by `wake`, if given.
    pub(crate) fn granted(&self, seq: u64, wake: Option<&std::task::Context<'_>>) -> bool {
        let replaced;
        {
            let mut waiting = lock(&self.waiting);
            let Some(entry) = waiting.entries.get_mut(&seq) else {
                return false;
            };
            if entry.granted {
                waiting.entries.remove(&seq);
                return true;
            }
            replaced = match (wake, &mut entry.wake) {
                (Some(cx), Some(stored)) => stored.update(cx),
                (Some(cx), stored @ None) => {
                    *stored = Some(Wake::Task(cx.waker().clone()));
                    None
                }
                (None, _) => None,
            };
        }
        drop(replaced);
        false
    }

    /// Waiter `seq` gives up. True if it had been given a slot meanwhile:
    /// the caller then holds it (to use, or give back).
    pub(crate) fn cancel(&self, seq: u64) -> bool {
        let mut waiting = lock(&self.waiting);
        let Some(entry) = waiting.entries.remove(&seq) else {
            return false;
        };
        if entry.granted {
            return true;
        }
        let slot_ref = entry.slot;
        if let Some(queue) = waiting.keys.get_mut(&slot_ref) {
            queue.waiters.retain(|&s| s != seq);
        }
        // Before its word stops counting this waiter: the key is alive.
        waiting.refresh(slot_ref, peek(&self.per_key));
        waiting.queued -= 1;
        // SAFETY: the key still counts this waiter.
        unsafe { slot_ref.get() }.word.fetch_sub(WAITER, SeqCst);
        // Its leaving may leave nobody waiting for a global slot.
        let mut wakes = Vec::new();
        self.dispatch(&mut waiting, &mut wakes);
        drop(waiting);
        crate::clock::wake_all(wakes);
        false
    }

    /// Changes `max_concurrent`; a raise goes to the waiters at once.
    pub(crate) fn set_cap(&self, cap: u32) {
        self.cap.store(cap, SeqCst);
        self.redispatch();
    }

    /// Changes the limit of the keys without one of their own.
    pub(crate) fn set_per_key(&self, per_key: u32) {
        self.per_key.store(per_key, SeqCst);
        self.redispatch();
    }

    /// Serves the waiters after a limit changed: every waiting key's rank
    /// read again first.
    pub(crate) fn redispatch(&self) {
        let mut wakes = Vec::new();
        {
            let mut waiting = lock(&self.waiting);
            waiting.refresh_all(peek(&self.per_key));
            self.dispatch(&mut waiting, &mut wakes);
        }
        crate::clock::wake_all(wakes);
    }
}
