//! The rate limiter: at most `limit_for_period` calls per `refresh_period`.
//!
//! [`RateLimiter`] follows Resilience4j's `AtomicRateLimiter`. Time is cut
//! into periods counted from the limiter's creation, on its clock; each
//! period brings `limit_for_period` fresh permits, and unused ones expire
//! with it. A caller that finds none left may reserve a permit of a later
//! period that starts within `max_wait`, and waits for it:
//!
//! - [`try_acquire`](RateLimiter::try_acquire) takes a permit of the current
//!   period or fails at once;
//! - [`acquire`](RateLimiter::acquire) blocks the thread up to `max_wait`;
//! - [`acquire_async`](RateLimiter::acquire_async) waits up to `max_wait`
//!   without blocking.
//!
//! Permits are not given back: a call consumes one whatever its outcome.
//!
//! # Readings of the clock
//!
//! With a `refresh_period` of at least four times the clock's
//! [`resolution`](crate::Clock::resolution) (20 ms on the `SystemClock`),
//! a permit is taken on a [`recent`](crate::Clock::recent) reading of the
//! clock (an atomic load on the `SystemClock`) when that reading is more
//! than the resolution before the end of its period: the real time is then
//! in the same period, and the decision is the one a precise reading would
//! give. Everything else reads the clock's precise `now`: a call near the end
//! of a period, every refusal and every reservation, so a permit that is
//! due is never refused and no caller waits longer than it must.
//!
//! Shorter periods (the default `refresh_period` is 500 ns) would read
//! `now` on most calls. On the `SystemClock`, where the processor has an
//! invariant time-stamp counter (x86_64), such a limiter counts its periods
//! on that counter instead, calibrated against `Instant` once per process
//! (5 ms, when the first such limiter is built), as governor's clock
//! (quanta) does: a precise reading for one `RDTSC` on every call, the
//! periods counted in the counter's ticks (durations converted once, when
//! the limiter is built). Everything the limiter counts is then on the counter's
//! time line (periods, the wait for a reserved permit, a call's deadline),
//! so it still grants at most `limit_for_period` per period and waits at
//! most `max_wait`; the wait is slept on the system clock, and the
//! counter's nanoseconds are `Instant`'s to within a few parts per
//! million. Elsewhere (no such counter, or a clock other than the
//! `SystemClock`) the rule above holds: a period no longer than the
//! resolution reads `now` on every call. On a `ManualClock` every reading
//! is exact.
//!
//! # Batches of permits
//!
//! A limiter that counts on the counter also lets a thread that calls it
//! often take its permits in runs of up to 8 with one atomic operation, and
//! spend them on its following calls in the same period without any:
//! as many at a time as the thread took in the current or previous
//! period, and at most a quarter of those the period has left, so a thread
//! calling once per period, a limit below 8, or the last 7 permits of a
//! period are taken one at a time. A permit is only ever spent in its own
//! period, so each period still grants at most `limit_for_period`; permits
//! a thread claimed and did not use by the end of the period lapse with it
//! (see `batch.rs`). They count as taken in
//! [`available_permits`](RateLimiter::available_permits) meanwhile.

mod acquire;
mod batch;
mod config;
mod state;
#[cfg(all(test, not(loom)))]
mod tests;

pub use acquire::AcquirePermit;
pub use config::{RateLimiterConfig, RateLimiterConfigBuilder};

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::clock::{Clock, TscTime, nanos};
use crate::context::{PolicyContext, policy_getters};
use crate::events::{Event, RateLimiterEvent, RateLimiterEventKind};
use crate::intern::intern;
use crate::loom::atomic::{AtomicU32, Ordering};
use crate::rejection::{DeadlineExceeded, RateLimited, Rejection};
use state::{PermitState, Reserved};

/// A rate limiter: at most `limit_for_period` permits per `refresh_period`.
///
/// Cheap to clone; clones share the same permits. No path takes a lock or
/// allocates: the permits are one atomic word. Unlike a bulkhead's slot, a
/// permit is never given back.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use bulkhead_core::{ManualClock, PolicyContext, RateLimiter, RateLimiterConfig};
///
/// let clock = ManualClock::new();
/// let config = RateLimiterConfig::builder()
///     .limit_for_period(2)
///     .refresh_period(Duration::from_secs(1))
///     .build()?;
/// let context = PolicyContext::new(Arc::new(clock.clone()));
/// let limiter = RateLimiter::with_context("geocoder", config, context);
///
/// limiter.try_acquire()?;
/// limiter.try_acquire()?;
/// let rejected = limiter.try_acquire().unwrap_err(); // none left this second
/// assert_eq!(rejected.instance(), "geocoder");
///
/// clock.advance(Duration::from_secs(1));              // the next period
/// assert_eq!(limiter.available_permits(), 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct RateLimiter {
    shared: Arc<Shared>,
}

