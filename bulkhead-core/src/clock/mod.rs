//! Time as the policies see it: an injectable [`Clock`], the real
//! [`SystemClock`] and the test-driven [`ManualClock`].
//!
//! Every deadline a policy keeps (how long a caller may wait for a bulkhead
//! slot, and later retry delays, open-state waits and timeouts) is measured on
//! a `Clock`, never on the wall clock directly. A registry built with a
//! [`ManualClock`] therefore makes all of its waits deterministic: a waiter is
//! rejected exactly when the test moves the clock past its deadline, however
//! long that takes in real time.
//!
//! A bulkhead's fast paths never read the clock: only a caller that has to
//! wait does, and a release that hands its slot to a waiter (to pass over
//! waiters whose deadline has passed); a bulkhead that tracks sizing or
//! adapts its limit takes a recent reading on either side of a call.
//!
//! # Two readings
//!
//! [`Clock::now`] is the precise time; [`Clock::recent`] is a time at most
//! [`Clock::resolution`] old (while the clock works as designed: 5 ms on
//! the `SystemClock`, about 1 ms typically), and far cheaper on the
//! [`SystemClock`]: a load of the time one thread reads every millisecond,
//! about a nanosecond against 17 to 20 for `Instant::now()` on a virtual
//! machine. Measurements that need milliseconds take recent readings; every
//! deadline that parks a thread or wakes a task is checked on `now`.
//!
//! | what | reading | resolution on the `SystemClock` |
//! |---|---|---|
//! | a bulkhead's `max_wait`, a retry's delay, a rate limiter's wait for a reserved permit, a breaker's `wait_in_open` | `now` | exact |
//! | a timeout's deadline when the call has to wait (a sync wait for a slot, an async call still pending after its first poll) | `now` at the wait, and `recent` | never early while recent readings lag by at most the resolution; up to 5 ms late, exact when the call is pending at its first poll (see [`Timeout`](crate::Timeout)) |
//! | a sync call's overrun (`Overrun` event) | `recent` | within 5 ms (about 1 ms typically) |
//! | a breaker's slow calls, if `slow_call_threshold` is at least 100 ms (else `now`) | `recent` | within 5 ms (about 1 ms typically) |
//! | a time window's second | `recent` | within 5 ms |
//! | a rate limiter's period of 20 ms or more | `recent`, and `now` within 5 ms of a period's end, for refusals and for reservations | exact (see [`RateLimiter`](crate::RateLimiter)) |
//! | a rate limiter's shorter period | on the `SystemClock`, the processor's invariant time-stamp counter where there is one (x86_64); else as above (`now` on every call if the period is no longer than the resolution) | exact, on the counter's time line (see [`RateLimiter`](crate::RateLimiter)) |
//! | a bulkhead's hold times when sizing is tracked or it adapts its limit | `recent` | within 5 ms (about 1 ms typically) |
//! | an adaptive bulkhead's windows and probes | `recent` | within 5 ms |
//!
//! A [`ManualClock`] is exact: its `recent` is its `now`.

mod manual;
// Under loom the system clock's recent reading is `Instant::now()`: the
// ticker's thread is not part of any model.
#[cfg_attr(loom, allow(dead_code))]
mod recent;
mod system;
mod timeline;
// `RDTSC` and `CPUID` for the rate limiter's cheap precise reading (one
// of the crate's three modules with `unsafe`: `lib.rs`).
#[allow(unsafe_code)]
mod tsc;

pub use manual::ManualClock;
pub use recent::RecentTime;
pub use system::SystemClock;
pub(crate) use timeline::{Timeline, nanos, since};
pub(crate) use tsc::TscTime;

use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::loom::thread;

/// A source of time and of waiting, shared by every policy of a registry.
///
/// Implement it to drive the policies from another notion of time; the two
/// implementations shipped here cover real time ([`SystemClock`]) and tests
/// ([`ManualClock`]).
///
/// # Contract
///
/// - [`now`](Clock::now) never goes backwards.
/// - The future returned by [`sleep_until`](Clock::sleep_until) completes once
///   `now() >= deadline`, and wakes its task when that happens.
/// - [`park_until`](Clock::park_until) blocks the calling thread until
///   `now() >= deadline` *or* the thread is unparked
///   ([`std::thread::Thread::unpark`]); it may also return spuriously. Callers
///   re-check their condition and the clock in a loop.
/// - [`now`](Clock::now) may be called from code that a waker runs when it is
///   woken or dropped: a bulkhead slot released there reads the clock to hand
///   the slot to a waiter. So a clock must not hold a lock that `now` takes
///   while it wakes or drops a waker: take the wakers out, unlock, then wake
///   them (as both clocks shipped here do).
/// - `now` should not panic. If it does while a released slot is being
///   handed over, the slot still goes to the oldest waiter, as if no
///   deadline had passed, before the panic goes on.
/// - [`recent`](Clock::recent) is never later than a `now()` read after it,
///   and, while the clock works as designed, at most
///   [`resolution`](Clock::resolution) earlier than a `now()` read just
///   before it. Both provided methods suit a clock that has nothing cheaper
///   than `now`: `recent` is `now` and the resolution zero.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// The current time on this clock.
    fn now(&self) -> Instant;

    /// A recent time on this clock: not later than [`now`](Clock::now), and
    /// normally not more than [`resolution`](Clock::resolution) earlier.
    ///
    /// For measurements that need milliseconds rather than nanoseconds
    /// (slow calls, time windows, hold times), where it is much cheaper than
    /// `now` on the [`SystemClock`]. The default is `now()`.
    ///
    /// # Examples
    ///
    /// ```
    /// use bulkhead_core::{Clock, SystemClock};
    ///
    /// let clock = SystemClock;
    /// let recent = clock.recent();
    /// assert!(recent <= clock.now());
    /// ```
    #[inline]
    fn recent(&self) -> Instant {
        self.now()
    }

    /// How much earlier than [`now`](Clock::now) a [`recent`](Clock::recent)
    /// reading can be while the clock works as designed; zero (the default)
    /// when `recent` is `now`.
    ///
    /// Policies read it once, when they are built.
    fn resolution(&self) -> Duration {
        Duration::ZERO
    }

    /// Where this clock keeps its [`recent`](Clock::recent) reading in
    /// memory, if it does: policies built on it then read it inline, with
    /// one atomic load, rather than through a call. `None` (the default)
    /// for every clock but the [`SystemClock`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use bulkhead_core::{Clock, ManualClock, SystemClock};
    ///
    /// let recent = SystemClock.recent_time().expect("the system clock keeps one");
    /// assert!(recent.epoch() + Duration::from_nanos(recent.nanos()) <= Instant::now());
    /// assert!(ManualClock::new().recent_time().is_none());
    /// ```
    fn recent_time(&self) -> Option<RecentTime> {
        None
    }

    /// A future that completes once [`now`](Clock::now) reaches `deadline`.
    fn sleep_until(&self, deadline: Instant) -> Sleep;

    /// Blocks the current thread until `deadline` passes on this clock or the
    /// thread is unparked, whichever comes first; may return spuriously.
    fn park_until(&self, deadline: Instant);
}

