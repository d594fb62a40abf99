//! Waiting for a reserved permit: blocking a thread, or as a future.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use super::{Outcome, Shared};
use crate::clock::{Sleep, sleep_blocking};
use crate::loom::atomic::{AtomicU32, Ordering};
use crate::rejection::RateLimited;

/// Counts a caller in `waiting_calls` for as long as it lives.
struct Waiting<'a>(&'a AtomicU32);

impl<'a> Waiting<'a> {
    fn new(waiting: &'a AtomicU32) -> Self {
        waiting.fetch_add(1, Ordering::Relaxed);
        Waiting(waiting)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Shared {
    /// Blocks the thread until `at`, the start of its reserved permit's
    /// period, on the clock.
    #[cold]
    pub(super) fn wait_blocking(&self, at: Instant) {
        let _waiting = Waiting::new(&self.waiting);
        sleep_blocking(&**self.context.clock(), at);
    }
}

/// Waits, without blocking a thread, for a permit of a rate limiter;
/// returned by [`RateLimiter::acquire_async`](super::RateLimiter::acquire_async).
///
/// The first poll takes a permit of the current period if one is left.
/// Otherwise it reserves one of the first later period that has some, if
/// that period starts within `max_wait`, and completes when the period begins
/// on the limiter's clock; if none can be had within `max_wait` (or
/// `max_wait` is zero) it resolves to [`RateLimited`] at once, reserving
/// nothing. Waiting allocates nothing on the shipped clocks.
///
/// # Cancel safety
///
/// As in Resilience4j, a reservation is final: dropping the future after its
/// first poll reserved a permit of a later period does not give the permit
/// back, and that period has one permit fewer for everyone else. Dropping it
/// before the first poll reserves nothing.
#[must_use = "futures do nothing unless polled"]
pub struct AcquirePermit<'a> {
    shared: &'a Shared,
    state: State<'a>,
}

enum State<'a> {
    Start,
    Waiting { sleep: Sleep, _waiting: Waiting<'a> },
    Done,
}

impl<'a> AcquirePermit<'a> {
    pub(super) fn new(shared: &'a Shared) -> Self {
        AcquirePermit {
            shared,
            state: State::Start,
        }
    }

    /// A permit reserved for the period that starts at `at`, waiting.
    #[cold]
    pub(super) fn waiting(shared: &'a Shared, at: Instant) -> Self {
        let mut permit = AcquirePermit::new(shared);
        permit.start_waiting(at);
        permit
    }
}

impl Future for AcquirePermit<'_> {
    type Output = Result<(), RateLimited>;

    /// The first poll that gets a permit of the current period, or a
    /// rejection, is inlined into the caller; waiting is not.
    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if let State::Start = this.state {
            let shared = this.shared;
            match shared.reserve(shared.max_wait) {
                Outcome::Granted => {
                    this.state = State::Done;
                    return Poll::Ready(Ok(()));
                }
                // Without a deadline, `PastDeadline` does not happen.
                Outcome::Refused | Outcome::PastDeadline => {
                    this.state = State::Done;
                    return Poll::Ready(Err(shared.reject()));
                }
                Outcome::Reserved(at) => this.start_waiting(at),
            }
        }
        this.poll_waiting(cx)
    }
}

impl<'a> AcquirePermit<'a> {
    #[cold]
    fn start_waiting(&mut self, at: Instant) {
        let shared = self.shared;
        self.state = State::Waiting {
            sleep: shared.context.clock().sleep_until(at),
            _waiting: Waiting::new(&shared.waiting),
        };
    }

    #[inline(never)]
    fn poll_waiting(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), RateLimited>> {
        let State::Waiting { sleep, .. } = &mut self.state else {
            // Polled after completion: stay pending, like a fused future.
            return Poll::Pending;
        };
        match Pin::new(sleep).poll(cx) {
            Poll::Ready(()) => {
                self.state = State::Done;
                Poll::Ready(Ok(()))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl fmt::Debug for AcquirePermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            State::Start => "start",
            State::Waiting { .. } => "waiting",
            State::Done => "done",
        };
        f.debug_struct("AcquirePermit")
            .field("instance", &self.shared.instance)
            .field("state", &state)
            .finish()
    }
}
