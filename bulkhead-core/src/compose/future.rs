//! Async calls: waits never block a thread.
//!
//! One `async fn` holds every layer, so that a call through several policies
//! is one state machine rather than a stack of nested futures; only the part
//! a timeout must be able to drop (the bulkhead and the call) is a future of
//! its own. A hedged call ([`Policies::call_hedged`]) is the exception:
//! each of its attempts is a future of its own, which the hedge races: the
//! first an `async` block of its own type, which the hedge polls in place
//! (so that a call answered at once costs little more than `call_async`),
//! each hedge a [`Policies::attempt_async`]. The body of an attempt is
//! written once, in [`attempt!`], and the retry loop in [`retried!`], each
//! expanded in every place that needs it.

use std::future::Future;

use super::one_task::OneTask;
use super::record::NOT_RECORDED;
use super::{Classifier, Policies, failure, retry_after};
use crate::bulkhead::adaptive::CallOutcome;
use crate::chaos::Chaos;
use crate::clock::since;
use crate::rejection::{CallError, Rejection};
use crate::telemetry::WaitOutcome;

/// `$call` (an expression of `Result<T, CallError<E>>` that awaits the
/// call, [`chaotic!`]) run holding `$permit` (a `BulkheadPermit`), telling
/// an adaptive bulkhead how it ended: dropped while it runs (a timeout or a
/// caller may drop it), then as its result says; an expression of
/// `Result<T, CallError<E>>`, for an `async` context. A macro, not an
/// `async fn`: a nested state machine would be polled out of line (5 ns).
macro_rules! held {
    ($permit:expr, $call:expr) => {{
        let mut permit: crate::bulkhead::BulkheadPermit<'_> = $permit;
        permit.set_outcome(CallOutcome::Dropped);
        let result = $call;
        permit.set_outcome(CallOutcome::of(&result));
        drop(permit);
        result
    }};
}

/// `$call` (a future) awaited under the chaos policy of `$policies`, if
/// any: what it injects (a latency slept on its clock, a fault in the
/// call's place), then the call; an expression of `Result<T,
/// CallError<E>>`, for an `async` context. Without chaos, or with chaos
/// disabled, a branch and a load. The injection's future is boxed: held
/// inline, its sleep made every composed async call's future 96 bytes
/// larger, chaos or not (480 to 576 in `perf/user-crate`'s
/// `composed_async`); boxed, 40 (520), and only a call that chaos delays
/// or faults allocates.
macro_rules! chaotic {
    ($policies:expr, $call:expr) => {{
        let injected = match $policies.chaos.as_ref().and_then(Chaos::draw) {
            None => Ok(()),
            Some(injection) => Box::pin(injection.apply_async()).await,
        };
        match injected {
            Ok(()) => $call.await.map_err(CallError::Inner),
            Err(fault) => Err(Rejection::from(fault).into()),
        }
    }};
}