/// A shared clock is a clock: `registry.clock().clone()` can build another
/// registry on the same time line.
impl<C: Clock + ?Sized> Clock for std::sync::Arc<C> {
    fn now(&self) -> Instant {
        (**self).now()
    }

    #[inline]
    fn recent(&self) -> Instant {
        (**self).recent()
    }

    fn resolution(&self) -> Duration {
        (**self).resolution()
    }

    fn recent_time(&self) -> Option<RecentTime> {
        (**self).recent_time()
    }

    fn sleep_until(&self, deadline: Instant) -> Sleep {
        (**self).sleep_until(deadline)
    }

    fn park_until(&self, deadline: Instant) {
        (**self).park_until(deadline);
    }
}

/// The future returned by [`Clock::sleep_until`].
///
/// The shipped clocks' sleeps are stored inline (no allocation); a custom
/// clock's future is boxed by [`Sleep::new`].
#[must_use = "futures do nothing unless polled"]
pub struct Sleep {
    inner: SleepInner,
}

enum SleepInner {
    System(system::SystemSleep),
    Manual(manual::ManualSleep),
    Custom(Pin<Box<dyn Future<Output = ()> + Send + Sync + 'static>>),
}

impl Sleep {
    /// Wraps the future a custom [`Clock`] implementation uses to wait.
    pub fn new<F>(future: F) -> Self
    where
        F: Future<Output = ()> + Send + Sync + 'static,
    {
        Sleep {
            inner: SleepInner::Custom(Box::pin(future)),
        }
    }
}

impl From<system::SystemSleep> for Sleep {
    fn from(sleep: system::SystemSleep) -> Self {
        Sleep {
            inner: SleepInner::System(sleep),
        }
    }
}

impl From<manual::ManualSleep> for Sleep {
    fn from(sleep: manual::ManualSleep) -> Self {
        Sleep {
            inner: SleepInner::Manual(sleep),
        }
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match &mut self.inner {
            SleepInner::System(sleep) => Pin::new(sleep).poll(cx),
            SleepInner::Manual(sleep) => Pin::new(sleep).poll(cx),
            SleepInner::Custom(sleep) => sleep.as_mut().poll(cx),
        }
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.inner {
            SleepInner::System(_) => "system",
            SleepInner::Manual(_) => "manual",
            SleepInner::Custom(_) => "custom",
        };
        f.debug_struct("Sleep").field("clock", &kind).finish()
    }
}

/// Blocks the current thread on `clock` until `deadline` has passed.
///
/// Unlike [`Clock::park_until`] this does not return early on an unpark.
pub fn sleep_blocking(clock: &dyn Clock, deadline: Instant) {
    while clock.now() < deadline {
        clock.park_until(deadline);
    }
}

/// Wakes every waiter in `wakes`, even if waking one panics (a waker runs
/// executor code); the first panic, if any, goes on once all were woken.
pub(crate) fn wake_all(wakes: impl IntoIterator<Item = Wake>) {
    let mut panicked = None;
    for wake in wakes {
        if let Err(panic) = std::panic::catch_unwind(AssertUnwindSafe(|| wake.wake())) {
            panicked.get_or_insert(panic);
        }
    }
    if let Some(panic) = panicked {
        std::panic::resume_unwind(panic);
    }
}

/// How a waiter is told that something it waits for happened: its task is
/// woken, or its thread unparked.
#[derive(Debug)]
pub(crate) enum Wake {
    Task(Waker),
    Thread(thread::Thread),
}

impl Wake {
    pub(crate) fn wake(self) {
        match self {
            Wake::Task(waker) => waker.wake(),
            Wake::Thread(thread) => thread.unpark(),
        }
    }

    /// Replaces a stored task waker when the task moved; cheap when it did
    /// not. Returns what it replaced, for the caller to drop once it holds
    /// no lock: dropping a waker may run arbitrary code.
    #[must_use = "drop the replaced waker after unlocking"]
    pub(crate) fn update(&mut self, cx: &Context<'_>) -> Option<Wake> {
        match self {
            Wake::Task(waker) if waker.will_wake(cx.waker()) => None,
            _ => Some(std::mem::replace(self, Wake::Task(cx.waker().clone()))),
        }
    }
}
