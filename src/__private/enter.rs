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