/// One attempt of `$policies` (a `&Policies`): the breaker around the rate
/// limiter around the timeout around the bulkhead around the chaos policy
/// around `$call()` (an
/// `&mut` of the call's closure), judged by `$classify`; an expression of
/// the attempt's `Result<T, CallError<E>>`, to be used in an `async`
/// context. `$hedge` says whether it is a hedge, whose refusal by the
/// bulkhead or the rate limiter the breaker does not record (see
/// [`Policies::recorded`]).
///
/// The call's deadline ([`crate::deadline`]) is read once, at the start
/// (one thread-local load; without one, every check of it is a branch not
/// taken), and not kept across an await: the attempt does not start with
/// `min_attempt_time` or less left, the rate limiter does not wait past it,
/// and the timeout and the bulkhead's wait, which read it again out of line
/// only when they have to wait, end there (`DeadlineExceeded`).
macro_rules! attempt {
    ($policies:expr, $classify:expr, $call:expr, $hedge:expr) => {{
        let policies: &Policies = $policies;
        let deadline = crate::deadline::current();
        if deadline.is_some_and(|deadline| !policies.in_time(deadline)) {
            Err(policies.late().into())
        } else {
            let permit = match &policies.circuit_breaker {
                None => Ok(None),
                // The permit alone (two words) crosses the awaits: see
                // `Ticket` for why its layout matters here (and keep the
                // error beside it small: the whole result's room is kept).
                Some(breaker) => breaker.try_acquire().map(Some),
            };
            match permit {
                Err(open) => Err(Rejection::from(open).into()),
                Ok(permit) => {
                    let started = match &permit {
                        Some(permit) if permit.tracks_slow_calls() => {
                            Some(policies.read(&policies.clock))
                        }
                        _ => None,
                    };
                    // One clock reading serves the breaker, the rate limiter
                    // and the timeout's deadline (unless the rate limiter makes
                    // us wait).
                    let mut moment = started.filter(|_| policies.shares_clock);
                    let limited = match &policies.rate_limiter {
                        Some(limiter) => {
                            let at = *moment
                                .get_or_insert_with(|| policies.read(&policies.limiter_clock));
                            match limiter
                                .acquire_async_on(since(at, policies.limiter_origin), deadline)
                            {
                                Ok(None) => Ok(()),
                                Ok(Some(reserved)) => {
                                    moment = None;
                                    reserved.await.map_err(Rejection::from)
                                }
                                Err(refused) => Err(refused),
                            }
                        }
                        None => Ok(()),
                    };
                    let moment = moment.filter(|_| policies.shares_clock);
                    // With whether the call's deadline cut the call as it ran
                    // (the timeout's `DeadlineExceeded`), which the breaker
                    // records, unlike one that refused it before it ran.
                    let (result, cut) = match limited {
                        Err(rejection) => (Err(rejection.into()), false),
                        Ok(()) => match &policies.timeout {
                            // Without a timeout the bulkhead and the call are
                            // awaited here rather than in `guarded`: the output
                            // of a nested state machine's out-of-line poll is
                            // copied out of it, and that copy stalls on store
                            // forwarding.
                            None => (
                                match &policies.bulkhead {
                                    None => chaotic!(policies, ($call)()),
                                    Some(bulkhead) => {
                                        let from = policies.stamp();
                                        let entered = bulkhead.enter_in_call().await;
                                        policies.entered(from, &entered);
                                        match entered {
                                            Ok(permit) => {
                                                held!(permit, chaotic!(policies, ($call)()))
                                            }
                                            Err(refused) => Err(refused.into()),
                                        }
                                    }
                                },
                                false,
                            ),
                            Some(timeout) => {
                                let start = moment
                                    .unwrap_or_else(|| policies.read(&policies.timeout_clock));
                                match timeout
                                    .run_from_recent(
                                        start,
                                        &policies.timeout_clock,
                                        policies.guarded($call),
                                    )
                                    .await
                                {
                                    Ok(result) => (result, false),
                                    Err(ended) => (Err(ended.into()), true),
                                }
                            }
                        },
                    };
                    match (permit, &policies.circuit_breaker) {
                        (Some(permit), Some(breaker)) => {
                            let ended = started.map(|_| policies.read(&policies.clock));
                            let took = started
                                .zip(ended)
                                .map(|(started, ended)| ended.saturating_sub(started));
                            let at = (ended.filter(|_| policies.shares_clock))
                                .map(|at| since(at, policies.breaker_origin));
                            policies
                                .recorded(breaker, permit, result, $classify, took, at, $hedge, cut)
                        }
                        _ => result,
                    }
                }
            }
        }
    }};
}

