//! Queueing a caller that found no free slot, and its wake-ups and
//! withdrawal (see "Why no wake-up is lost" and "Deadlines" in the parent
//! module's docs).

use super::borrow::Claim;
use super::*;
use crate::bulkhead::queue::{Arrival, CLASSES, Discipline};

/// The link in force and its pool's lock, if on a pool.
pub(super) type Locked<'a> = Option<(&'a PoolLink, MutexGuard<'a, Inner>)>;

/// Withdraws a queued waiter when dropped.
#[derive(Debug)]
struct CancelOnDrop<'a> {
    semaphore: &'a Semaphore,
    key: WaiterKey,
    clock: &'a Arc<dyn Clock>,
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        self.semaphore.cancel(self.key, self.clock);
    }
}

impl Semaphore {
    /// Takes a slot that came free, or queues the caller until `deadline`
    /// (`None`: no deadline), as a caller of class `NORMAL` (1) that started
    /// waiting at `now` (see [`enqueue_as`](Self::enqueue_as)).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn enqueue(
        &self,
        kind: Kind,
        wake: Wake,
        deadline: Option<Instant>,
        now: Option<Instant>,
    ) -> Enqueued {
        self.enqueue_as(Arrival::normal(kind, deadline, now), wake, now)
    }

    /// Takes a slot that came free, or queues the caller `arrival`
    /// describes until its deadline. A thread ([`Kind::Thread`]) that would
    /// queue takes instead the slot offered to a waiting thread of its class
    /// or below that has not woken up to take it yet, if that waiter's
    /// deadline has not passed at `now` (see [`WaitQueue::take_offer`]). A
    /// bulkhead on a pool does not barge: its waiters are served in arrival
    /// order across the pool.
    pub(crate) fn enqueue_as(
        &self,
        arrival: Arrival,
        wake: Wake,
        now: Option<Instant>,
    ) -> Enqueued {
        let mut wake = wake;
        loop {
            let slot = link_of(self.state.load(Acquire));
            let tried = match self.link(slot) {
                Some(link) => self.enqueue_pooled(link, slot, arrival, wake, now),
                None => self.enqueue_alone(arrival, wake, now),
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
    pub(super) fn enqueue_alone(
        &self,
        arrival: Arrival,
        wake: Wake,
        now: Option<Instant>,
    ) -> Result<Enqueued, Wake> {
        let mut queue = lock(&self.queue);
        let mut state = self.state.load(Acquire);
        if link_of(state) != 0 {
            return Err(wake);
        }
        loop {
            if self.disabled {
                return Ok(Enqueued::Done(Acquired::Uncounted));
            }
            let queue_up = is_closed(state);
            if queue_up && arrival.kind == Kind::Thread && queue.take_offer(now, arrival.class) {
                // The slot stays counted in flight, now ours; its waiter
                // is queued again, so WAITERS must be set (the offer may
                // have emptied the queue and cleared it).
                self.state.fetch_or(WAITERS, AcqRel);
                self.waiting.store(queue.len(), Relaxed);
                return Ok(Enqueued::Done(Acquired::Slot));
            }
            // A slot free under the limit that no queued waiter may take
            // (each one's class at its threshold, after its share was
            // lowered) is a newcomer's whose class may take it (P3).
            let stranded = queue_up && state & WAITERS != 0 && !is_full(state) && {
                let eligible = self.eligible(state);
                eligible & (1 << arrival.class) != 0 && !queue.has_eligible(eligible)
            };
            if queue_up && state & WAITERS != 0 && !stranded {
                break;
            }
            let next = if queue_up && !stranded {
                state | WAITERS
            } else {
                state + ONE
            };
            match self.state.compare_exchange(state, next, AcqRel, Acquire) {
                Ok(_) if queue_up && !stranded => break,
                Ok(_) => return Ok(Enqueued::Done(Acquired::Slot)),
                Err(actual) => state = actual,
            }
        }
        let key = queue.push(arrival, wake);
        self.queue_changed(&queue);
        Ok(Enqueued::Queued(key))
    }

    /// [`enqueue`](Self::enqueue) on a pool: a reserved slot, else a pool
    /// slot once the older waiters a pool slot can serve were served, else
    /// the queue, with the pool's waiters flag set while no pool slot is
    /// free (so that the release of one serves it). `now` is the caller's
    /// reading if it took one (a blocking caller, for its deadline), else
    /// one is taken here.
    pub(super) fn enqueue_pooled(
        &self,
        link: &PoolLink,
        slot: usize,
        arrival: Arrival,
        wake: Wake,
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
            if self.disabled {
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
            let key = queue.push_ticketed(arrival, wake, ticket);
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
    pub(super) fn lock_both(&self) -> (Locked<'_>, MutexGuard<'_, WaitQueue>) {
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
    pub(super) fn unlock_both(&self, locked: Locked<'_>, queue: MutexGuard<'_, WaitQueue>) {
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
            Status::Expired | Status::Refused => {
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

    /// Sets how the waiters of one class are ordered (the `queue`,
    /// `queue_target` and `queue_interval` keys).
    pub(crate) fn set_discipline(&self, discipline: Discipline) {
        lock(&self.queue).set_discipline(discipline);
    }

    /// How the waiters of one class are ordered now.
    pub(crate) fn discipline(&self) -> Discipline {
        lock(&self.queue).discipline()
    }

    /// How many waiters the `codel` discipline refused, per class (lowest
    /// first).
    pub(crate) fn refused_by_queue(&self) -> [u64; CLASSES] {
        lock(&self.queue).refused()
    }

    /// Blocks the calling thread until it gets a slot or `deadline` passes on
    /// `clock` (`None`: no deadline), as a caller of `class` (0 to 3, 3 the
    /// highest); `now` is the clock's time as it starts waiting.
    pub(crate) fn acquire_blocking_as(
        &self,
        clock: &Arc<dyn Clock>,
        class: u8,
        now: Instant,
        deadline: Option<Instant>,
    ) -> Acquired {
        let wake = Wake::Thread(thread::current());
        let arrival = Arrival {
            kind: Kind::Thread,
            class,
            deadline,
            since: Some(now),
        };
        let key = match self.enqueue_as(arrival, wake, Some(now)) {
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
}
