//! How a request of a [`BulkheadService`](super::BulkheadService) gets a
//! slot of a bulkhead with a `max_wait`: at once if one is free (without
//! allocating), else from a place in the bulkhead's queue (one box).

use std::future::Future;
use std::pin::{Pin, pin};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bulkhead_core::{Bulkhead, BulkheadFull, OwnedBulkheadPermit};

use super::error::Unavailable;
use super::retry_after;

/// A request's place in a bulkhead's queue: resolves to its slot, or to the
/// refusal once `max_wait` has passed on the bulkhead's clock. Dropping it
/// leaves the queue at once.
///
/// Boxed: the future of [`Bulkhead::enter_owned_async`] is an `async fn`'s,
/// whose type cannot be named in a struct on stable Rust.
pub(super) type Queued =
    Pin<Box<dyn Future<Output = Result<OwnedBulkheadPermit, Unavailable>> + Send + Sync>>;

/// What [`enter`] got: the outcome already, or a place in the queue.
pub(super) enum Entry {
    Entered(Result<OwnedBulkheadPermit, Unavailable>),
    Queued(Queued),
}

/// Takes a free slot of `bulkhead` (which has a `max_wait`), or joins its
/// queue now, in the order of the calls. A refusal carries its hint, with
/// `hint` as the layer's.
#[inline]
pub(super) fn enter(bulkhead: &Bulkhead, hint: Duration) -> Entry {
    match enter_if_free(bulkhead) {
        Some(entered) => {
            Entry::Entered(entered.map_err(|full| retry_after::refusal(bulkhead, full, hint)))
        }
        None => queue(bulkhead, hint),
    }
}

/// Takes a slot if one looks free, without allocating: `None` if the caller
/// has to queue.
///
/// There is no way to try a bulkhead that waits without either queueing or
/// publishing a rejection, so the first step of an entry is polled here,
/// on the stack, and only when no one waits and a slot is free. If another
/// caller took that slot in between, the entry has queued: it is dropped,
/// which leaves the queue at once (a tracking bulkhead counts it as
/// abandoned), and the caller queues again with [`queue`].
#[inline]
fn enter_if_free(bulkhead: &Bulkhead) -> Option<Result<OwnedBulkheadPermit, BulkheadFull>> {
    if bulkhead.waiting_calls() > 0 || bulkhead.concurrent_calls() >= bulkhead.max_concurrent() {
        return None;
    }
    match poll_now(pin!(bulkhead.enter_owned_async())) {
        Poll::Ready(entered) => Some(entered),
        Poll::Pending => None,
    }
}

/// Queues for a slot of `bulkhead`; the first poll, here, takes the place
/// in the queue (or a slot that came free meanwhile).
#[cold]
#[inline(never)]
fn queue(bulkhead: &Bulkhead, hint: Duration) -> Entry {
    let bulkhead = bulkhead.clone();
    let mut queued: Queued = Box::pin(async move {
        match bulkhead.enter_owned_async().await {
            Ok(permit) => Ok(permit),
            Err(full) => Err(retry_after::refusal(&bulkhead, full, hint)),
        }
    });
    match poll_now(queued.as_mut()) {
        Poll::Ready(entered) => Entry::Entered(entered),
        Poll::Pending => Entry::Queued(queued),
    }
}

/// Polls `future` once with a waker that does nothing: the response future's
/// first poll gives the queue its task's waker.
fn poll_now<F: Future + ?Sized>(future: Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}
