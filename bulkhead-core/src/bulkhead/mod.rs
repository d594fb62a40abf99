//! The bulkhead: a fixed number of slots that calls to one dependency share,
//! so that a slow dependency can use up only its own share of concurrency.
//!
//! [`Bulkhead`] is one semaphore for sync and async callers alike:
//!
//! - [`try_enter`](Bulkhead::try_enter) takes a free slot or fails at once;
//! - [`enter`](Bulkhead::enter) blocks the thread up to `max_wait`;
//! - [`enter_async`](Bulkhead::enter_async) waits up to `max_wait` without
//!   blocking, first come first served.
//!
//! Each returns a [`BulkheadPermit`] that gives the slot back when dropped.
//! An adaptive bulkhead (`adaptive/`) moves its own limit.

pub(crate) mod adaptive;
mod config;
mod enter;
mod links;
mod occupancy;
mod permit;
mod pool;
mod queue;
mod semaphore;
mod shared_pool;
mod traffic;

#[cfg(all(test, not(loom)))]
mod barging_tests;
#[cfg(all(test, not(loom)))]
mod cap_tests;
#[cfg(all(test, not(loom)))]
mod pool_tests;

pub use config::{BulkheadConfig, BulkheadConfigBuilder};
pub use enter::Enter;
pub use occupancy::Occupancy;
pub use permit::{BulkheadPermit, OwnedBulkheadPermit};
pub use shared_pool::{Pools, SharedPool};
pub use traffic::Traffic;

use std::fmt;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::sync::{Arc, Weak};
use std::time::Instant;

use crate::clock::{Timeline, wake_all};
use crate::config::ConfigError;
use crate::context::PolicyContext;
use crate::events::{BulkheadEvent, BulkheadEventKind, Event};
use crate::intern::intern;
use crate::loom::{Mutex, lock};
use crate::rejection::BulkheadFull;
use adaptive::{AdaptiveSnapshot, CallOutcome, Limiter, Room};
use permit::Held;
use pool::{Deferred, Member};
use semaphore::{Acquired, Released, Semaphore};
use traffic::Counters;

/// A bulkhead: at most `max_concurrent` calls hold a slot at once.
///
/// Cheap to clone; clones share the same slots. Sync and async callers use the
/// same slots. When both kinds wait, released slots go alternately to the
/// oldest async waiter and to the oldest blocked thread.
///
/// # Examples
///
/// ```
/// use bulkhead_core::{Bulkhead, BulkheadConfig};
///
/// let config = BulkheadConfig::builder().max_concurrent(1).build()?;
/// let bulkhead = Bulkhead::new("renderer", config);
///
/// let permit = bulkhead.try_enter()?;            // takes the only slot
/// assert_eq!(bulkhead.concurrent_calls(), 1);
/// let rejected = bulkhead.try_enter().unwrap_err();
/// assert_eq!(rejected.instance(), "renderer");
/// drop(permit);                                   // gives it back
/// assert!(bulkhead.try_enter().is_ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Bulkhead {
    shared: Arc<Shared>,
}

struct Shared {
    semaphore: Semaphore,
    /// Present when the registry tracks sizing.
    traffic: Option<Box<Counters>>,
    /// Present when the bulkhead adapts its limit (and is enabled).
    adaptive: Option<Box<Limiter>>,
    /// Whether admitted calls are timed: for sizing, or to adapt.
    timed: bool,
    /// The clock's readings as stamps, for hold times.
    timeline: Timeline,
    /// `max_wait > 0`: whether a caller who finds no free slot waits.
    waits: bool,
    /// Whether a rejection has nothing to do but publish its event (the
    /// bulkhead neither waits nor counts its traffic): then a rejected call
    /// that finds nobody listening returns at once, with no call.
    quiet: bool,
    instance: &'static str,
    config: BulkheadConfig,
    context: PolicyContext,
    /// The configured limit (or the algorithm's) and the cap over it. The
    /// semaphore's limit, the limit in force, is the smaller of the two;
    /// it is set under this lock so that two changes cannot apply their
    /// results out of order. An adaptive bulkhead's controller, whose lock
    /// is taken first, sets it too.
    limits: Mutex<Limits>,
}

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
    reserved: Option<u32>,
}