struct Shared {
    permits: PermitState,
    /// This limiter among all those of the process, for the per-thread
    /// batches of permits (see `batch.rs`).
    id: u64,
    /// The configured `max_wait`, in nanoseconds (in ticks on the counter).
    max_wait: u64,
    /// When the first period began, on the context's clock.
    origin: Instant,
    /// The clock's resolution in nanoseconds: how far a recent reading may
    /// lag; zero when it counts on the counter.
    margin: u64,
    /// Precise readings on the time-stamp counter, for a period too short
    /// for recent readings on the system clock (see *Readings of the
    /// clock*): the permits then count in its ticks. `None` to count
    /// nanoseconds on the context's clock.
    tsc: Option<TscTime>,
    /// `tsc.ticks()` when the first period began.
    tsc_origin: u64,
    /// Callers waiting for a reserved permit, for monitoring.
    waiting: AtomicU32,
    instance: &'static str,
    config: RateLimiterConfig,
    context: PolicyContext,
}

/// What a caller got from the permits, in the clock's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Granted,
    /// A permit of a later period, which starts at this instant.
    Reserved(Instant),
    Refused,
    /// A permit within `max_wait`, but not before the caller's deadline;
    /// nothing was reserved.
    PastDeadline,
}

impl RateLimiter {
    /// A rate limiter on the system clock that publishes no events.
    ///
    /// Its first period starts now. The instance id is interned: each
    /// distinct id is kept for the life of the process (so that rejections
    /// can name it without allocating); do not build one per request.
    pub fn new(instance: &str, config: RateLimiterConfig) -> Self {
        RateLimiter::with_context(instance, config, PolicyContext::default())
    }

    /// A rate limiter counting periods and waits on the context's clock and
    /// publishing rejections to its event bus. Its first period starts at the
    /// clock's current time.
    pub fn with_context(instance: &str, config: RateLimiterConfig, context: PolicyContext) -> Self {
        let clock = context.clock();
        let margin = nanos(clock.resolution());
        // Only the system clock keeps a recent time in memory.
        let (period, max_wait) = (nanos(config.refresh_period()), nanos(config.max_wait()));
        let tsc = if clock.recent_time().is_some() && period < margin.saturating_mul(RECENT_PERIODS)
        {
            TscTime::get()
        } else {
            None
        };
        // In ticks on the counter: a period rounded up, a wait down.
        let (period, max_wait) = match tsc {
            Some(tsc) => (tsc.ticks_of(period, true), tsc.ticks_of(max_wait, false)),
            None => (period, max_wait),
        };
        let origin = clock.now();
        let tsc_origin = tsc.map_or(0, TscTime::ticks);
        RateLimiter {
            shared: Arc::new(Shared {
                permits: PermitState::in_units(config.limit_for_period(), period, max_wait),
                id: batch::new_id(),
                max_wait,
                origin,
                margin: if tsc.is_some() { 0 } else { margin },
                tsc,
                tsc_origin,
                waiting: AtomicU32::new(0),
                instance: intern(instance),
                config,
                context,
            }),
        }
    }

    /// Takes a permit of the current period, or fails at once with
    /// [`RateLimited`] whatever `max_wait` says; never waits.
    ///
    /// # Errors
    ///
    /// [`RateLimited`] if the current period has no permit left.
    #[inline]
    pub fn try_acquire(&self) -> Result<(), RateLimited> {
        // With no wait allowed, nothing is ever reserved.
        match self.shared.reserve(0) {
            Outcome::Granted => Ok(()),
            Outcome::Reserved(_) | Outcome::Refused | Outcome::PastDeadline => {
                Err(self.shared.reject())
            }
        }
    }

    /// Takes a permit, blocking the current thread until the period of a
    /// reserved one begins, up to `max_wait` (measured on the clock).
    ///
    /// With no permit left in the current period, the caller reserves one of
    /// the first later period that has some, if that period starts within
    /// `max_wait`; it is rejected at once, reserving nothing, otherwise.
    ///
    /// This blocks the calling thread: from async code, use
    /// [`acquire_async`](Self::acquire_async).
    ///
    /// # Errors
    ///
    /// [`RateLimited`] if no permit can be had within `max_wait`.
    #[inline]
    pub fn acquire(&self) -> Result<(), RateLimited> {
        let shared = &*self.shared;
        shared.granted(shared.reserve(shared.max_wait)).map(drop)
    }