/// The retry loop of `$policies` around `$attempt` (an expression of an
/// attempt's result, awaited in place), judged by `$classify`: the call's
/// result, returned from the enclosing `async fn`.
macro_rules! retried {
    ($policies:expr, $classify:expr, $attempt:expr) => {{
        let policies: &Policies = $policies;
        let mut retry = policies.retry.as_ref().map(|retry| {
            retry.first_attempt();
            (retry, retry.start())
        });
        // Stamps for the histograms (`NOT_RECORDED` while they do not
        // record): the call's start, and each attempt's.
        let start = policies.stamp();
        let mut number: u32 = 0;
        loop {
            number += 1;
            let from = if number == 1 { start } else { policies.stamp() };
            // The attempt's result lives in a scope that ends before the
            // retry's sleep: a local that was borrowed is kept in the
            // future's state until its scope ends (24 bytes more in every
            // composed future for `Result<u64, CallError<()>>`); dropped
            // before the sleep, it need not be kept there.
            let delay = match $attempt {
                // A success is judged by its variant alone, through an
                // `Ok(())` of its own: no reference to the value is taken,
                // so that it can stay in registers to the return (a result
                // whose address escapes to the classifier's functions is
                // kept in memory, and its 16 bytes were reloaded by one
                // load wider than the stores that wrote it: a failed store
                // forward on every call).
                Ok(value) => {
                    let judged = &Ok::<(), _>(());
                    let end = policies.attempt_ended(number, from, judged, $classify);
                    let retried = policies.retry_after(&mut retry, judged, $classify);
                    debug_assert!(retried.is_none(), "a success is not retried");
                    policies.call_ended(start, end, judged, $classify);
                    return Ok(value);
                }
                Err(error) => {
                    let result = Err(error);
                    let end = policies.attempt_ended(number, from, &result, $classify);
                    match policies.retry_after(&mut retry, &result, $classify) {
                        Some(delay) => delay,
                        None => {
                            policies.call_ended(start, end, &result, $classify);
                            return result;
                        }
                    }
                }
            };
            if let Some((retry, _)) = &retry {
                retry.sleep_async(delay).await;
            }
        }
    }};
}

impl Policies {
    /// Runs the future `call` makes under the policies, without blocking a
    /// thread. The bulkhead slot is held until that future completes or is
    /// dropped; a timeout drops it at the deadline (freeing the slot) and
    /// ends the attempt with `Rejection::Timeout`.
    ///
    /// Attempts are made one at a time: a hedge does not apply here (see
    /// [`call_hedged`](Self::call_hedged)), so that a call through policies
    /// without one is not a larger future for it.
    ///
    /// Nothing happens until the returned future is first polled.
    ///
    /// # Errors
    ///
    /// As for [`call`](Self::call).
    pub async fn call_async<T, E, F, Fut>(
        &self,
        classify: &Classifier<'_, E>,
        mut call: F,
    ) -> Result<T, CallError<E>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        retried!(self, classify, attempt!(self, classify, &mut call, false))
    }

    /// As [`call_async`](Self::call_async), with the hedge if the policies
    /// have one: an attempt still running after the hedge's `delay` gets
    /// company (see [`Hedged`](crate::Hedged)), `call` making the future of
    /// each attempt, several of which may then run at once. Without a
    /// hedge, it is `call_async`.
    ///
    /// The attempts running at once each call `call` when they get their
    /// slot, one after the other: they are all polled by the task polling
    /// this future, which is `Send` when `call` and its futures are.
    ///
    /// # Errors
    ///
    /// As for [`call`](Self::call).
    pub async fn call_hedged<T, E, F, Fut>(
        &self,
        classify: &Classifier<'_, E>,
        call: F,
    ) -> Result<T, CallError<E>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let Some(hedge) = &self.hedge else {
            // `call` in a closure of its own type: `call_async` for `F`
            // itself is then not instantiated here, and stays a single
            // call site (inlined) for a caller that picks one or the other,
            // as `Pipeline::execute_async` does.
            let mut call = call;
            #[allow(clippy::redundant_closure)]
            return self.call_async(classify, move || call()).await;
        };
        // SAFETY: the cell is a local of this future, and its references
        // go only to `call` below, which only the attempts use: the first
        // (an `async` block) and the hedges (`attempt_async` futures), all
        // made and polled by the `Hedged` awaited here, inside this
        // future's `poll`, and dropped with it at the latest.
        #[allow(unsafe_code)]
        let shared = unsafe { OneTask::new(call) };
        let call = || shared.call();
        // What the attempts borrow, behind one reference: a future that
        // captures several moves them into its locals at its first poll by
        // a wide copy of values just written one by one, which stalls on
        // store forwarding (docs/design/performance-33.md, item 4); one
        // word moves as it was written.
        let borrowed = Borrowed {
            policies: self,
            classify,
            call: &call,
        };
        let borrowed = &borrowed;
        // A round of hedges is recorded as one attempt.
        retried!(self, classify, {
            // The first attempt is written out here rather than made by
            // `attempt_async`: a future of its own type, polled at one
            // place (`Hedged::poll`), where it can be inlined, and made in
            // the place it is polled in.
            let first = move || async move {
                let mut call = borrowed.call;
                attempt!(borrowed.policies, borrowed.classify, &mut call, false)
            };
            hedge
                .run_with_first(self.retry.as_ref(), first, move || {
                    borrowed
                        .policies
                        .attempt_async(borrowed.classify, borrowed.call)
                })
                .await
        })
    }

    /// One hedge, as a future of its own (see [`attempt!`]).
    async fn attempt_async<T, E, F, Fut>(
        &self,
        classify: &Classifier<'_, E>,
        mut call: F,
    ) -> Result<T, CallError<E>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        attempt!(self, classify, &mut call, true)
    }

    /// What the retry makes of an attempt's result: `Some(delay)` to try
    /// again after `delay`, `None` to return it.
    #[inline]
    fn retry_after<T, E>(
        &self,
        retry: &mut Option<(&crate::retry::Retry, crate::retry::RetryState<'_>)>,
        result: &Result<T, CallError<E>>,
        classify: &Classifier<'_, E>,
    ) -> Option<std::time::Duration> {
        let (_, state) = retry.as_mut()?;
        match failure(result, classify) {
            None => {
                if let Some((_, state)) = retry.take() {
                    state.on_success();
                }
                None
            }
            // Only a failure reads the deadline again (the attempt's
            // reading was not kept across its awaits).
            Some(failure) => {
                let asked = retry_after(result, classify);
                state.on_failure_within(failure, asked, crate::deadline::current())
            }
        }
    }

    /// The bulkhead around the chaos policy around the call: what a timeout
    /// drops at its deadline (a wait for a slot it cuts short is recorded
    /// as abandoned: [`Waiting`]).
    async fn guarded<T, E, F, Fut>(&self, call: &mut F) -> Result<T, CallError<E>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        match &self.bulkhead {
            Some(bulkhead) => {
                let waiting = Waiting {
                    policies: self,
                    from: self.stamp(),
                };
                let entered = bulkhead.enter_in_call().await;
                self.entered(waiting.over(), &entered);
                let permit = entered?;
                held!(permit, chaotic!(self, call()))
            }
            None => chaotic!(self, call()),
        }
    }
}