impl Limits {
    fn in_force(self) -> u32 {
        let limit = self.adaptive.unwrap_or(self.configured);
        self.cap.map_or(limit, |cap| cap.min(limit))
    }

    /// The reservation asked of the pool: at most the limit in force.
    fn reserved(self) -> u32 {
        let in_force = self.in_force();
        self.reserved.map_or(in_force, |r| r.min(in_force))
    }
}

impl Bulkhead {
    /// A bulkhead on the system clock that publishes no events.
    ///
    /// The instance id is interned: each distinct id is kept for the life of
    /// the process (so that rejections can name it without allocating).
    /// Ids are meant to name the dependencies of a program, a bounded set;
    /// do not build one per request or per tenant.
    pub fn new(instance: &str, config: BulkheadConfig) -> Self {
        Bulkhead::with_context(instance, config, PolicyContext::default())
    }

    /// A bulkhead measuring `max_wait` on the context's clock and publishing
    /// rejections to its event bus.
    ///
    /// An adaptive bulkhead starts at `initial_concurrent`; its probes are
    /// timed by a generator seeded by its instance id, so that a run on a
    /// `ManualClock` repeats.
    ///
    /// If the context has [`Pools`] and the configuration names a resource
    /// that has one, the bulkhead joins that pool (see
    /// [`with_pool`](Self::with_pool)).
    pub fn with_context(instance: &str, config: BulkheadConfig, context: PolicyContext) -> Self {
        let pool = config
            .resource()
            .and_then(|resource| context.pools()?.get(resource));
        match pool {
            Some(pool) => Bulkhead::with_pool(instance, config, context, &pool),
            None => Bulkhead::build(instance, config, context, None),
        }
    }

    /// A bulkhead on `pool`: it keeps its `reserved` slots of the pool's
    /// budget for itself and, above them up to `max_concurrent`, borrows
    /// the slots nobody reserved. A call within the reservation costs what
    /// it costs on a plain bulkhead; borrowing touches one more atomic.
    ///
    /// The reservation takes effect at once as far as the pool has room,
    /// the rest as borrowed slots come back (a registry refuses, REG-010,
    /// reservations that add up to more than the budget). A disabled
    /// bulkhead stays off the pool. Dropping the last clone gives the
    /// reservation back.
    pub fn with_pool(
        instance: &str,
        config: BulkheadConfig,
        context: PolicyContext,
        pool: &SharedPool,
    ) -> Self {
        if !config.enabled() {
            return Bulkhead::build(instance, config, context, None);
        }
        let bulkhead = Bulkhead::build(instance, config, context, Some(pool));
        let shared = &bulkhead.shared;
        let member: Weak<dyn Member> = Arc::downgrade(&bulkhead.shared) as Weak<Shared>;
        let reserved = lock(&shared.limits).reserved();
        let now = shared.context.clock().now();
        pool.pool.join(member, reserved, Some(now));
        bulkhead
    }

