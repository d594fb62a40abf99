//! The future of an async caller entering a bulkhead.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::permit::BulkheadPermit;
use super::queue::{Arrival, Kind, WaiterKey};
use super::semaphore::{Acquired, Enqueued};
use super::{Bulkhead, Shared};
use crate::clock::{Sleep, Wake};
use crate::rejection::{BulkheadFull, DeadlineExceeded, Rejection};

/// Waits, without blocking a thread, for a slot in a bulkhead; returned by
/// [`Bulkhead::enter_async`].
///
/// The first poll takes a free slot if there is one. Otherwise, with
/// `max_wait` zero, it resolves to [`BulkheadFull`]; with `max_wait` > 0 it
/// queues, and the oldest queued caller receives the next released slot
/// directly. If `max_wait` passes first (on the bulkhead's clock) it resolves
/// to [`BulkheadFull`]: a slot released once its deadline has passed is never
/// handed to it (it goes to the next waiter, or to newcomers), while a slot
/// handed over before the deadline stays its own even if it is polled later.
///
/// Polled under a deadline ([`deadline::scope`](crate::deadline::scope)),
/// it waits no later than that deadline either, and resolves to
/// [`BulkheadFull`] if it passes first, as for `max_wait` (the error type
/// does not change; a call through a pipeline gets `DeadlineExceeded`
/// instead).
///
/// # Cancel safety
///
/// Dropping it while queued leaves the queue at once. If a slot was handed to
/// it in the meantime, the slot is passed on to the next waiter (or freed):
/// a dropped waiter never keeps capacity.
#[must_use = "futures do nothing unless polled"]
pub struct Enter<'a> {
    shared: &'a Shared,
    state: State,
}

// One variant holds data, the others none: the state takes no more room
// than that variant (its tag lives in the sleep's).
enum State {
    Start,
    Queued {
        key: WaiterKey,
        /// `None` when the deadline is too far away to represent.
        sleep: Option<Sleep>,
    },
    Done,
    /// The call's deadline ended the wait ([`EnterInCall`] only).
    Cut,
}

impl<'a> Enter<'a> {
    pub(super) fn new(bulkhead: &'a Bulkhead) -> Self {
        Enter {
            shared: &bulkhead.shared,
            state: State::Start,
        }
    }

    fn outcome(&mut self, acquired: Acquired) -> Poll<Result<BulkheadPermit<'a>, BulkheadFull>> {
        let waited = matches!(self.state, State::Queued { .. });
        self.state = State::Done;
        Poll::Ready(self.shared.permit_or_reject(acquired, waited))
    }
}

impl<'a> Future for Enter<'a> {
    type Output = Result<BulkheadPermit<'a>, BulkheadFull>;

    /// The first poll with a free slot, or with nothing to wait for, is
    /// inlined into the caller; queueing and waiting are not.
    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.poll_in(cx, false)
    }
}