    /// [`acquire`](Self::acquire) on the caller's recent reading of the
    /// clock, `elapsed` nanoseconds after the first period began (the
    /// composition shares its readings between policies), for a call with
    /// `deadline`, if any: a permit whose period starts at or after it is
    /// not waited for (`DeadlineExceeded`, nothing reserved, nothing
    /// published). `Ok(true)` if the caller waited for a reserved permit:
    /// its reading is then stale. A limiter that counts on the time-stamp
    /// counter ignores `elapsed` (the composition's reading still serves
    /// the policies inside it).
    #[inline]
    pub(crate) fn acquire_on(
        &self,
        elapsed: u64,
        deadline: Option<Instant>,
    ) -> Result<bool, Rejection> {
        let shared = &*self.shared;
        match shared.reserve_on(shared.max_wait, || elapsed, deadline) {
            Outcome::PastDeadline => Err(shared.past_deadline()),
            outcome => shared.granted(outcome).map_err(Rejection::from),
        }
    }

    /// [`acquire_async`](Self::acquire_async) for a caller that is being
    /// polled: the permit is taken (`Ok(None)`), refused, or reserved at
    /// once, on a reading and under a deadline as for `acquire_on`; only a
    /// reserved permit leaves a future to await (a future kept across an
    /// await is copied into the caller's state machine).
    #[inline(always)]
    pub(crate) fn acquire_async_on(
        &self,
        elapsed: u64,
        deadline: Option<Instant>,
    ) -> Result<Option<AcquirePermit<'_>>, Rejection> {
        let shared = &*self.shared;
        match shared.reserve_on(shared.max_wait, || elapsed, deadline) {
            Outcome::Granted => Ok(None),
            Outcome::Refused => Err(shared.reject().into()),
            Outcome::PastDeadline => Err(shared.past_deadline()),
            Outcome::Reserved(at) => Ok(Some(AcquirePermit::waiting(shared, at))),
        }
    }

    /// When its first period began, on its clock.
    pub(crate) fn origin(&self) -> Instant {
        self.shared.origin
    }

    /// The clock it counts periods on.
    pub(crate) fn clock(&self) -> &Arc<dyn Clock> {
        self.shared.context.clock()
    }

    /// Takes a permit, waiting without blocking a thread up to `max_wait`.
    ///
    /// Nothing happens until the future is first polled. See
    /// [`AcquirePermit`] for the waiting and cancellation rules.
    #[inline]
    pub fn acquire_async(&self) -> AcquirePermit<'_> {
        AcquirePermit::new(&self.shared)
    }

    /// Permits left in the current period; negative while permits of later
    /// periods are reserved by waiting (or cancelled) callers. Reads the
    /// clock.
    ///
    /// At a period shorter than 20 ms on the system clock, the permits
    /// threads have claimed in batches and not used yet count as taken (at
    /// most 7 per thread that called in this period; see *Batches of
    /// permits*).
    pub fn available_permits(&self) -> i64 {
        let shared = &*self.shared;
        shared.permits.available(|| shared.read().1)
    }

    /// How many callers wait now for the period of their reserved permit;
    /// for monitoring only.
    pub fn waiting_calls(&self) -> u32 {
        self.shared.waiting.load(Ordering::Relaxed)
    }
}

policy_getters!(RateLimiter: RateLimiterConfig);

/// The shortest period, in resolutions of the clock, that counts on recent
/// readings (20 ms on the `SystemClock`): at most a quarter of its calls
/// then read the clock precisely (those in the last resolution of a
/// period). A 10 ms period reads it precisely on half its calls, which cost
/// more than the counter and its per-thread batches (`batch.rs`) on every
/// call: on an AMD EPYC, 10 ms added 11.8 ns to a call on recent readings
/// and 8.8 on the counter, 20 ms on recent readings 7.0 (BENCHMARKS.md,
/// *Issue 33 on an AMD EPYC*); on an Intel Xeon, 10 ms on recent readings
/// added 15.5 ns and 1 ms on the counter 13.0. Before the batches the
/// counter cost more (20 ns on the Xeon) and the bound was two resolutions.
const RECENT_PERIODS: u64 = 4;

impl Shared {
    /// A precise reading: the clock's `now` and the time since the first
    /// period began, in nanoseconds, or in ticks on the counter if the
    /// limiter counts on it.
    fn read(&self) -> (Instant, u64) {
        let at = self.context.clock().now();
        match self.tsc {
            Some(tsc) => (at, self.ticks(tsc)),
            None => (at, self.elapsed(at)),
        }
    }

    /// Ticks of the counter since the first period began. Saturating: a
    /// processor whose counter is a little behind the one that read the
    /// origin reads the first period.
    #[inline(always)]
    fn ticks(&self, tsc: TscTime) -> u64 {
        tsc.ticks().saturating_sub(self.tsc_origin)
    }

