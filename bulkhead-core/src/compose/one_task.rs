//! [`OneTask`]: the caller's `FnMut` shared by the attempts of one hedged
//! call.
//!
//! # Implementation details
//!
//! A hedged attempt calls `call` once it has its slot, so the futures of
//! several attempts each hold a reference to it at once. They are all
//! fields of the one future of the call ([`Policies::call_hedged`]'s),
//! polled one after the other from its `poll`, on the thread polling it:
//! their calls never overlap. A `RefCell` is all the exclusion needed (it
//! also catches a call nested in another, which cannot happen: `call` has
//! no way to reach the cell), but the attempts hold their `&` of it across
//! awaits, and a `RefCell` is not `Sync`: the call's future would not be
//! `Send`. A `Mutex` would make it `Send` at the price of two atomic
//! read-modify-writes a call, for an exclusion the call's structure
//! already gives; `OneTask` is the `RefCell` with that structure stated as
//! the safety contract of [`OneTask::new`].
//!
//! [`Policies::call_hedged`]: super::Policies::call_hedged

use std::cell::RefCell;

/// `call`, shared by the attempts of one hedged call, which one task polls.
pub(super) struct OneTask<F>(RefCell<F>);

impl<F> OneTask<F> {
    /// Shares `call` among the attempts of one call.
    ///
    /// # Safety
    ///
    /// Every use of the cell (every [`call`](Self::call)) must happen
    /// inside the `poll` or the `drop` of one future, which owns the cell
    /// and every reference to it: two uses then never run on two threads at
    /// once, since polling or dropping takes that future by `&mut`.
    pub(super) unsafe fn new(call: F) -> Self {
        OneTask(RefCell::new(call))
    }

    /// Calls `call`.
    ///
    /// # Panics
    ///
    /// If called from inside `call` (which has no way to reach the cell).
    #[inline]
    pub(super) fn call<R>(&self) -> R
    where
        F: FnMut() -> R,
    {
        (self.0.borrow_mut())()
    }
}

// SAFETY: a `&OneTask` is `Send` so that the future holding the cell and
// its references is `Send` when `F` is: that future may move to another
// thread between polls, carrying `F` with it (hence `F: Send`), and the
// executor that moves it orders the polls before the move before those
// after. What `Sync` promises beyond that, uses from two threads at once,
// cannot happen: `OneTask::new`'s contract keeps every use inside the
// `poll` or `drop` of the one future that owns the cell, which two threads
// cannot run at once. Within one thread, the `RefCell` keeps the `&mut F`
// unique.
unsafe impl<F: Send> Sync for OneTask<F> {}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::Arc;
    use std::task::{Context, Poll, Waker};
    use std::time::Duration;

    use crate::clock::ManualClock;
    use crate::compose::{Classifier, Policies};
    use crate::context::PolicyContext;
    use crate::hedge::{Hedge, HedgeConfig};

    const DELAY: Duration = Duration::from_millis(10);

    fn poll<F: Future + ?Sized>(future: Pin<&mut F>) -> Poll<F::Output> {
        future.poll(&mut Context::from_waker(Waker::noop()))
    }

    /// The `unsafe impl Sync` at work (run it under Miri: `cargo +nightly
    /// miri test -p bulkhead-core --lib one_task`): a hedged call whose
    /// attempts share a `FnMut`, polled on three threads in turn, each
    /// poll making an attempt that calls it; the future crossing threads
    /// also proves it `Send`.
    #[test]
    fn hedged_attempts_share_an_fn_mut_one_at_a_time_across_threads() {
        let clock = ManualClock::new();
        let config = HedgeConfig::builder()
            .max_hedged(2)
            .delay(DELAY)
            .build()
            .unwrap();
        let context = PolicyContext::new(Arc::new(clock.clone()));
        let policies = Policies::on_clock(Arc::new(clock.clone()))
            .with_hedge(Hedge::with_context("one-task", config, context));
        let classify = Classifier::new();
        // The `FnMut`'s state: the attempts made; the first two hang, the
        // third answers.
        let mut made = Vec::new();
        let call = || {
            made.push(made.len() + 1);
            let attempt = made.len();
            async move {
                if attempt < 3 {
                    std::future::pending::<()>().await;
                }
                Ok::<_, ()>(attempt)
            }
        };
        let mut future = Box::pin(policies.call_hedged(&classify, call));
        assert!(
            poll(future.as_mut()).is_pending(),
            "the first attempt hangs"
        );
        clock.advance(DELAY);
        let polled = std::thread::scope(|s| s.spawn(|| poll(future.as_mut())).join());
        assert!(polled.unwrap().is_pending(), "so does the first hedge");
        clock.advance(DELAY);
        let polled = std::thread::scope(|s| s.spawn(|| poll(future.as_mut())).join());
        assert_eq!(polled.unwrap(), Poll::Ready(Ok(3)), "the second answers");
        drop(future);
        assert_eq!(made, [1, 2, 3], "each attempt called it once, in turn");
    }
}
