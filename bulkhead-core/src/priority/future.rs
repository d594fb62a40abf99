//! [`Prioritized`]: a future polled with its class set.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::Restore;
use crate::Priority;

pin_project_lite::pin_project! {
    /// A future whose calls are of one class: see
    /// [`priority::scope`](super::scope).
    #[must_use = "futures do nothing unless polled"]
    pub struct Prioritized<F> {
        byte: u8,
        #[pin]
        future: F,
    }
}

impl<F> Prioritized<F> {
    pub(super) fn new(byte: u8, future: F) -> Self {
        Prioritized { byte, future }
    }

    /// The class its calls have (unless a stronger scope around it says
    /// otherwise).
    pub fn class(&self) -> Priority {
        super::resolve(self.byte, None)
    }

    /// The future it wraps.
    pub fn into_inner(self) -> F {
        self.future
    }
}

impl<F: Future> Future for Prioritized<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        // Restored when the poll returns or unwinds.
        let _restore = Restore::set(*this.byte);
        this.future.poll(cx)
    }
}

impl<F> fmt::Debug for Prioritized<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prioritized")
            .field("class", &self.class())
            .finish_non_exhaustive()
    }
}
