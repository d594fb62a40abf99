//! A call's deadline: the time by which its caller needs an answer, set
//! around a piece of code and read by every policy of the calls made
//! inside it.
//!
//! [`scope`] sets it around a future (each poll of the future runs with it
//! set), [`with`] around a closure on this thread. Nesting keeps the
//! earlier deadline: an inner scope never extends an outer one, as a
//! propagated gRPC deadline only ever shrinks. [`current`] reads it,
//! [`remaining_on`] and [`remaining`] say how much time is left.
//!
//! Under a deadline every wait of a call made through a pipeline is cut to
//! the time left (the wait for a slot, for a rate-limiter permit, a retry's
//! delay, a hedge's delay, a timeout); a call that cannot start before its
//! deadline is refused at once with `Rejection::DeadlineExceeded`, and no
//! attempt starts with less than the retry's `min_attempt_time` left.
//!
//! The deadline is an [`Instant`] on the clock the policies run on (the
//! registry's): in tests on a [`ManualClock`](crate::ManualClock), compute
//! it from that clock's `now()`.
//!
//! # Examples
//!
//! ```
//! use std::time::{Duration, Instant};
//! use bulkhead_core::deadline;
//!
//! let by = Instant::now() + Duration::from_secs(2);
//! assert_eq!(deadline::current(), None);
//! deadline::with(by, || {
//!     assert_eq!(deadline::current(), Some(by));
//!     // A later inner deadline does not extend the outer one.
//!     deadline::with(by + Duration::from_secs(60), || {
//!         assert_eq!(deadline::current(), Some(by));
//!     });
//!     assert!(deadline::remaining().unwrap() <= Duration::from_secs(2));
//! });
//! assert_eq!(deadline::current(), None);
//! ```
//!
//! # A spawned task does not inherit it
//!
//! The deadline lives on the thread that polls the future inside the scope,
//! for the duration of each poll. A task spawned from inside runs its own
//! polls, outside the scope: wrap the spawned future if it should keep the
//! deadline.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use bulkhead_core::deadline;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let by = Instant::now() + Duration::from_secs(5);
//! deadline::scope(by, async move {
//!     assert_eq!(deadline::current(), Some(by));
//!     let lost = tokio::spawn(async { deadline::current() });
//!     assert_eq!(lost.await.unwrap(), None); // not inherited
//!     let kept = tokio::spawn(deadline::scope(by, async { deadline::current() }));
//!     assert_eq!(kept.await.unwrap(), Some(by)); // wrapped: kept
//! })
//! .await;
//! # }
//! ```

mod future;

pub use future::Deadlined;

use std::cell::Cell;
use std::future::Future;
use std::time::{Duration, Instant};

use crate::clock::Clock;

thread_local! {
    /// The deadline in force on this thread, if any.
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Runs `future` with `deadline` in force during each of its polls (the
/// earlier of it and any deadline already in force where it is polled).
///
/// The deadline in force before each poll is restored after it, also when
/// the poll panics.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
/// use bulkhead_core::deadline;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let by = Instant::now() + Duration::from_millis(300);
/// let seen = deadline::scope(by, async { deadline::current() }).await;
/// assert_eq!(seen, Some(by));
/// assert_eq!(deadline::current(), None);
/// # }
/// ```
pub fn scope<F: Future>(deadline: Instant, future: F) -> Deadlined<F> {
    Deadlined::new(deadline, future)
}

/// Runs `f` on this thread with `deadline` in force (the earlier of it and
/// any deadline already in force), and restores the one before after it,
/// also when `f` panics.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
/// use bulkhead_core::deadline;
///
/// let by = Instant::now() + Duration::from_millis(300);
/// let left = deadline::with(by, deadline::remaining);
/// assert!(left.is_some_and(|left| left <= Duration::from_millis(300)));
/// ```
pub fn with<R>(deadline: Instant, f: impl FnOnce() -> R) -> R {
    let _restore = Restore::set(deadline);
    f()
}

/// The deadline in force on this thread, if any.
///
/// # Examples
///
/// ```
/// use std::time::Instant;
/// use bulkhead_core::deadline;
///
/// let by = Instant::now();
/// assert_eq!(deadline::with(by, deadline::current), Some(by));
/// assert_eq!(deadline::current(), None);
/// ```
#[inline]
pub fn current() -> Option<Instant> {
    DEADLINE.with(Cell::get)
}

/// The deadline in force if it comes strictly before `own` (a wait's own
/// end, `None`: no end): the one place a wait decides whether the call's
/// deadline or its own bound ends it.
#[inline]
pub(crate) fn first_before(own: Option<Instant>) -> Option<Instant> {
    current().filter(|scope| own.is_none_or(|own| *scope < own))
}

/// The time left before the deadline in force, on `clock` (the registry's,
/// on which the deadline was set); zero once it has passed, `None` without
/// a deadline.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use bulkhead_core::{deadline, Clock, ManualClock};
///
/// let clock = ManualClock::new();
/// let by = clock.now() + Duration::from_secs(1);
/// deadline::with(by, || {
///     clock.advance(Duration::from_millis(400));
///     assert_eq!(deadline::remaining_on(&clock), Some(Duration::from_millis(600)));
///     clock.advance(Duration::from_secs(5));
///     assert_eq!(deadline::remaining_on(&clock), Some(Duration::ZERO));
/// });
/// assert_eq!(deadline::remaining_on(&clock), None);
/// ```
pub fn remaining_on(clock: &dyn Clock) -> Option<Duration> {
    current().map(|deadline| deadline.saturating_duration_since(clock.now()))
}

/// The time left before the deadline in force, on the system clock; zero
/// once it has passed, `None` without a deadline.
///
/// # Examples
///
/// ```
/// use std::time::{Duration, Instant};
/// use bulkhead_core::deadline;
///
/// assert_eq!(deadline::remaining(), None);
/// let past = Instant::now();
/// assert_eq!(deadline::with(past, deadline::remaining), Some(Duration::ZERO));
/// ```
pub fn remaining() -> Option<Duration> {
    current().map(|deadline| deadline.saturating_duration_since(Instant::now()))
}

/// Puts the deadline back as it was when dropped (on return or unwind).
struct Restore {
    before: Option<Instant>,
}

impl Restore {
    /// Sets the earlier of `deadline` and the one in force.
    fn set(deadline: Instant) -> Self {
        let before = DEADLINE.with(|cell| {
            let before = cell.get();
            cell.set(Some(before.map_or(deadline, |before| before.min(deadline))));
            before
        });
        Restore { before }
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        // `try_with`: a scope dropped while the thread's locals are being
        // destroyed has nothing left to restore.
        let _ = DEADLINE.try_with(|cell| cell.set(self.before));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_keeps_the_earlier_deadline_and_restores_each_level() {
        let early = Instant::now();
        let late = early + Duration::from_secs(10);
        with(late, || {
            assert_eq!(current(), Some(late));
            with(early, || assert_eq!(current(), Some(early)));
            assert_eq!(current(), Some(late));
        });
        assert_eq!(current(), None);
    }

    #[test]
    fn a_panic_inside_restores_the_deadline_before() {
        let by = Instant::now();
        let caught = std::panic::catch_unwind(|| with(by, || panic!("inside")));
        assert!(caught.is_err());
        assert_eq!(current(), None);
    }
}