    fn build(
        instance: &str,
        config: BulkheadConfig,
        context: PolicyContext,
        pool: Option<&SharedPool>,
    ) -> Self {
        let timeline = Timeline::new(Arc::clone(context.clock()));
        let seed = BuildHasherDefault::<DefaultHasher>::default().hash_one(instance);
        let adaptive = config
            .enabled()
            .then(|| Limiter::new(&config, seed, timeline.recent()))
            .flatten()
            .map(Box::new);
        let limit = adaptive
            .as_ref()
            .map_or(config.max_concurrent(), |limiter| limiter.initial_limit());
        let algorithm = adaptive.as_ref().map(|_| limit);
        let traffic: Option<Box<Counters>> = context.tracks_sizing().then(Box::default);
        let semaphore = match pool {
            None => Semaphore::new(limit, config.enabled()),
            Some(pool) => {
                Semaphore::pooled(limit, Arc::clone(&pool.pool), Arc::clone(context.clock()))
            }
        };
        Bulkhead {
            shared: Arc::new(Shared {
                semaphore,
                timed: traffic.is_some() || adaptive.is_some(),
                traffic,
                adaptive,
                timeline,
                waits: !config.max_wait().is_zero(),
                quiet: config.max_wait().is_zero() && !context.tracks_sizing(),
                instance: intern(instance),
                limits: Mutex::new(Limits {
                    configured: config.max_concurrent(),
                    adaptive: algorithm,
                    cap: None,
                    reserved: config.reserved_set(),
                }),
                config,
                context,
            }),
        }
    }