impl<'a> Enter<'a> {
    /// [`poll`](Future::poll), for a call through `Policies` if `in_call`
    /// (see [`EnterInCall`]).
    #[inline(always)]
    fn poll_in(
        &mut self,
        cx: &mut Context<'_>,
        in_call: bool,
    ) -> Poll<Result<BulkheadPermit<'a>, BulkheadFull>> {
        let this = self;
        if let State::Start = this.state {
            let shared = this.shared;
            let acquired = shared.semaphore.try_acquire();
            if acquired != Acquired::Full || !shared.waits {
                // Leaving `Start` drops nothing: forgetting it spares the
                // drop glue that would keep this path from inlining.
                std::mem::forget(std::mem::replace(&mut this.state, State::Done));
                return Poll::Ready(shared.permit_or_reject(acquired, false));
            }
        }
        this.poll_slow(cx, in_call)
    }

    /// Queueing and waiting. Under a deadline
    /// ([`deadline::scope`](crate::deadline::scope)) that comes before
    /// `max_wait`, the wait ends there: `Full` as for `max_wait`, or, for a
    /// call through `Policies` (`in_call`), `Cut`.
    #[inline(never)]
    fn poll_slow(
        &mut self,
        cx: &mut Context<'_>,
        in_call: bool,
    ) -> Poll<Result<BulkheadPermit<'a>, BulkheadFull>> {
        let shared = self.shared;
        if let State::Start = self.state {
            // The deadline is fixed before queueing: whoever sees this caller
            // waiting may move a manual clock and know that it counts.
            // The sleep is made before queueing too: if a clock panics here,
            // no waiter is left in the queue without anyone to withdraw it.
            let clock = shared.context.clock();
            let now = clock.now();
            let own = now.checked_add(shared.config.max_wait());
            // The call's deadline, if it comes first.
            let (deadline, cut) = match crate::deadline::first_before(own) {
                Some(scope) => (Some(scope), in_call),
                None => (own, false),
            };
            if cut && deadline.is_some_and(|deadline| deadline <= now) {
                // No time left: refused before queueing.
                return self.cut();
            }
            let sleep = deadline.map(|deadline| clock.sleep_until(deadline));
            // A class that may not use the whole limit does not wait.
            if let Some(shed) = shared.semaphore.refuse_waiting() {
                return self.outcome(shed);
            }
            let wake = Wake::Task(cx.waker().clone());
            let arrival = Arrival {
                class: shared.semaphore.waiting_class(),
                ..Arrival::normal(Kind::Task, deadline, Some(now))
            };
            let key = match shared.semaphore.enqueue_as(arrival, wake, None) {
                Enqueued::Done(acquired) => {
                    return self.outcome(shared.semaphore.tag_waited(acquired));
                }
                Enqueued::Queued(key) => key,
            };
            self.state = State::Queued { key, sleep };
        }
        let State::Queued { key, sleep } = &mut self.state else {
            // Polled after completion: stay pending, like a fused future.
            return Poll::Pending;
        };
        let expired = sleep
            .as_mut()
            .is_some_and(|s| Pin::new(s).poll(cx).is_ready());
        match shared.semaphore.poll_waiter(*key, expired, Some(cx)) {
            // Whether the call's deadline rather than `max_wait` ended the
            // wait: the deadline (the same within a scope) has passed.
            Some(Acquired::Full) if in_call && deadline_passed(shared) => {
                if let Some(traffic) = &shared.traffic {
                    traffic.abandoned();
                }
                self.cut()
            }
            Some(acquired) => self.outcome(shared.semaphore.tag_waited(acquired)),
            None => Poll::Pending,
        }
    }

    /// Ends a wait the call's deadline cut: `Cut`, and an error nobody
    /// counted or published, which [`EnterInCall`] turns into
    /// `DeadlineExceeded`.
    #[cold]
    fn cut(&mut self) -> Poll<Result<BulkheadPermit<'a>, BulkheadFull>> {
        self.state = State::Cut;
        Poll::Ready(Err(BulkheadFull::new(self.shared.instance)))
    }
}

/// Whether the call's deadline, if any, has passed on the bulkhead's clock.
fn deadline_passed(shared: &Shared) -> bool {
    crate::deadline::current().is_some_and(|deadline| deadline <= shared.context.clock().now())
}

/// [`Enter`] for a call through `Policies`: a wait the call's deadline
/// ([`crate::deadline`]) cuts ends with `DeadlineExceeded` (the bulkhead's
/// instance, no rejection counted or published), any other refusal with
/// `BulkheadFull`.
pub(crate) struct EnterInCall<'a>(Enter<'a>);

impl Bulkhead {
    /// [`enter_async`](Self::enter_async) for a call through `Policies`.
    #[inline]
    pub(crate) fn enter_in_call(&self) -> EnterInCall<'_> {
        EnterInCall(Enter::new(self))
    }
}

impl<'a> Future for EnterInCall<'a> {
    type Output = Result<BulkheadPermit<'a>, Rejection>;

    #[inline(always)]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let enter = &mut self.0;
        match enter.poll_in(cx, true) {
            Poll::Ready(Ok(permit)) => Poll::Ready(Ok(permit)),
            Poll::Ready(Err(full)) => Poll::Ready(Err(match enter.state {
                State::Cut => DeadlineExceeded::new(full.instance()).into(),
                _ => full.into(),
            })),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for Enter<'_> {
    #[inline]
    fn drop(&mut self) {
        if let State::Queued { key, .. } = self.state {
            cancel(self.shared, key);
        }
    }
}

#[cold]
fn cancel(shared: &Shared, key: WaiterKey) {
    shared.semaphore.cancel(key, shared.context.clock());
    if let Some(traffic) = &shared.traffic {
        traffic.abandoned();
    }
}

impl fmt::Debug for Enter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            State::Start => "start",
            State::Cut => "cut",
            State::Queued { .. } => "queued",
            State::Done => "done",
        };
        f.debug_struct("Enter")
            .field("instance", &self.shared.instance)
            .field("state", &state)
            .finish()
    }
}
