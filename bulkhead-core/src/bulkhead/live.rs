//! A live bulkhead's limits and what changes them: `set_max_concurrent`,
//! `set_reserved`, and the hooks a registry calls (a fleet share's cap,
//! the room of a resource's budget, a move to another resource's pool),
//! all through [`Shared::change_limits`] or the semaphore's move.

use super::*;

/// What the limit in force is made of.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    /// `max_concurrent`: from the configuration, or `set_max_concurrent`;
    /// an adaptive bulkhead's ceiling.
    pub(super) configured: u32,
    /// The limit an adaptive bulkhead's algorithm set last (at most the
    /// ceiling), `None` for a bulkhead that does not adapt.
    pub(super) adaptive: Option<u32>,
    /// A bound set from outside (`set_limit_cap`), possibly 0.
    pub(super) cap: Option<u32>,
    /// `reserved`, if given: on a pool, the slots kept for this bulkhead
    /// (else all of the limit in force).
    pub(super) reserved: Option<u32>,
}

impl Limits {
    pub(super) fn in_force(self) -> u32 {
        let limit = self.adaptive.unwrap_or(self.configured);
        self.cap.map_or(limit, |cap| cap.min(limit))
    }

    /// The reservation asked of the pool: at most the limit in force.
    pub(super) fn reserved(self) -> u32 {
        let in_force = self.in_force();
        self.reserved.map_or(in_force, |r| r.min(in_force))
    }
}

impl Bulkhead {
    /// Makes an adaptive bulkhead grow only into `room`, the free room of
    /// its resource's budget (`None`: no budget), lowering its limit at
    /// once if the room cannot hold it; nothing for a bulkhead that does
    /// not adapt. The registry calls it for the bulkheads on a resource
    /// with a budget.
    pub fn set_room(&self, room: Option<Arc<Room>>) {
        let shared = &*self.shared;
        if let Some(limiter) = &shared.adaptive {
            limiter.set_room(shared, room);
        }
    }

    /// Lowers an adaptive bulkhead's limit, down to its `min_concurrent`,
    /// as far as its room holds more than the room's capacity now allows
    /// (after the capacity was lowered); nothing otherwise.
    pub fn reclaim_room(&self) {
        let shared = &*self.shared;
        if let Some(limiter) = &shared.adaptive {
            limiter.reclaim(shared);
        }
    }

    /// Whether the bulkhead is on `pool` now.
    pub fn is_on(&self, pool: &SharedPool) -> bool {
        self.shared
            .semaphore
            .pool()
            .is_some_and(|on| Arc::ptr_eq(on, &pool.pool))
    }

