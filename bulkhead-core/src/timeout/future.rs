//! An async call raced against its deadline.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::{Deadline, Shared};
use crate::clock::Sleep;
use crate::rejection::{CallTimeout, DeadlineExceeded, Rejection};

pin_project_lite::pin_project! {
    /// A future that runs a call until it completes or its deadline passes;
    /// returned by [`Timeout::run`](super::Timeout::run).
    ///
    /// Each poll polls the call first, so a call that completes wins even
    /// when its deadline has passed too. Only while the call is pending is
    /// the deadline watched: a call that completes on its first poll never
    /// creates a timer. When the deadline passes (on the policy's clock),
    /// the call is dropped at once and the future resolves to
    /// [`CallTimeout`], publishing `TimedOut`.
    ///
    /// # Cancel safety
    ///
    /// Dropping it drops the call: whatever the call holds (a bulkhead slot,
    /// a place in a queue) is given back at once. At the deadline the call
    /// is dropped before this future resolves, so by the time the caller
    /// sees [`CallTimeout`] the call's resources are already free.
    #[must_use = "futures do nothing unless polled"]
    pub struct TimeoutFuture<'a, F> {
        #[pin]
        call: Option<F>,
        shared: &'a Shared,
        // Settled on the first poll that finds the call pending.
        deadline: Deadline<'a>,
        // Created on the first poll that finds the call pending.
        sleep: Option<Sleep>,
    }
}

impl<'a, F: Future> TimeoutFuture<'a, F> {
    pub(super) fn new(shared: &'a Shared, deadline: Deadline<'a>, call: F) -> Self {
        TimeoutFuture {
            call: Some(call),
            shared,
            deadline,
            sleep: None,
        }
    }
}

impl<F: Future> Future for TimeoutFuture<'_, F> {
    type Output = Result<F::Output, CallTimeout>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let Some(call) = this.call.as_mut().as_pin_mut() else {
            // Polled after completion: stay pending, like a fused future.
            return Poll::Pending;
        };
        if let Poll::Ready(output) = call.poll(cx) {
            this.call.set(None);
            *this.sleep = None;
            return Poll::Ready(Ok(output));
        }
        if !deadline_passed(this.shared, this.deadline, this.sleep, cx) {
            return Poll::Pending;
        }
        // Dropped before resolving, so that its slot is free when the caller
        // learns of the timeout.
        this.call.set(None);
        *this.sleep = None;
        Poll::Ready(Err(match this.deadline {
            // The call's deadline, not the timeout's: nothing to publish
            // (`Within` makes it a `DeadlineExceeded`).
            Deadline::Scope(_) => CallTimeout::new(this.shared.instance),
            _ => this.shared.timed_out(),
        }))
    }
}

pin_project_lite::pin_project! {
    /// A [`TimeoutFuture`] of a call through `Policies`, which also ends
    /// the call at its deadline ([`crate::deadline`]) if that comes first:
    /// with `Rejection::DeadlineExceeded` (the timeout's instance) then,
    /// else with `Rejection::Timeout`.
    pub(crate) struct Within<'a, F> {
        #[pin]
        inner: TimeoutFuture<'a, F>,
    }
}

impl<'a, F: Future> Within<'a, F> {
    pub(super) fn new(inner: TimeoutFuture<'a, F>) -> Self {
        Within { inner }
    }
}

