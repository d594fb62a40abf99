//! A bulkhead alone: what a method or function whose only policy is
//! `#[bulkhead]` calls to take a slot, a rejection being its result.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bulkhead_core::{Bulkhead, BulkheadPermit, CallOutcome};

use super::reject::Reject;

/// [`Bulkhead::enter`], a rejection being given as the method's result.
///
/// # Errors
///
/// The rejected call's result.
#[inline]
pub fn enter<R>(bulkhead: &Bulkhead, reject: Reject<R>) -> Result<BulkheadPermit<'_>, R> {
    match bulkhead.enter() {
        Ok(permit) => Ok(permit),
        Err(full) => Err(reject.reject(full)),
    }
}

/// What a sync method with a bulkhead alone decides at once
/// ([`Bulkhead::enter_at_once`]): `Some(Ok(permit))` with a free slot,
/// `Some(Err(result))` rejected quietly, `None` when [`enter_then`] has to
/// decide.
///
/// The generated sync method is `#[inline(always)]`, and is this, the
/// delegate's call and the slot's release ([`call_then_release`]): what a
/// semaphore written by hand in the caller's loop would be. Everything
/// else, which needs registers kept across calls of its own (a wait, a
/// rejection counted or published, a pool), is [`enter_then`], out of
/// line (docs/benchmarks-history.md, *The wrapper inlined, its slow paths
/// out of line*).
#[inline]
pub fn enter_at_once<R>(
    bulkhead: &Bulkhead,
    reject: Reject<R>,
) -> Option<Result<BulkheadPermit<'_>, R>> {
    match bulkhead.enter_at_once()? {
        Ok(permit) => Some(Ok(permit)),
        Err(full) => Some(Err(reject.reject(full))),
    }
}

/// A sync method's call with the slot [`enter_at_once`] took:
/// `call(receiver, arguments)`, then the slot given back with its result.
/// The call is a closure that captures nothing, given the delegate and the
/// arguments as values, so that the method writes it once for both this
/// and [`enter_then`].
#[inline(always)]
pub fn call_then_release<R, D, A>(
    permit: BulkheadPermit<'_>,
    reject: Reject<R>,
    receiver: D,
    arguments: A,
    call: impl FnOnce(D, A) -> R,
) -> R {
    let output = call(receiver, arguments);
    reject.release(permit, &output);
    output
}

/// The rest of a sync method's call when [`enter_at_once`] could not
/// decide: [`Bulkhead::enter`] (which may wait, count, publish, borrow
/// from a pool, then reject), and with a slot
/// `call(receiver, arguments)`, the slot given back with its result. Out
/// of line: the method inlined into its caller carries only the call to
/// it.
#[inline(never)]
pub fn enter_then<R, D, A>(
    bulkhead: &Bulkhead,
    reject: Reject<R>,
    receiver: D,
    arguments: A,
    call: impl FnOnce(D, A) -> R,
) -> R {
    match bulkhead.enter() {
        Ok(permit) => call_then_release(permit, reject, receiver, arguments, call),
        Err(full) => reject.reject(full),
    }
}

/// [`Bulkhead::enter_async`], a rejection being given as the method's
/// result. The permit counts as dropped until [`Reject::release`] gives it
/// back with the call's result: a future dropped before it completes is a
/// dropped call to an adaptive bulkhead.
#[inline]
pub fn enter_async<R>(bulkhead: &Bulkhead, reject: Reject<R>) -> EnterAsync<'_, R> {
    EnterAsync {
        enter: bulkhead.enter_async(),
        reject,
    }
}

/// The future of [`enter_async`].
#[must_use = "futures do nothing unless polled"]
pub struct EnterAsync<'a, R> {
    enter: bulkhead_core::Enter<'a>,
    reject: Reject<R>,
}

impl<'a, R> Future for EnterAsync<'a, R> {
    type Output = Result<BulkheadPermit<'a>, R>;

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let reject = self.reject;
        match Pin::new(&mut self.enter).poll(cx) {
            Poll::Ready(Ok(mut permit)) => {
                permit.set_outcome(CallOutcome::Dropped);
                Poll::Ready(Ok(permit))
            }
            Poll::Ready(Err(full)) => Poll::Ready(Err(reject.reject(full))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<R> fmt::Debug for EnterAsync<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnterAsync")
            .field("enter", &self.enter)
            .finish_non_exhaustive()
    }
}
