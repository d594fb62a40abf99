//! [`Deadlined`]: a future polled with a deadline in force.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use super::Restore;

pin_project_lite::pin_project! {
    /// A future that runs each of its polls with a deadline in force; made
    /// by [`deadline::scope`](super::scope).
    ///
    /// `Send` and `Sync` when the future inside is.
    #[must_use = "futures do nothing unless polled"]
    pub struct Deadlined<F> {
        deadline: Instant,
        #[pin]
        future: F,
    }
}

impl<F> Deadlined<F> {
    pub(super) fn new(deadline: Instant, future: F) -> Self {
        Deadlined { deadline, future }
    }

    /// The deadline this future sets (an earlier one in force where it is
    /// polled still wins).
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The future inside.
    pub fn into_inner(self) -> F {
        self.future
    }
}

impl<F: Future> Future for Deadlined<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let _restore = Restore::set(*this.deadline);
        this.future.poll(cx)
    }
}

impl<F> fmt::Debug for Deadlined<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Deadlined")
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::task::Waker;
    use std::time::Duration;

    use super::*;
    use crate::deadline::{current, scope};

    fn bounds() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Deadlined<std::future::Ready<()>>>();
    }

    #[test]
    fn each_poll_runs_with_the_deadline_and_restores_the_one_before() {
        bounds();
        let by = Instant::now() + Duration::from_secs(1);
        let mut polls = 0;
        let mut future = std::pin::pin!(scope(
            by,
            std::future::poll_fn(|_| {
                polls += 1;
                assert_eq!(current(), Some(by));
                if polls < 2 {
                    Poll::Pending
                } else {
                    Poll::Ready(())
                }
            })
        ));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(future.as_mut().poll(&mut cx).is_pending());
        assert_eq!(current(), None);
        assert!(future.as_mut().poll(&mut cx).is_ready());
        assert_eq!(current(), None);
    }

    #[test]
    fn a_panicking_poll_restores_the_deadline_before() {
        let outer = Instant::now();
        crate::deadline::with(outer, || {
            let caught = std::panic::catch_unwind(|| {
                let mut future = std::pin::pin!(scope(
                    outer + Duration::from_secs(1),
                    std::future::poll_fn(|_| -> Poll<()> { panic!("in a poll") })
                ));
                let _ = future
                    .as_mut()
                    .poll(&mut Context::from_waker(Waker::noop()));
            });
            assert!(caught.is_err());
            assert_eq!(current(), Some(outer));
        });
    }
}
