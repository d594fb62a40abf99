//! The innermost layer of an async call: the bulkhead around the call, as
//! one future a timeout can drop.
//!
//! Written by hand rather than as an `async fn` so that its poll inlines
//! into the caller's: the output of an out-of-line poll is written field by
//! field and read back as a whole, which stalls on store forwarding.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::bulkhead::{Bulkhead, BulkheadPermit, Enter};
use crate::rejection::{CallError, Rejection};

pin_project_lite::pin_project! {
    /// Enters the bulkhead (if any), then runs the call, holding the slot
    /// until the call's future completes or this future is dropped.
    #[must_use = "futures do nothing unless polled"]
    pub(super) struct Guarded<'a, F, Fut> {
        bulkhead: Option<&'a Bulkhead>,
        make: &'a mut F,
        enter: Option<Enter<'a>>,
        // Declared before `permit`: dropped first, so that a call dropped
        // midway is gone before its slot is released.
        #[pin]
        call: Option<Fut>,
        permit: Option<BulkheadPermit<'a>>,
        started: bool,
    }
}

impl<'a, F, Fut> Guarded<'a, F, Fut> {
    #[inline]
    pub(super) fn new(bulkhead: Option<&'a Bulkhead>, make: &'a mut F) -> Self {
        Guarded {
            bulkhead,
            make,
            enter: None,
            call: None,
            permit: None,
            started: false,
        }
    }
}

impl<F, Fut, T, E> Future for Guarded<'_, F, Fut>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    type Output = Result<T, CallError<E>>;

    // `#[inline]` is not enough for LLVM once a bulkhead's enter is in.
    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        if !*this.started {
            if let Some(bulkhead) = *this.bulkhead {
                let enter = this.enter.get_or_insert_with(|| bulkhead.enter_async());
                match Pin::new(enter).poll(cx) {
                    Poll::Ready(Ok(permit)) => {
                        *this.enter = None;
                        *this.permit = Some(permit);
                    }
                    Poll::Ready(Err(full)) => {
                        *this.enter = None;
                        *this.started = true;
                        return Poll::Ready(Err(Rejection::from(full).into()));
                    }
                    Poll::Pending => return Poll::Pending,
                }
            }
            *this.started = true;
            this.call.set(Some((this.make)()));
        }
        let Some(call) = this.call.as_mut().as_pin_mut() else {
            // Polled after completion: stay pending, like a fused future.
            return Poll::Pending;
        };
        match call.poll(cx) {
            Poll::Ready(output) => {
                this.call.set(None);
                *this.permit = None;
                Poll::Ready(output.map_err(CallError::Inner))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}