    /// The instance id.
    pub fn instance(&self) -> &'static str {
        self.shared.instance
    }

    /// The configuration, with the configured limit: the last
    /// [`set_max_concurrent`](Self::set_max_concurrent), which a cap may
    /// hold the limit in force ([`max_concurrent`](Self::max_concurrent))
    /// below; for an adaptive bulkhead, its ceiling (the most its
    /// algorithm may allow).
    pub fn config(&self) -> BulkheadConfig {
        let limits = *lock(&self.shared.limits);
        self.shared
            .config
            .with_live_limits(limits.configured, limits.reserved)
    }

    /// Takes a free slot, or fails at once with [`BulkheadFull`] whatever
    /// `max_wait` says.
    ///
    /// # Errors
    ///
    /// [`BulkheadFull`] if every slot is taken.
    #[inline]
    pub fn try_enter(&self) -> Result<BulkheadPermit<'_>, BulkheadFull> {
        let shared = &*self.shared;
        shared.permit_or_reject(shared.semaphore.try_acquire(), false)
    }

    /// Takes a slot, blocking the current thread up to `max_wait` (measured on
    /// the clock) for one to come free.
    ///
    /// Waiting threads are served in arrival order among themselves: a
    /// released slot is handed to the oldest waiter. While its thread wakes
    /// up, another caller of `enter` that would otherwise wait may take the
    /// slot instead, so that it does not idle while a parked thread is
    /// scheduled; the waiter keeps its place, loses a slot this way at most
    /// 16 times in a row, and never once its deadline has passed (rule B3 of
    /// the [bulkhead rules]). Callers that do not wait
    /// ([`try_enter`](Self::try_enter), or `max_wait` zero) never take a
    /// slot handed to a waiter, and on a pool ([`with_pool`](Self::with_pool))
    /// no caller does: waiters there keep their arrival order across the
    /// pool. While async callers wait too, released
    /// slots alternate between the two kinds (B7). A `max_wait` too large
    /// to add to the clock's time means waiting without a deadline.
    ///
    /// This blocks the calling thread: from async code, use
    /// [`enter_async`](Self::enter_async).
    ///
    /// # Errors
    ///
    /// [`BulkheadFull`] if no slot came free in time.
    ///
    /// [bulkhead rules]: https://docs.rs/bulkhead/latest/bulkhead/guide/bulkhead/index.html
    #[inline]
    pub fn enter(&self) -> Result<BulkheadPermit<'_>, BulkheadFull> {
        let shared = &*self.shared;
        // The out-of-line paths return small values in registers, not the
        // result (a result written through a pointer by a call keeps the
        // whole result in memory, stored and reloaded, on the inlined fast
        // paths too): `wait_or_reject` the slot it waited for, or `Full` once
        // it counted and published the rejection; a timed bulkhead's
        // admission its stamp. The error is a copy of the instance id. So a
        // caller that inlines this (a generated wrapper) keeps only a load,
        // a compare and a CAS; a rejection that has nothing to count or
        // publish returns at once, any other makes a call.
        let acquired = match shared.semaphore.try_acquire() {
            Acquired::Full if shared.rejects_quietly() => {
                return Err(BulkheadFull::new(shared.instance));
            }
            Acquired::Full => match shared.wait_or_reject() {
                Acquired::Full => return Err(BulkheadFull::new(shared.instance)),
                acquired => acquired,
            },
            acquired => acquired,
        };
        Ok(shared.admit(acquired))
    }

    /// For generated wrappers: what [`enter`](Self::enter) would return, if
    /// it can be had at once without a call, `None` otherwise. A free slot
    /// of the plain word is taken; a full bulkhead that neither waits nor
    /// counts and has no listener rejects; anything else (a wait, a pool to
    /// borrow from, a rejection to count or publish, a disabled bulkhead,
    /// a compare-exchange lost to another caller) is left to `enter`,
    /// which then decides as always. Inlined, it is a few loads, a test
    /// and a compare-exchange, so that a wrapper keeps everything else out
    /// of line and needs no frame of its own.
    #[doc(hidden)]
    #[inline]
    pub fn enter_at_once(&self) -> Option<Result<BulkheadPermit<'_>, BulkheadFull>> {
        let shared = &*self.shared;
        match shared.semaphore.try_acquire_once()? {
            Acquired::Full if shared.rejects_quietly() => {
                Some(Err(BulkheadFull::new(shared.instance)))
            }
            Acquired::Full => None,
            acquired => Some(Ok(shared.admit(acquired))),
        }
    }

    /// Like [`enter`](Self::enter), but waits no later than `deadline` (an
    /// outer timeout's) either: the wait ends at whichever comes first, the
    /// bulkhead's own `max_wait` or `deadline`. A bulkhead with `max_wait`
    /// zero still rejects at once.
    ///
    /// # Errors
    ///
    /// [`EnterError::Full`] if `max_wait` ran out (or is zero) first,
    /// [`EnterError::DeadlineReached`] if `deadline` came first (no rejection
    /// event is published for it: it is the timeout's to report).
    pub fn enter_until(&self, deadline: Option<Instant>) -> Result<BulkheadPermit<'_>, EnterError> {
        self.enter_until_with(|| deadline)
    }

    /// [`enter_until`](Self::enter_until) with the outer deadline computed
    /// only if the caller has to wait (a timeout reads the clock for it).
    ///
    /// Always inlined: a sync `Pipeline` inlines its whole attempt, and
    /// LLVM then left this out of line, its result written in memory and
    /// read back by a wider load, which stalls on store forwarding (a sync
    /// pipeline with a bulkhead measured 20.9 ns that way, 16.6 inlined).
    #[inline(always)]
    pub(crate) fn enter_until_with(
        &self,
        deadline: impl FnOnce() -> Option<Instant>,
    ) -> Result<BulkheadPermit<'_>, EnterError> {
        let shared = &*self.shared;
        match shared.semaphore.try_acquire() {
            Acquired::Full if shared.waits => shared.enter_blocking_until(deadline()),
            acquired => shared
                .permit_or_reject(acquired, false)
                .map_err(EnterError::Full),
        }
    }

    /// Takes a slot, waiting without blocking a thread up to `max_wait`.
    ///
    /// Nothing happens until the future is first polled. See [`Enter`] for
    /// the queueing and cancellation rules.
    #[inline]
    pub fn enter_async(&self) -> Enter<'_> {
        Enter::new(self)
    }

    /// Like [`try_enter`](Self::try_enter), with a permit that can move to
    /// another thread or task.
    ///
    /// # Errors
    ///
    /// [`BulkheadFull`] if every slot is taken.
    #[inline]
    pub fn try_enter_owned(&self) -> Result<OwnedBulkheadPermit, BulkheadFull> {
        self.try_enter()
            .map(|permit| OwnedBulkheadPermit::new(self, permit))
    }

    /// Like [`enter`](Self::enter), with a permit that can move to another
    /// thread or task.
    ///
    /// # Errors
    ///
    /// [`BulkheadFull`] if no slot came free in time.
    pub fn enter_owned(&self) -> Result<OwnedBulkheadPermit, BulkheadFull> {
        self.enter()
            .map(|permit| OwnedBulkheadPermit::new(self, permit))
    }

    /// Like [`enter_async`](Self::enter_async), with a permit that can move
    /// to another thread or task.
    ///
    /// # Errors
    ///
    /// [`BulkheadFull`] if no slot came free in time.
    pub async fn enter_owned_async(&self) -> Result<OwnedBulkheadPermit, BulkheadFull> {
        let permit = self.enter_async().await?;
        Ok(OwnedBulkheadPermit::new(self, permit))
    }

    /// The bulkhead's traffic since it was created, if its registry tracks
    /// sizing (`Registry::builder().track_sizing(true)`).
    pub fn traffic(&self) -> Option<Traffic> {
        self.shared.traffic.as_deref().map(Counters::read)
    }

    /// How many calls hold a slot now (0 when disabled).
    pub fn concurrent_calls(&self) -> u32 {
        self.shared.semaphore.in_flight()
    }

    /// How many callers wait for a slot now; for monitoring only.
    pub fn waiting_calls(&self) -> u32 {
        self.shared.semaphore.waiting()
    }

    /// The limit in force: the configured `max_concurrent` (for an adaptive
    /// bulkhead, the limit its algorithm set last), or less while a cap
    /// holds it lower (a fleet resource's share; it may then be 0).
    pub fn max_concurrent(&self) -> u32 {
        self.shared.semaphore.limit()
    }

    /// The slots of its pool's budget kept for this bulkhead now: its
    /// `reserved`, at most the limit in force, less what the pool has had
    /// no room for yet. Off a pool, the limit in force.
    pub fn reserved(&self) -> u32 {
        self.shared.semaphore.max()
    }

    /// One consistent reading of the slots: the calls in flight, those
    /// waiting, the limit in force, what is free, reserved and borrowed,
    /// all as they stood at one instant (and, on an adaptive bulkhead, its
    /// algorithm's snapshot at the same instant). The getters
    /// ([`concurrent_calls`](Self::concurrent_calls),
    /// [`available`](Self::available), ...) each read one field at its
    /// own moment; while limits change, only this reading is sure to
    /// agree with itself: `available <= max_concurrent`, `reserved <=
    /// max_concurrent`, and `concurrent_calls + available <=
    /// max_concurrent` unless `available` is 0.
    ///
    /// It takes the locks that every change of a limit takes (the pool's
    /// and the wait queue's), never the path of a call with a free slot:
    /// for monitoring.
    ///
    /// # Examples
    ///
    /// ```
    /// use bulkhead_core::{Bulkhead, BulkheadConfig};
    ///
    /// let bulkhead = Bulkhead::new("reports", BulkheadConfig::builder().max_concurrent(3).build()?);
    /// let _permit = bulkhead.try_enter()?;
    /// let now = bulkhead.occupancy();
    /// assert_eq!((now.concurrent_calls, now.available, now.max_concurrent), (1, 2, 3));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn occupancy(&self) -> Occupancy {
        let shared = &*self.shared;
        match &shared.adaptive {
            None => Occupancy::new(shared.semaphore.reading(), None),
            Some(limiter) => {
                let (adaptive, reading) =
                    limiter.snapshot_with(shared, || shared.semaphore.reading());
                Occupancy::new(reading, Some(adaptive))
            }
        }
    }

    /// What an adaptive bulkhead's algorithm knows now (its bounds, the
    /// limit in force, its latency estimates and counts); `None` for a
    /// bulkhead that does not adapt.
    pub fn adaptive(&self) -> Option<AdaptiveSnapshot> {
        let shared = &*self.shared;
        shared.adaptive.as_ref().map(|l| l.snapshot(shared))
    }

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

    /// How many calls hold borrowed slots now: the calls in flight beyond
    /// [`reserved`](Self::reserved) (0 off a pool).
    pub fn borrowed(&self) -> u32 {
        if self.shared.semaphore.is_pooled() {
            self.shared.semaphore.borrowed()
        } else {
            0
        }
    }

    /// Whether the bulkhead is on a resource's pool.
    pub fn is_pooled(&self) -> bool {
        self.shared.semaphore.is_pooled()
    }

    /// Slots a call could take now without waiting: below the limit in
    /// force and, on a pool, beyond [`reserved`](Self::reserved) only as
    /// far as the pool's unreserved slots are free; none owed to callers
    /// queued on the bulkhead, and none of the pool's while callers queue
    /// for them (one reading of each: other callers may take them the next
    /// moment).
    pub fn available(&self) -> u32 {
        self.shared.semaphore.available()
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

    /// Whether the bulkhead limits calls at all.
    pub fn is_enabled(&self) -> bool {
        self.shared.config.enabled()
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
}

impl Member for Shared {
    fn reserved_in_force(&self) -> u32 {
        self.semaphore.max()
    }

    fn set_reserved_in_force(&self, to: u32, now: Option<Instant>, deferred: &mut Deferred) -> u32 {
        self.semaphore.set_word_limit(to, now, deferred)
    }

    fn next_borrower(&self) -> Option<u64> {
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

    #[inline]
    fn permit_or_reject(
        &self,
        acquired: Acquired,
        waited: bool,
    ) -> Result<BulkheadPermit<'_>, BulkheadFull> {
        match acquired {
            Acquired::Full if self.rejects_quietly() => Err(BulkheadFull::new(self.instance)),
            Acquired::Full => Err(self.reject(waited)),
            acquired => Ok(self.admit(acquired)),
        }
    }

    /// The permit of a call that got a slot (`Slot`) or needs none
    /// (`Uncounted`, a disabled bulkhead).
    #[inline]
    fn admit(&self, acquired: Acquired) -> BulkheadPermit<'_> {
        BulkheadPermit::new(match acquired {
            Acquired::Uncounted => Held::NOTHING,
            _ if self.timed => Held::timed(self, self.admitted_at(), CallOutcome::Success),
            _ => Held::slot(self),
        })
    }

    /// Counts an admission (when sizing is tracked) and returns the stamp
    /// its slot is held from. Hold times are measured on recent readings of
    /// the clock (to within its resolution, 5 ms on the system clock): they
    /// feed means. Out of line, as [`release_timed`](Self::release_timed)
    /// is: the callers that inline an admission save no registers for it.
    #[inline(never)]
    fn admitted_at(&self) -> u64 {
        if let Some(traffic) = &self.traffic {
            traffic.admitted();
        }
        self.timeline.recent()
    }

    /// Gives back a slot taken at `started` (a stamp) on a timed bulkhead,
    /// by a call that ended with `outcome`. Out of line: a permit's drop,
    /// inlined into its holder, then saves no registers for the sample's
    /// work when it gives back an untimed slot.
    #[inline(never)]
    pub(super) fn release_timed(&self, started: u64, outcome: CallOutcome) {
        let now = self.timeline.recent();
        let released = self.semaphore.release(self.context.clock());
        if let Some(traffic) = &self.traffic {
            traffic.completed(now.saturating_sub(started));
        }
        if let Some(limiter) = &self.adaptive {
            // On a pool the word's limit is the reservation: whether the
            // call was bound is judged against the limit in force.
            let released = if self.semaphore.is_pooled() {
                Released {
                    max: self.semaphore.limit(),
                    ..released
                }
            } else {
                released
            };
            limiter.sample(self, (started, now), outcome, released);
        }
    }

    /// What [`Bulkhead::enter`] does when it found no free slot: waits for
    /// one if the bulkhead waits, and counts and publishes the rejection
    /// (`Full`) if none came. Out of line, returning a byte.
    #[cold]
    #[inline(never)]
    fn wait_or_reject(&self) -> Acquired {
        if self.waits {
            return self.wait_blocking();
        }
        // Nothing to keep across a call: no registers saved.
        self.count_rejection(false);
        Acquired::Full
    }

    /// [`wait_or_reject`](Self::wait_or_reject) on a bulkhead that waits.
    #[cold]
    #[inline(never)]
    fn wait_blocking(&self) -> Acquired {
        let acquired = self.acquire_blocking();
        if acquired == Acquired::Full {
            self.count_rejection(true);
        }
        acquired
    }

    /// Whether a call that found no free slot is rejected with nothing
    /// else to do: the bulkhead neither waits nor counts, and nobody
    /// listens to its events.
    #[inline(always)]
    fn rejects_quietly(&self) -> bool {
        self.quiet && !self.context.has_listeners()
    }

    /// A rejection: counted and published out of line
    /// ([`note_rejection`](Self::note_rejection)), its error made inline (a
    /// copy of the instance id).
    #[inline]
    fn reject(&self, waited: bool) -> BulkheadFull {
        self.note_rejection(waited);
        BulkheadFull::new(self.instance)
    }

    /// [`count_rejection`](Self::count_rejection), out of line and taking
    /// two arguments: a rejected call pays one call for it, and the paths
    /// that admit save no registers for it.
    #[cold]
    #[inline(never)]
    fn note_rejection(&self, waited: bool) {
        self.count_rejection(waited);
    }

    /// Counts (when sizing is tracked) and publishes a rejection.
    #[inline(always)]
    fn count_rejection(&self, waited: bool) {
        if let Some(traffic) = &self.traffic {
            traffic.rejected();
        }
        self.context.publish(move |at| {
            Event::Bulkhead(BulkheadEvent {
                instance: self.instance,
                kind: BulkheadEventKind::Rejected {
                    max_concurrent: self.semaphore.limit(),
                    waited,
                },
                at,
            })
        });
    }

    #[cold]
    fn acquire_blocking(&self) -> Acquired {
        let clock = self.context.clock();
        let now = clock.now();
        let deadline = now.checked_add(self.config.max_wait());
        self.semaphore.acquire_blocking(clock, now, deadline)
    }

    #[cold]
    fn enter_blocking_until(
        &self,
        outer: Option<Instant>,
    ) -> Result<BulkheadPermit<'_>, EnterError> {
        let clock = self.context.clock();
        let now = clock.now();
        let own = now.checked_add(self.config.max_wait());
        // The outer deadline binds only if it comes strictly first.
        let outer_first = match (outer, own) {
            (Some(outer), Some(own)) => outer < own,
            (Some(_), None) => true,
            (None, _) => false,
        };
        let deadline = if outer_first { outer } else { own };
        match self.semaphore.acquire_blocking(clock, now, deadline) {
            Acquired::Full if outer_first => {
                if let Some(traffic) = &self.traffic {
                    traffic.abandoned();
                }
                Err(EnterError::DeadlineReached)
            }
            acquired => self
                .permit_or_reject(acquired, true)
                .map_err(EnterError::Full),
        }
    }
}

/// Why [`Bulkhead::enter_until`] gave up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnterError {
    /// No slot came free within `max_wait` (or `max_wait` is zero).
    Full(BulkheadFull),
    /// The outer deadline passed first.
    DeadlineReached,
}

impl fmt::Debug for Bulkhead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bulkhead")
            .field("instance", &self.shared.instance)
            .field("config", &self.config())
            .field("concurrent_calls", &self.concurrent_calls())
            .field("waiting_calls", &self.waiting_calls())
            .finish()
    }
}