/// What every attempt of a hedged call borrows: the policies, the
/// classifier and the caller's closure (see [`Policies::call_hedged`]).
struct Borrowed<'p, 'c, 'e, E, C> {
    policies: &'p Policies,
    classify: &'c Classifier<'e, E>,
    call: &'c C,
}

/// A wait for a slot under a timeout, while it lasts: dropped before it is
/// [`over`](Self::over) (the timeout dropped the wait), it records an
/// abandoned wait, as a sync call's wait cut by its timeout is.
struct Waiting<'a> {
    policies: &'a Policies,
    /// Its start's stamp, `NOT_RECORDED` if not recorded.
    from: u64,
}

impl Waiting<'_> {
    /// The wait ended: its start's stamp.
    #[inline(always)]
    fn over(mut self) -> u64 {
        std::mem::replace(&mut self.from, NOT_RECORDED)
    }
}

impl Drop for Waiting<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.policies.waited(self.from, WaitOutcome::Abandoned);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::cell::Cell;
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::{Arc, Mutex};
    use std::task::{Context, Poll, Waker};
    use std::time::Duration;

    use crate::bulkhead::{Bulkhead, BulkheadConfig};
    use crate::clock::ManualClock;
    use crate::compose::{Classifier, Policies};
    use crate::context::PolicyContext;
    use crate::events::{Event, EventBus, EventStream, HedgeEventKind, RetryEventKind};
    use crate::hedge::{Hedge, HedgeConfig};
    use crate::rejection::CallError;
    use crate::retry::{Retry, RetryConfig};
    use crate::telemetry::{AttemptHook, AttemptRecord, HistogramKind, Outcome, TelemetryHub};

    const DELAY: Duration = Duration::from_millis(10);

    /// A call's future, hedged or not.
    type Call<'a> = Pin<Box<dyn Future<Output = Result<u64, CallError<&'static str>>> + 'a>>;

    fn poll<F: Future + ?Sized>(future: Pin<&mut F>) -> Poll<F::Output> {
        future.poll(&mut Context::from_waker(Waker::noop()))
    }

    /// The attempts the hub's hook was told of: (number, outcome).
    #[derive(Default)]
    struct Attempts(Mutex<Vec<(u32, Outcome)>>);

    impl AttemptHook for Attempts {
        fn attempt(&self, record: &AttemptRecord<'_>) {
            self.0.lock().unwrap().push((record.number, record.outcome));
        }
    }

    /// Policies on `clock` with a bulkhead of two slots, a hedge after
    /// `DELAY` (one at most), `retry` if given, recording into a hub whose
    /// hook collects the attempts; the events of all of them.
    struct Setup {
        clock: ManualClock,
        policies: Policies,
        hub: TelemetryHub,
        attempts: Arc<Attempts>,
        events: std::cell::RefCell<EventStream>,
    }

    fn setup(name: &str, retry: Option<RetryConfig>) -> Setup {
        let clock = ManualClock::new();
        let bus = EventBus::default();
        let events = bus.subscribe();
        let context = PolicyContext::new(Arc::new(clock.clone())).with_events(bus);
        let hub = TelemetryHub::new();
        let attempts = Arc::new(Attempts::default());
        hub.set_attempt_hook(Arc::clone(&attempts) as Arc<dyn AttemptHook>);
        hub.record();
        let hedge = HedgeConfig::builder()
            .max_hedged(1)
            .delay(DELAY)
            .build()
            .unwrap();
        let bulkhead = BulkheadConfig::builder().max_concurrent(2).build().unwrap();
        let mut policies = Policies::on_clock(Arc::new(clock.clone()))
            .with_bulkhead(Bulkhead::with_context(name, bulkhead, context.clone()))
            .with_hedge(Hedge::with_context(name, hedge, context.clone()))
            .with_telemetry(hub.instance(name));
        if let Some(retry) = retry {
            policies = policies.with_retry(Retry::with_context(name, retry, context));
        }
        Setup {
            clock,
            policies,
            hub,
            attempts,
            events: std::cell::RefCell::new(events),
        }
    }

    impl Setup {
        fn attempts(&self) -> Vec<(u32, Outcome)> {
            self.attempts.0.lock().unwrap().clone()
        }

        /// The calls recorded, by outcome.
        fn calls(&self) -> Vec<(String, u64)> {
            self.hub
                .histograms()
                .into_iter()
                .filter(|h| h.kind() == HistogramKind::CallDuration && h.histogram().count() > 0)
                .map(|h| (h.outcome().to_owned(), h.histogram().count()))
                .collect()
        }

        fn hedge_events(&self) -> Vec<HedgeEventKind> {
            self.events
                .borrow_mut()
                .drain()
                .filter_map(|event| match event {
                    Event::Hedge(event) => Some(event.kind),
                    _ => None,
                })
                .collect()
        }

        fn slots_held(&self) -> u32 {
            self.policies.bulkhead().unwrap().concurrent_calls()
        }
    }

    /// A future that stays pending, and says when it is dropped.
    struct Hanging<'a>(&'a Cell<bool>);

    impl Future for Hanging<'_> {
        type Output = Result<u64, ()>;
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
            Poll::Pending
        }
    }

    impl Drop for Hanging<'_> {
        fn drop(&mut self) {
            self.0.set(true);
        }
    }

    #[test]
    fn a_hedged_call_answered_at_its_first_poll_is_one_attempt_and_no_hedge() {
        let setup = setup("future-ready", None);
        let classify = Classifier::new();
        let made = Cell::new(0);
        let mut call = std::pin::pin!(setup.policies.call_hedged(&classify, || {
            made.set(made.get() + 1);
            async { Ok::<u64, ()>(7) }
        }));
        assert_eq!(poll(call.as_mut()), Poll::Ready(Ok(7)));
        assert_eq!(made.get(), 1, "one attempt made");
        assert_eq!(
            setup.slots_held(),
            0,
            "its slot given back before it returned"
        );
        assert_eq!(setup.clock.sleepers(), 0, "no timer set");
        assert_eq!(setup.hedge_events(), []);
        assert_eq!(setup.attempts(), [(1, Outcome::Success)]);
        assert_eq!(setup.calls(), [("success".to_owned(), 1)]);
    }

    #[test]
    fn a_slow_first_attempt_gets_its_hedge_after_the_delay_and_is_dropped_when_it_loses() {
        let setup = setup("future-slow", None);
        let classify = Classifier::new();
        let first_dropped = Cell::new(false);
        let made = Cell::new(0);
        let call = || {
            made.set(made.get() + 1);
            let first = made.get() == 1;
            let hanging = Hanging(&first_dropped);
            async move {
                if first {
                    hanging.await
                } else {
                    drop(hanging);
                    Ok(8)
                }
            }
        };
        let mut call = std::pin::pin!(setup.policies.call_hedged(&classify, call));
        assert!(poll(call.as_mut()).is_pending());
        assert_eq!(setup.slots_held(), 1);
        setup.clock.advance(DELAY - Duration::from_nanos(1));
        assert!(poll(call.as_mut()).is_pending());
        assert_eq!(made.get(), 1, "no hedge before the delay");
        assert!(!first_dropped.get());
        setup.clock.advance(Duration::from_nanos(1));
        assert_eq!(poll(call.as_mut()), Poll::Ready(Ok(8)), "the hedge won");
        assert_eq!(made.get(), 2);
        assert!(
            first_dropped.get(),
            "the first attempt, beaten, was dropped"
        );
        assert_eq!(setup.slots_held(), 0, "and its slot given back");
        assert_eq!(setup.clock.sleepers(), 0);
        assert_eq!(
            setup.hedge_events(),
            [
                HedgeEventKind::Started { hedge: 1 },
                HedgeEventKind::Won { hedge: 1 }
            ]
        );
        assert_eq!(
            setup.attempts(),
            [(1, Outcome::Success)],
            "a round of hedges is one attempt"
        );
        assert_eq!(setup.calls(), [("success".to_owned(), 1)]);
    }

    /// A future that stays pending until its cell holds a value, and says
    /// when it is dropped.
    struct Awaiting<'a> {
        value: &'a Cell<Option<u64>>,
        dropped: &'a Cell<bool>,
    }

    impl Future for Awaiting<'_> {
        type Output = Result<u64, ()>;
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
            match self.value.take() {
                Some(value) => Poll::Ready(Ok(value)),
                None => Poll::Pending,
            }
        }
    }

    impl Drop for Awaiting<'_> {
        fn drop(&mut self) {
            self.dropped.set(true);
        }
    }

    #[test]
    fn a_first_attempt_pending_at_its_first_poll_then_ready_before_the_delay_is_one_attempt_and_no_hedge()
     {
        let setup = setup("future-pending-then-ready", None);
        let classify = Classifier::new();
        let (value, dropped) = (Cell::new(None), Cell::new(false));
        let made = Cell::new(0);
        let call = || {
            made.set(made.get() + 1);
            Awaiting {
                value: &value,
                dropped: &dropped,
            }
        };
        let mut call = std::pin::pin!(setup.policies.call_hedged(&classify, call));
        assert!(poll(call.as_mut()).is_pending());
        assert_eq!(setup.clock.sleepers(), 1, "the hedge's timer, set");
        assert_eq!(setup.slots_held(), 1);
        setup.clock.advance(DELAY - Duration::from_nanos(1));
        value.set(Some(9));
        assert_eq!(poll(call.as_mut()), Poll::Ready(Ok(9)));
        assert_eq!(made.get(), 1, "no hedge made");
        assert!(dropped.get());
        assert_eq!(setup.clock.sleepers(), 0, "the timer dropped");
        assert_eq!(setup.slots_held(), 0);
        assert_eq!(setup.hedge_events(), []);
        assert_eq!(setup.attempts(), [(1, Outcome::Success)]);
        assert_eq!(setup.calls(), [("success".to_owned(), 1)]);
    }

    #[test]
    fn a_first_attempt_that_wins_after_its_hedge_started_drops_the_hedge() {
        let setup = setup("future-first-wins", None);
        let classify = Classifier::new();
        let (first, hedge) = (Cell::new(None), Cell::new(None));
        let (first_dropped, hedge_dropped) = (Cell::new(false), Cell::new(false));
        let made = Cell::new(0);
        let call = || {
            made.set(made.get() + 1);
            if made.get() == 1 {
                Awaiting {
                    value: &first,
                    dropped: &first_dropped,
                }
            } else {
                Awaiting {
                    value: &hedge,
                    dropped: &hedge_dropped,
                }
            }
        };
        let mut call = std::pin::pin!(setup.policies.call_hedged(&classify, call));
        assert!(poll(call.as_mut()).is_pending());
        setup.clock.advance(DELAY - Duration::from_nanos(1));
        assert!(poll(call.as_mut()).is_pending());
        assert_eq!(made.get(), 1, "no hedge before the delay");
        setup.clock.advance(Duration::from_nanos(1));
        assert!(poll(call.as_mut()).is_pending());
        assert_eq!(made.get(), 2, "the hedge, at exactly the delay");
        assert_eq!(setup.slots_held(), 2, "each attempt holds a slot");
        first.set(Some(1));
        assert_eq!(poll(call.as_mut()), Poll::Ready(Ok(1)), "the first won");
        assert!(first_dropped.get() && hedge_dropped.get());
        assert_eq!(setup.slots_held(), 0, "the beaten hedge's slot given back");
        assert_eq!(setup.clock.sleepers(), 0);
        assert_eq!(
            setup.hedge_events(),
            [HedgeEventKind::Started { hedge: 1 }],
            "no `Won`: the first attempt is not a hedge"
        );
        assert_eq!(setup.attempts(), [(1, Outcome::Success)]);
        assert_eq!(setup.calls(), [("success".to_owned(), 1)]);
    }

    #[test]
    fn a_failed_attempt_is_recorded_retried_after_its_delay_then_the_success_recorded() {
        let retry = RetryConfig::builder()
            .max_attempts(3)
            .wait(DELAY * 10)
            .build()
            .unwrap();
        let setup = setup("future-retried", Some(retry));
        let classify = Classifier::new();
        let made = Cell::new(0_u64);
        let call = || {
            made.set(made.get() + 1);
            let attempt = made.get();
            async move {
                if attempt == 1 {
                    Err("boom")
                } else {
                    Ok(attempt)
                }
            }
        };
        for hedged in [false, true] {
            made.set(0);
            setup.attempts.0.lock().unwrap().clear();
            let mut call: Call<'_> = if hedged {
                Box::pin(setup.policies.call_hedged(&classify, call))
            } else {
                Box::pin(setup.policies.call_async(&classify, call))
            };
            assert!(poll(call.as_mut()).is_pending(), "waiting to retry");
            assert_eq!(setup.attempts(), [(1, Outcome::Error)]);
            setup.clock.advance(DELAY * 10);
            assert_eq!(poll(call.as_mut()), Poll::Ready(Ok(2)));
            assert_eq!(
                setup.attempts(),
                [(1, Outcome::Error), (2, Outcome::Success)]
            );
            let retried: Vec<_> = setup
                .events
                .borrow_mut()
                .drain()
                .filter_map(|event| match event {
                    Event::Retry(event) => Some(event.kind),
                    _ => None,
                })
                .collect();
            assert!(
                matches!(
                    retried.last(),
                    Some(RetryEventKind::Succeeded { attempts: 2 })
                ),
                "{retried:?}"
            );
        }
        assert_eq!(setup.calls(), [("success".to_owned(), 2)]);
        assert_eq!(setup.slots_held(), 0);
    }
}
