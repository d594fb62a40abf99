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
//! The fast paths never read the clock: only a caller that has to wait does,
//! and a release that hands its slot to a waiter (to pass over waiters whose
//! deadline has passed).

mod manual;
mod system;

pub use manual::ManualClock;
pub use system::SystemClock;

use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

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
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// The current time on this clock.
    fn now(&self) -> Instant;

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
