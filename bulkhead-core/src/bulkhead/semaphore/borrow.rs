//! Borrowing a pool slot past the reservation, and giving it back (see
//! "On a pool" in the parent module's docs, and `links.rs`).

use super::*;

/// What a borrower found once it held a pool slot.
pub(super) enum Claim {
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
    /// Past the reservation: borrows a pool slot of the link field
    /// `slot` names if the ceiling allows and nobody waits ahead; a call
    /// with a class (or whose default class may not use the whole limit)
    /// as [`try_borrow_as`](Self::try_borrow_as) says.
    #[cold]
    #[inline(never)]
    pub(super) fn try_borrow(&self, slot: usize) -> Acquired {
        self.try_borrow_as(slot, self.tag_now())
    }

    /// [`try_borrow`](Self::try_borrow) for a call of the class `tag`
    /// gives (`None`: untagged): refused at its class's threshold of the
    /// ceiling, and borrowing only while fewer than its class's share of
    /// the pool's cap are lent.
    pub(super) fn try_borrow_as(&self, slot: usize, tag: Option<(Priority, ShedAt)>) -> Acquired {
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
        if let Some((class, shed_at)) = tag
            && let Some(refused) = self.refusal(class, shed_at, in_flight(state), self.ceiling())
        {
            link.repay(1);
            return refused;
        }
        let taken = match tag {
            None => link.pool.try_take(),
            Some((class, shed_at)) => link.pool.try_take_for(shed_at, class),
        };
        if !taken {
            return if link.pool.has_waiters() {
                // Free pool slots may belong to waiters: serve them first.
                self.borrow_locked(link, slot, tag)
            } else {
                link.repay(1);
                self.pool_refusal(link, tag)
            };
        }
        let acquired = match self.claim(slot) {
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
                return self.try_acquire();
            }
        };
        self.tagged(acquired, tag)
    }

    /// A borrower the pool refused: `Shed` (counted) if its class's share
    /// of the pool stopped it while the pool had room, else `Full`.
    fn pool_refusal(&self, link: &PoolLink, tag: Option<(Priority, ShedAt)>) -> Acquired {
        match tag {
            Some((class, shed_at)) if !shed_at.is_whole(class) && link.pool.room() > 0 => {
                self.classes.shed(class);
                Acquired::Shed
            }
            _ => Acquired::Full,
        }
    }

    /// `acquired`, counted in the class of `tag` if it is a slot.
    pub(super) fn tagged(&self, acquired: Acquired, tag: Option<(Priority, ShedAt)>) -> Acquired {
        match (acquired, tag) {
            (Acquired::Slot, Some((class, _))) => {
                self.classes.admit(class);
                Acquired::Classed(class)
            }
            (acquired, _) => acquired,
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
    pub(super) fn recheck_ceiling(&self, before: u32) -> Acquired {
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
    pub(super) fn claim(&self, slot: usize) -> Claim {
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
    pub(super) fn give_back(&self, link: &PoolLink) {
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
    pub(super) fn borrow_locked(
        &self,
        link: &PoolLink,
        slot: usize,
        tag: Option<(Priority, ShedAt)>,
    ) -> Acquired {
        let now = self.now();
        let pool = &link.pool;
        let mut inner = pool.lock();
        let mut deferred = Deferred::default();
        pool.serve(&mut inner, now, &mut deferred);
        let mut borrowed = false;
        let taken = match tag {
            None => pool.take_locked(&inner),
            Some((class, shed_at)) => pool.take_locked_for(&inner, shed_at, class),
        };
        let acquired = if taken {
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
            Some(self.pool_refusal(link, tag))
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
        match acquired {
            Some(acquired) => self.tagged(acquired, tag),
            None => self.try_acquire(),
        }
    }

    /// Under the pool's lock: own waiters first (a slot below the
    /// reservation) if `own` names the field `link` is in force by, then
    /// the pool's. A clock that panics is raised again afterwards if
    /// `raise`.
    #[cold]
    pub(super) fn serve_pool(&self, link: &PoolLink, own: Option<usize>, raise: bool) {
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
                if queue
                    .grant_next(now, self.eligible(state))
                    .into_wakes(&mut deferred.wakes)
                {
                    self.state.fetch_add(ONE, Acquire);
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

    /// The place (class, then ticket) of the waiter a pool slot would go
    /// to, if one its class's share admits waits and the ceiling allows
    /// one more call.
    pub(crate) fn next_borrower(&self) -> Option<Order> {
        self.current()?;
        let queue = lock(&self.queue);
        if self.in_flight() >= self.ceiling() {
            return None;
        }
        let eligible = self.eligible(self.state.load(Acquire));
        queue.next_order(eligible)
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
        let served = queue.grant_next(now, self.eligible(self.state.load(Acquire)));
        let granted = served.into_wakes(&mut deferred.wakes).then(|| {
            let before = self.state.fetch_add(ONE, AcqRel);
            !is_full(before)
        });
        self.queue_changed(&queue);
        granted
    }
}