    /// Nanoseconds since the first period began.
    fn elapsed(&self, now: Instant) -> u64 {
        nanos(now.saturating_duration_since(self.origin))
    }

    /// Takes or reserves a permit within `max_wait` nanoseconds, on a
    /// recent reading of the clock if it can (see `state.rs`, *Readings
    /// that may lag*), else on a precise one.
    #[inline]
    fn reserve(&self, max_wait: u64) -> Outcome {
        self.reserve_on(
            max_wait,
            || self.elapsed(self.context.clock().recent()),
            None,
        )
    }

    /// [`reserve`](Self::reserve) on the recent reading `recent()`, in
    /// nanoseconds after the first period began, for a caller with
    /// `deadline` if any (a call's, read by the composition). A limiter that
    /// counts on the counter reads it instead and never calls `recent`.
    #[inline(always)]
    fn reserve_on(
        &self,
        max_wait: u64,
        recent: impl FnOnce() -> u64,
        deadline: Option<Instant>,
    ) -> Outcome {
        if self.take_now(recent) {
            return Outcome::Granted;
        }
        self.reserve_fresh(max_wait, deadline)
    }

    /// Takes a permit of the current period on the counter's reading, from
    /// the thread's batch if it can (see `batch.rs`), or on the recent
    /// reading `recent()` if the limiter does not count on the counter;
    /// `false` if that is not enough to decide.
    #[inline(always)]
    fn take_now(&self, recent: impl FnOnce() -> u64) -> bool {
        match self.tsc {
            Some(tsc) => self.take_batched(self.ticks(tsc)),
            None => self.permits.try_take_at(recent(), self.margin),
        }
    }

    /// [`reserve`](Self::reserve) on a precise reading of the clock, taken
    /// after the permits' word is loaded.
    #[inline(never)]
    fn reserve_fresh(&self, max_wait: u64, deadline: Option<Instant>) -> Outcome {
        let mut now = None;
        let deadline = match (deadline, self.tsc) {
            (None, _) => u64::MAX,
            (Some(deadline), None) => self.elapsed(deadline),
            // The deadline as far from a reading of the counter as it is
            // from `Instant::now()`.
            (Some(deadline), Some(tsc)) => {
                let (at, elapsed) = self.read();
                match deadline.checked_duration_since(at) {
                    Some(ahead) => elapsed.saturating_add(tsc.ticks_of(nanos(ahead), false)),
                    None => elapsed
                        .saturating_sub(tsc.ticks_of(nanos(at.duration_since(deadline)), true)),
                }
            }
        };
        let reserved = self.permits.reserve_before(max_wait, deadline, || {
            let (at, elapsed) = self.read();
            now = Some(at);
            elapsed
        });
        let now = now.unwrap_or(self.origin);
        match reserved {
            Reserved::Now => Outcome::Granted,
            // An instant the clock cannot represent is one it never reaches
            // (the wait is at most 584 years): wait for nothing rather than
            // for ever.
            Reserved::Later { wait } => match now.checked_add(Duration::from_nanos(
                self.tsc.map_or(wait, |tsc| tsc.nanos_of(wait)),
            )) {
                Some(at) => Outcome::Reserved(at),
                None => Outcome::Granted,
            },
            Reserved::Refused => Outcome::Refused,
            Reserved::PastDeadline => Outcome::PastDeadline,
        }
    }

    /// A call whose deadline comes before the next permit: refused, as
    /// `DeadlineExceeded`, without an event (the limiter had a permit for
    /// it within `max_wait`).
    #[cold]
    fn past_deadline(&self) -> Rejection {
        DeadlineExceeded::new(self.instance).into()
    }

    /// What a caller that must have a permit (it may wait) makes of
    /// `outcome`: `Ok(true)` once it has waited for a reserved one.
    #[inline]
    fn granted(&self, outcome: Outcome) -> Result<bool, RateLimited> {
        match outcome {
            Outcome::Granted => Ok(false),
            Outcome::Reserved(at) => {
                self.wait_blocking(at);
                Ok(true)
            }
            // Only a caller with a deadline meets one (`acquire_on`).
            Outcome::Refused | Outcome::PastDeadline => Err(self.reject()),
        }
    }

    #[inline]
    fn reject(&self) -> RateLimited {
        self.context.publish(|at| {
            Event::RateLimiter(RateLimiterEvent::new(
                self.instance,
                RateLimiterEventKind::Rejected {
                    limit_for_period: self.config.limit_for_period(),
                },
                at,
            ))
        });
        RateLimited::new(self.instance)
    }
}

impl fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimiter")
            .field("instance", &self.shared.instance)
            .field("config", &self.shared.config)
            .field("available_permits", &self.available_permits())
            .field("waiting_calls", &self.waiting_calls())
            .finish()
    }
}
