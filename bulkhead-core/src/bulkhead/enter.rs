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
use crate::rejection::BulkheadFull;

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

enum State {
    Start,
    Queued {
        key: WaiterKey,
        /// `None` when the deadline is too far away to represent.
        sleep: Option<Sleep>,
    },
    Done,
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
        let this = &mut *self;
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
        this.poll_slow(cx)
    }
}

impl<'a> Enter<'a> {
    #[inline(never)]
    fn poll_slow(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<BulkheadPermit<'a>, BulkheadFull>> {
        let shared = self.shared;
        if let State::Start = self.state {
            // The deadline is fixed before queueing: whoever sees this caller
            // waiting may move a manual clock and know that it counts.
            // The sleep is made before queueing too: if a clock panics here,
            // no waiter is left in the queue without anyone to withdraw it.
            let clock = shared.context.clock();
            let now = clock.now();
            let deadline = now.checked_add(shared.config.max_wait());
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
            Some(acquired) => self.outcome(shared.semaphore.tag_waited(acquired)),
            None => Poll::Pending,
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
            State::Queued { .. } => "queued",
            State::Done => "done",
        };
        f.debug_struct("Enter")
            .field("instance", &self.shared.instance)
            .field("state", &state)
            .finish()
    }
}
