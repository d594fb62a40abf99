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
mod call;
mod classes;
mod config;
mod enter;
mod links;
mod live;
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
mod class_tests;
#[cfg(all(test, not(loom)))]
mod pool_tests;

pub use classes::ClassOccupancy;
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

use crate::Priority;
use crate::clock::{Timeline, wake_all};
use crate::config::ConfigError;
use crate::context::PolicyContext;
use crate::events::{BulkheadEvent, BulkheadEventKind, Event};
use crate::intern::intern;
use crate::loom::{Mutex, lock};
use crate::rejection::BulkheadFull;
use adaptive::{AdaptiveSnapshot, CallOutcome, Limiter, Room};
use live::Limits;
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
    /// A keyed bulkhead's keys and slots, which this bulkhead anchors:
    /// its permits point at a key's slot and give it back here.
    keyed: Option<Arc<dyn crate::keyed::Anchor>>,
}

impl Bulkhead {
    /// A bulkhead on the system clock that publishes no events.
    ///
    /// The instance id is interned: each distinct id is kept for the life of
    /// the process (so that rejections can name it without allocating).
    /// Ids are meant to name the dependencies of a program, a bounded set;
    /// do not build one per request or per tenant: for a limit per tenant
    /// (per user, per shard) under one global limit, use a
    /// [`KeyedBulkhead`](crate::KeyedBulkhead), whose keys come and go.
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
        semaphore.set_classes(config.shed_at(), config.priority_set());
        semaphore.set_discipline(config.discipline());
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
                keyed: None,
            }),
        }
    }

    /// The anchor of a keyed bulkhead: its id, configuration and context,
    /// and the keyed state its permits give their slots back to.
    pub(crate) fn keyed_anchor(
        instance: &str,
        config: BulkheadConfig,
        context: PolicyContext,
        keyed: Arc<dyn crate::keyed::Anchor>,
    ) -> Self {
        let mut bulkhead = Bulkhead::build(instance, config, context, None);
        if let Some(shared) = Arc::get_mut(&mut bulkhead.shared) {
            shared.keyed = Some(keyed);
        }
        bulkhead
    }

    /// The permit of a slot of a keyed bulkhead's key (this bulkhead its
    /// anchor), or of nothing for a disabled one.
    pub(crate) fn keyed_permit(
        &self,
        slot: Option<std::ptr::NonNull<crate::keyed::KeySlot>>,
    ) -> BulkheadPermit<'_> {
        BulkheadPermit::new(match slot {
            Some(slot) => Held::keyed(&self.shared, slot),
            None => Held::NOTHING,
        })
    }

    /// `permit` as an owned permit.
    pub(crate) fn owned(&self, permit: BulkheadPermit<'_>) -> OwnedBulkheadPermit {
        OwnedBulkheadPermit::new(self, permit)
    }

    /// The context: its clock and event bus.
    pub(crate) fn context(&self) -> &PolicyContext {
        &self.shared.context
    }

    /// The instance id.
    pub fn instance(&self) -> &'static str {
        self.shared.instance
    }

    /// The histograms its registry keeps for its instance (see
    /// [`TelemetryHub`](crate::TelemetryHub)), for a caller that times
    /// calls through it outside a composition of policies (the tower
    /// `BulkheadLayer`); `None` for a bulkhead built outside a registry.
    pub fn telemetry(&self) -> Option<Arc<crate::InstanceTelemetry>> {
        let hub = self.shared.context.telemetry()?;
        Some(hub.instance(self.shared.instance))
    }

    /// The configuration, with the configured limit: the last
    /// [`set_max_concurrent`](Self::set_max_concurrent), which a cap may
    /// hold the limit in force ([`max_concurrent`](Self::max_concurrent))
    /// below; for an adaptive bulkhead, its ceiling (the most its
    /// algorithm may allow).
    pub fn config(&self) -> BulkheadConfig {
        let limits = *lock(&self.shared.limits);
        let (shed_at, priority) = self.shared.semaphore.classes.settings();
        self.shared
            .config
            .with_live_limits(limits.configured, limits.reserved)
            .with_live_classes(shed_at, priority)
            .with_live_queue(self.shared.semaphore.discipline())
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
    /// Waiters are served by class first, then as the bulkhead's `queue`
    /// says (rules B13 and B14); a call whose class may not use the whole
    /// limit is refused at once rather than waiting.
    ///
    /// Inside a `bulkhead::deadline` scope the wait ends at the scope's
    /// deadline if that comes before `max_wait`'s; the error stays
    /// [`BulkheadFull`] (through `Policies` and generated wrappers it is
    /// `Rejection::DeadlineExceeded`).
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
            Acquired::Shed => return Err(shared.reject_shed()),
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
    ///
    /// Always inlined: called from another crate (a user's, where the
    /// wrapper is), it was left out of line, its three-word result written
    /// to memory and read back (issue 33).
    #[doc(hidden)]
    #[inline(always)]
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

    /// Whether the bulkhead limits calls at all.
    pub fn is_enabled(&self) -> bool {
        self.shared.config.enabled()
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