    /// Moves the live bulkhead to `pool` (`None`: off any pool), as a
    /// registry does when a reload moves it to another resource or takes it
    /// off its resource.
    ///
    /// Its calls in flight move with it: the old pool gets back at once the
    /// slots they held of it, the new one counts those past the bulkhead's
    /// new reservation as borrowed (past its budget if need be: then
    /// nobody borrows there until they have finished, as after a lowered
    /// budget). The reservation takes effect there as far as the pool has
    /// room, the rest as borrowed slots come back; its waiters keep waiting,
    /// in the new pool's arrival order behind those already there. A
    /// disabled bulkhead stays off every pool.
    ///
    /// A bulkhead may move any number of times. It keeps a small record of
    /// each distinct pool it has been on (one per pool, not per move) for
    /// its life, so that a release racing a move gives its slot back to
    /// the pool that lent it; a move may wait for such releases to finish
    /// giving back (a few instructions each), never for a call to end.
    ///
    /// # Examples
    ///
    /// ```
    /// use bulkhead_core::{Bulkhead, BulkheadConfig, PolicyContext, SharedPool};
    ///
    /// let config = BulkheadConfig::builder().max_concurrent(4).reserved(1).build()?;
    /// let reports = Bulkhead::new("reports", config);
    /// let held: Vec<_> = (0..3).map(|_| reports.try_enter()).collect::<Result<_, _>>()?;
    ///
    /// // A budget of 2: the bulkhead keeps its 1 reserved slot, and its two
    /// // other calls count as borrowed (past the pool's 1 free slot).
    /// let pool = SharedPool::new(2);
    /// reports.move_to_pool(Some(&pool));
    /// assert_eq!((reports.reserved(), reports.borrowed(), pool.borrowed()), (1, 2, 2));
    /// assert!(reports.try_enter().is_err());
    /// drop(held);
    /// assert_eq!(pool.borrowed(), 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn move_to_pool(&self, pool: Option<&SharedPool>) {
        let shared = &self.shared;
        if !shared.config.enabled() {
            return;
        }
        let member: Weak<dyn Member> = Arc::downgrade(&self.shared) as Weak<Shared>;
        let clock = shared.context.clock();
        let now = clock.now();
        let limits = lock(&shared.limits);
        let mut deferred = Deferred::default();
        shared.semaphore.move_to(
            member,
            pool.map(|pool| &pool.pool),
            limits.reserved(),
            limits.in_force(),
            clock,
            Some(now),
            &mut deferred,
        );
        drop(limits);
        deferred.finish();
    }

    /// Changes the limit at once, without blocking callers, and publishes a
    /// `LimitChanged` event if the limit in force changed (a cap, set by a
    /// fleet resource, keeps it at most the cap). On an adaptive bulkhead it
    /// moves the ceiling instead: the limit in force is lowered to it if
    /// above, and the algorithm grows into a raised one.
    ///
    /// Raising it hands the new slots to waiting callers. Lowering it below
    /// the calls in flight lets them finish; new calls are admitted only once
    /// fewer than the new limit are in flight. Waiting callers keep waiting
    /// (with their original deadline) for a slot under the new limit.
    ///
    /// # Errors
    ///
    /// ATR-003 if `max_concurrent` is out of range; ATR-015 if it is below
    /// an adaptive bulkhead's `min_concurrent`.
    pub fn set_max_concurrent(&self, max_concurrent: u32) -> Result<(), ConfigError> {
        let max = self
            .shared
            .config
            .with_max_concurrent(max_concurrent)?
            .max_concurrent();
        if let Some(limiter) = &self.shared.adaptive {
            limiter.set_ceiling(&self.shared, max);
            return Ok(());
        }
        self.shared.change_limits(|limits| limits.configured = max);
        Ok(())
    }

    /// Caps the limit in force at `cap`, which may be 0 (`None` lifts the
    /// cap): the bulkhead then admits calls up to the smaller of its
    /// configured `max_concurrent` and the cap, by the same live-resize
    /// path as [`set_max_concurrent`](Self::set_max_concurrent) (calls in
    /// flight finish, waiters keep their place and deadline). The
    /// configured limit is kept: [`config`](Self::config) still shows it,
    /// and changing it keeps the limit in force under the cap. An adaptive
    /// bulkhead's algorithm works under the cap as under its ceiling.
    /// Publishes `LimitChanged` if the limit in force changed; returns it.
    ///
    /// Not for applications: a registry's fleet resource sets it to the
    /// bulkhead's part of the process's share, and takes it back on its
    /// next renewal.
    #[doc(hidden)]
    pub fn set_limit_cap(&self, cap: Option<u32>) -> u32 {
        match &self.shared.adaptive {
            Some(limiter) => limiter.set_cap(&self.shared, cap),
            None => self.shared.change_limits(|limits| limits.cap = cap),
        }
    }

    /// Changes `reserved` at once (`None`: all of `max_concurrent`), by
    /// the live-resize path. On a pool, a lower reservation gives slots
    /// back to it at once; a higher one takes effect as far as the pool
    /// has room, the rest as borrowed slots come back. Off a pool it only
    /// changes the configuration.
    ///
    /// # Errors
    ///
    /// ATR-008 if `reserved` is out of range, ATR-016 if it is above the
    /// configured `max_concurrent`.
    pub fn set_reserved(&self, reserved: Option<u32>) -> Result<(), ConfigError> {
        let limits = *lock(&self.shared.limits);
        if let Some(reserved) = reserved {
            let mut builder = BulkheadConfig::builder()
                .max_concurrent(limits.configured)
                .reserved(reserved);
            builder = builder.enabled(true);
            builder.build()?;
        }
        self.shared
            .change_limits(|limits| limits.reserved = reserved);
        if let Some(limiter) = &self.shared.adaptive {
            limiter.set_reserved(&self.shared, reserved);
        }
        Ok(())
    }

    /// Sets how many slots in a row a newcomer may take from one blocked
    /// thread that was handed a slot but has not woken up to take it yet
    /// (see [`enter`](Self::enter)); 0 reserves every handed slot for its
    /// waiter (strict first-come-first-served among threads).
    ///
    /// Not for applications: benchmarks compare the two behaviours with
    /// it.
    #[doc(hidden)]
    pub fn set_barging(&self, barging: u32) {
        self.shared.semaphore.set_barging(barging);
    }

    /// Changes how the waiters are served (the keys `queue`,
    /// `queue_target` and `queue_interval`), from the next hand-off on:
    /// the callers already waiting stay, ordered by the new discipline. A
    /// registry's reload calls it.
    ///
    /// # Errors
    ///
    /// ATR-019 if `queue` is `lifo` or `codel` and `target` is zero or not
    /// below `interval`; nothing changes then.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_core::{Bulkhead, BulkheadConfig, QueueDiscipline};
    ///
    /// let bulkhead = Bulkhead::new("search", BulkheadConfig::default());
    /// let ms = Duration::from_millis;
    /// bulkhead.set_queue(QueueDiscipline::Lifo, ms(10), ms(100))?;
    /// assert_eq!(bulkhead.config().queue(), QueueDiscipline::Lifo);
    /// let err = bulkhead.set_queue(QueueDiscipline::Codel, ms(100), ms(100)).unwrap_err();
    /// assert_eq!(err.code(), "ATR-019");
    /// assert_eq!(bulkhead.config().queue_target(), ms(10));
    /// # Ok::<(), bulkhead_core::ConfigError>(())
    /// ```
    pub fn set_queue(
        &self,
        queue: crate::QueueDiscipline,
        target: std::time::Duration,
        interval: std::time::Duration,
    ) -> Result<(), ConfigError> {
        queue.check_target("queue_target", target, interval)?;
        self.shared.semaphore.set_discipline(queue::Discipline {
            queue,
            target,
            interval,
        });
        Ok(())
    }

    /// How many waiters the `codel` queue discipline refused, per class
    /// (Sheddable, Normal, High, Critical), since the bulkhead was made.
    /// Each is also a rejection (`BulkheadFull`, published as `Rejected`
    /// with `waited: true`).
    ///
    /// For the snapshots to read; not a stable interface yet.
    #[doc(hidden)]
    pub fn refused_by_queue(&self) -> [u64; 4] {
        self.shared.semaphore.refused_by_queue()
    }
}

