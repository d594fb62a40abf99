//! Live limit changes, and the one consistent reading of the slots for a
//! snapshot (see "On a pool" in the parent module's docs).

use super::*;

impl Semaphore {
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
    pub(super) fn grant_free(
        &self,
        queue: &mut WaitQueue,
        now: Option<Instant>,
        wakes: &mut Vec<Wake>,
    ) {
        loop {
            let state = self.state.load(Acquire);
            if queue.is_empty() || is_full(state) {
                break;
            }
            if !queue
                .grant_next(now, self.eligible(state))
                .into_wakes(wakes)
            {
                break;
            }
            self.state.fetch_add(ONE, AcqRel);
        }
    }

    /// On a pool: sets the ceiling and the reservation asked for (at most
    /// the ceiling), which the pool puts in force as far as it has room.
    /// Returns the ceiling it replaced; the waiters served are in
    /// `deferred`, to wake once no lock is held.
    pub(crate) fn set_pooled_limits(
        &self,
        member: &dyn Member,
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
                    classes: self.classes.reading(held, limit),
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
                        classes: self.classes.reading(held, ceiling),
                    }
                }
            };
            drop(queue);
            drop(inner);
            return reading;
        }
    }
}