impl<F: Future> Future for Within<'_, F> {
    type Output = Result<F::Output, Rejection>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut inner = self.project().inner;
        match inner.as_mut().poll(cx) {
            Poll::Ready(Ok(output)) => Poll::Ready(Ok(output)),
            Poll::Ready(Err(timed_out)) => Poll::Ready(Err(match inner.deadline {
                Deadline::Scope(_) => DeadlineExceeded::new(timed_out.instance()).into(),
                _ => timed_out.into(),
            })),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Whether `deadline` has passed, creating the sleep that wakes the task at
/// the deadline on the first call (after settling a deadline counted from a
/// recent reading). Never, without a deadline.
#[inline(never)]
fn deadline_passed(
    shared: &Shared,
    deadline: &mut Deadline<'_>,
    sleep: &mut Option<Sleep>,
    cx: &mut Context<'_>,
) -> bool {
    if let Deadline::Recent { start, timeline } = *deadline {
        let own = shared.settle(start, timeline);
        // Polled inside the call's scope, if it has one: its deadline binds
        // if it comes first (or with the timeout's).
        *deadline = match crate::deadline::current() {
            Some(scope) if own.is_none_or(|own| scope <= own) => Deadline::Scope(scope),
            _ => Deadline::At(own),
        };
    }
    let (Deadline::At(Some(at)) | Deadline::Scope(at)) = *deadline else {
        return false;
    };
    let sleep = sleep.get_or_insert_with(|| shared.context.clock().sleep_until(at));
    Pin::new(sleep).poll(cx).is_ready()
}

impl<F> fmt::Debug for TimeoutFuture<'_, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match (&self.call, &self.sleep) {
            (None, _) => "done",
            (Some(_), None) => "running",
            (Some(_), Some(_)) => "watching the deadline",
        };
        f.debug_struct("TimeoutFuture")
            .field("instance", &self.shared.instance)
            .field("deadline", &self.deadline)
            .field("state", &state)
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    use std::task::{Wake, Waker};
    use std::time::Duration;

    use crate::clock::{Clock, ManualClock};
    use crate::context::PolicyContext;
    use crate::events::{Event, EventBus, EventStream, TimeoutEventKind};
    use crate::timeout::{Timeout, TimeoutConfig};

    use super::*;

    const DURATION: Duration = Duration::from_secs(1);

    fn timeout(clock: &ManualClock) -> (Timeout, EventStream) {
        let bus = EventBus::default();
        let events = bus.subscribe();
        let context = PolicyContext::new(Arc::new(clock.clone())).with_events(bus);
        let config = TimeoutConfig::builder().duration(DURATION).build().unwrap();
        (
            Timeout::with_context("timeout-async", config, context),
            events,
        )
    }

    fn poll<F: Future>(future: Pin<&mut F>) -> Poll<F::Output> {
        future.poll(&mut Context::from_waker(Waker::noop()))
    }

    /// Sets its flag when dropped.
    struct DropGuard(Arc<AtomicBool>);

    impl Drop for DropGuard {
        fn drop(&mut self) {
            self.0.store(true, SeqCst);
        }
    }

    /// A call that never completes and tells when it was dropped.
    fn stuck_call() -> (impl Future<Output = u32>, Arc<AtomicBool>) {
        let dropped = Arc::new(AtomicBool::new(false));
        let guard = DropGuard(Arc::clone(&dropped));
        let call = async move {
            let _guard = guard;
            std::future::pending::<u32>().await
        };
        (call, dropped)
    }

    #[test]
    fn a_call_that_completes_in_time_passes_its_output() {
        let clock = ManualClock::new();
        let (timeout, mut events) = timeout(&clock);
        let ready_at = clock.now() + Duration::from_millis(999);
        let call = {
            let sleep = clock.sleep_until(ready_at);
            async move {
                sleep.await;
                7
            }
        };
        let mut future = std::pin::pin!(timeout.run(timeout.deadline(), call));
        assert!(poll(future.as_mut()).is_pending());
        clock.advance(Duration::from_millis(999));
        assert_eq!(poll(future.as_mut()), Poll::Ready(Ok(7)));
        assert_eq!(clock.sleepers(), 0, "the deadline's sleep was dropped");
        assert_eq!(events.drain().count(), 0);
    }

    #[test]
    fn a_call_past_its_deadline_is_dropped_and_times_out() {
        let clock = ManualClock::new();
        let (timeout, mut events) = timeout(&clock);
        let (call, dropped) = stuck_call();
        let mut future = std::pin::pin!(timeout.run(timeout.deadline(), call));
        assert!(poll(future.as_mut()).is_pending());
        clock.advance(DURATION - Duration::from_nanos(1));
        assert!(poll(future.as_mut()).is_pending());
        assert!(!dropped.load(SeqCst));

        clock.advance(Duration::from_nanos(1));
        let Poll::Ready(Err(rejection)) = poll(future.as_mut()) else {
            panic!("no timeout at the deadline");
        };
        assert!(dropped.load(SeqCst), "the call was dropped at the deadline");
        assert_eq!(rejection.instance(), "timeout-async");
        let kinds: Vec<_> = events
            .drain()
            .map(|event| match event {
                Event::Timeout(event) => event.kind,
                other => panic!("not a timeout event: {other:?}"),
            })
            .collect();
        assert_eq!(kinds, [TimeoutEventKind::TimedOut { timeout: DURATION }]);
        assert!(
            poll(future.as_mut()).is_pending(),
            "polled after completion"
        );
    }

    #[test]
    fn nothing_times_out_while_the_clock_stands_still() {
        let clock = ManualClock::new();
        let (timeout, mut events) = timeout(&clock);
        let (call, dropped) = stuck_call();
        let mut future = std::pin::pin!(timeout.run(timeout.deadline(), call));
        for _ in 0..1000 {
            assert!(poll(future.as_mut()).is_pending());
        }
        assert_eq!(clock.sleepers(), 1, "one sleep, however often polled");
        assert!(!dropped.load(SeqCst));
        assert_eq!(events.drain().count(), 0);
    }

    #[test]
    fn a_call_ready_on_first_poll_creates_no_sleep() {
        let clock = ManualClock::new();
        let (timeout, _events) = timeout(&clock);
        let mut future = std::pin::pin!(timeout.run(timeout.deadline(), async { "done" }));
        assert_eq!(poll(future.as_mut()), Poll::Ready(Ok("done")));
        assert!(future.sleep.is_none());
        assert_eq!(clock.sleepers(), 0);
    }

    #[test]
    fn without_a_deadline_a_call_never_times_out() {
        let clock = ManualClock::new();
        let (timeout, _events) = timeout(&clock);
        let (call, dropped) = stuck_call();
        let mut future = std::pin::pin!(timeout.run(None, call));
        assert!(poll(future.as_mut()).is_pending());
        clock.advance(Duration::from_secs(365 * 24 * 3600));
        assert!(poll(future.as_mut()).is_pending());
        assert!(future.sleep.is_none());
        assert!(!dropped.load(SeqCst));
    }

    #[test]
    fn a_deadline_passed_before_the_first_poll_times_out_a_pending_call_at_once() {
        let clock = ManualClock::new();
        let (timeout, _events) = timeout(&clock);
        let deadline = timeout.deadline();
        clock.advance(DURATION);
        let (call, dropped) = stuck_call();
        let mut future = std::pin::pin!(timeout.run(deadline, call));
        assert!(matches!(poll(future.as_mut()), Poll::Ready(Err(_))));
        assert!(dropped.load(SeqCst));
        // A call that is ready still wins over a passed deadline.
        let mut late = std::pin::pin!(timeout.run(deadline, async { 1 }));
        assert_eq!(poll(late.as_mut()), Poll::Ready(Ok(1)));
    }

    #[test]
    fn the_deadline_wakes_the_waiting_task() {
        struct Count(AtomicUsize);
        impl Wake for Count {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, SeqCst);
            }
        }
        let clock = ManualClock::new();
        let (timeout, _events) = timeout(&clock);
        let (call, _dropped) = stuck_call();
        let mut future = std::pin::pin!(timeout.run(timeout.deadline(), call));
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&count));
        let mut cx = Context::from_waker(&waker);
        assert!(future.as_mut().poll(&mut cx).is_pending());
        clock.advance(DURATION);
        assert_eq!(count.0.load(SeqCst), 1);
    }

    #[tokio::test]
    async fn on_the_system_clock_a_stuck_call_times_out() {
        let config = TimeoutConfig::builder()
            .duration(Duration::from_millis(10))
            .build()
            .unwrap();
        let timeout = Timeout::new("timeout-system", config);
        let (call, dropped) = stuck_call();
        let rejection = timeout.run(timeout.deadline(), call).await.unwrap_err();
        assert_eq!(rejection.instance(), "timeout-system");
        assert!(dropped.load(SeqCst));
    }

    #[test]
    fn timeout_futures_are_send_when_their_call_is() {
        fn send<T: Send>(_: &T) {}
        let timeout = Timeout::new("timeout-bounds", TimeoutConfig::default());
        let future = timeout.run(timeout.deadline(), async { 1 });
        send(&future);
        assert!(format!("{future:?}").contains("timeout-bounds"));
    }
}