impl Shared {
    /// Changes the limits with `change` and applies the limit in force
    /// that follows, publishing `LimitChanged` if it changed; returns it.
    #[cold]
    pub(super) fn change_limits(&self, change: impl FnOnce(&mut Limits)) -> u32 {
        // The clock is read before our lock, the waiters are woken after it:
        // no user code runs under it.
        let now = self.context.clock().now();
        let mut limits = lock(&self.limits);
        change(&mut limits);
        let to = limits.in_force();
        let from = if self.semaphore.is_pooled() {
            let mut deferred = Deferred::default();
            let from =
                self.semaphore
                    .set_pooled_limits(self, limits.reserved(), to, now, &mut deferred);
            drop(limits);
            deferred.finish();
            from
        } else {
            let (from, wakes) = self.semaphore.set_max(to, now);
            drop(limits);
            wake_all(wakes);
            from
        };
        if from != to {
            let instance = self.instance;
            self.context.publish(|at| {
                Event::Bulkhead(BulkheadEvent {
                    instance,
                    kind: BulkheadEventKind::LimitChanged { from, to },
                    at,
                })
            });
        }
        to
    }
}

impl Member for Shared {
    fn reserved_in_force(&self) -> u32 {
        self.semaphore.max()
    }

    fn set_reserved_in_force(&self, to: u32, now: Option<Instant>, deferred: &mut Deferred) -> u32 {
        self.semaphore.set_word_limit(to, now, deferred)
    }

    fn next_borrower(&self) -> Option<super::queue::Order> {
        self.semaphore.next_borrower()
    }

    fn grant_borrowed(&self, now: Option<Instant>, deferred: &mut Deferred) -> Option<bool> {
        self.semaphore.grant_borrowed(now, deferred)
    }

    fn waiting(&self) -> u32 {
        self.semaphore.waiting()
    }

    fn owe(&self, slots: u32) {
        self.semaphore.owe(slots);
    }

    fn repay(&self, slots: u32) {
        self.semaphore.repay(slots);
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if let Some(pool) = self.semaphore.pool() {
            pool.leave(self as *const Shared as *const ());
        }
    }
}
