//! The attempts of one hedged call, raced: [`Hedged`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::Shared;
use crate::bulkhead::adaptive::dropping_beaten_attempts;
use crate::clock::Sleep;
use crate::events::HedgeEventKind;
use crate::rejection::{CallError, Rejection, RejectionKind};
use crate::retry::Retry;

pin_project_lite::pin_project! {
    /// The attempts of one call: a first one, and a hedge each time the
    /// policy's `delay` passes while some attempt is still running and none
    /// has succeeded, up to `max_hedged`; returned by
    /// [`Hedge::run`](super::Hedge::run).
    ///
    /// - The first `Ok` wins: the other attempts are dropped before this
    ///   future resolves (freeing whatever they hold: a bulkhead slot, a
    ///   place in a queue, a breaker's trial), and `Won` is published if a
    ///   hedge won. An adaptive bulkhead takes no sample from an attempt
    ///   dropped so: it was beaten, not congested.
    /// - A hedge refused by a full bulkhead, an open circuit breaker or the
    ///   rate limiter is skipped (`Skipped`), not a failure of the call; one
    ///   the retry budget refuses is not made (`BudgetExhausted`). Either
    ///   way it counts among the `max_hedged`.
    /// - When every attempt made has failed (and no more are running), the
    ///   call fails with the failure of the last to finish. An attempt that
    ///   fails before `delay` with nothing else running ends the call: a
    ///   hedge starts only after `delay`.
    ///
    /// The first attempt is polled in place, and a call whose first attempt
    /// completes at its first poll costs that attempt and a check: the
    /// clock is read, a timer set and the state of a race kept only once
    /// the first attempt is still pending after its first poll, and nothing
    /// is allocated until a hedge is made.
    ///
    /// `F`, the first attempt's future, is the hedges' `A` when made by
    /// [`Hedge::run`](super::Hedge::run).
    ///
    /// # Cancel safety
    ///
    /// Dropping it drops every attempt, freeing what each holds at once.
    #[must_use = "futures do nothing unless polled"]
    pub struct Hedged<'a, M, A: Future, F = A> {
        shared: &'a Shared,
        retry: Option<&'a Retry>,
        attempt: M,
        #[pin]
        first: Option<F>,
        // `None` until the first attempt is found pending.
        race: Option<Race<A>>,
    }
}

/// What a call keeps once its first attempt was found pending: the hedges
/// and their timer.
struct Race<A: Future> {
    // The hedges running, each with its number (1 for the first).
    hedges: Vec<(u32, Pin<Box<A>>)>,
    // Hedges made, skipped or refused by the budget.
    started: u32,
    // When the first attempt was found pending: the delays count from
    // there.
    since: Instant,
    // The delay of this call's hedges, settled with `since`: `None` while a
    // percentile's estimate warms up (no hedge).
    delay: Option<Duration>,
    // The timer of the next hedge.
    sleep: Option<Sleep>,
    // The failure of the last attempt to fail.
    failed: Option<A::Output>,
}

impl<'a, M, A: Future, F: Future> Hedged<'a, M, A, F>
where
    M: FnMut() -> A,
{
    /// The attempts of a call whose first attempt `first` makes, and each
    /// hedge one that `attempt` makes.
    #[inline(always)]
    pub(super) fn new(
        shared: &'a Shared,
        retry: Option<&'a Retry>,
        first: impl FnOnce() -> F,
        attempt: M,
    ) -> Self {
        Hedged {
            shared,
            retry,
            attempt,
            first: Some(first()),
            race: None,
        }
    }
}

/// Whether a hedge that ended with `result` was refused before it ran: it
/// is then skipped, not a failure of the call.
fn refused<T, E>(result: &Result<T, CallError<E>>) -> Option<RejectionKind> {
    match result {
        Err(CallError::Rejected(rejection)) => match rejection {
            // A deadline that left a hedge no time: the attempts already
            // running go on (a timeout, if any, cuts them at the same
            // deadline).
            Rejection::BulkheadFull(_)
            | Rejection::CircuitOpen(_)
            | Rejection::RateLimited(_)
            | Rejection::DeadlineExceeded(_) => Some(rejection.kind()),
            // An injected fault stands for the dependency failing: the
            // hedge ran.
            Rejection::Timeout(_) | Rejection::Injected(_) => None,
        },
        _ => None,
    }
}

impl<M, A, F, T, E> Future for Hedged<'_, M, A, F>
where
    M: FnMut() -> A,
    A: Future<Output = Result<T, CallError<E>>>,
    F: Future<Output = Result<T, CallError<E>>>,
{
    type Output = Result<T, CallError<E>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        // The first attempt is polled here, and only here.
        if let Some(first) = this.first.as_mut().as_pin_mut()
            && let Poll::Ready(result) = first.poll(cx)
        {
            let Some(race) = this.race else {
                // Ready at its first poll: nothing else was started, and
                // the finished attempt is left to be dropped with this
                // future (which must not be polled again).
                this.shared.first_ended(None);
                return Poll::Ready(result);
            };
            this.first.set(None);
            this.shared.first_ended(Some(race.since));
            if result.is_ok() {
                race.end();
                return Poll::Ready(result);
            }
            race.failed = Some(result);
        }
        let race = this.race.get_or_insert_with(|| Race::new(this.shared));
        race.poll_hedges(this.shared, *this.retry, this.attempt, this.first, cx)
    }
}

impl<A, T, E> Race<A>
where
    A: Future<Output = Result<T, CallError<E>>>,
{
    /// The race of a call whose first attempt was just found pending.
    fn new(shared: &Shared) -> Self {
        Race {
            hedges: Vec::new(),
            started: 0,
            delay: shared.delay(),
            since: shared.context.clock().now(),
            sleep: None,
            failed: None,
        }
    }

    /// Drops the attempts still running, beaten, and the timer.
    fn end(&mut self) {
        if !self.hedges.is_empty() {
            let _beaten = dropping_beaten_attempts();
            self.hedges.clear();
        }
        self.sleep = None;
    }

    /// Polls the hedges, starts the next when it is due, and says how the
    /// call ended if it did; `first` is the first attempt (polled by the
    /// caller), dropped here if a hedge beats it.
    fn poll_hedges<M, F>(
        &mut self,
        shared: &Shared,
        retry: Option<&Retry>,
        attempt: &mut M,
        mut first: Pin<&mut Option<F>>,
        cx: &mut Context<'_>,
    ) -> Poll<A::Output>
    where
        M: FnMut() -> A,
    {
        loop {
            let mut i = 0;
            while i < self.hedges.len() {
                let (hedge, attempt) = &mut self.hedges[i];
                let Poll::Ready(result) = attempt.as_mut().poll(cx) else {
                    i += 1;
                    continue;
                };
                let hedge = *hedge;
                drop(self.hedges.swap_remove(i));
                if result.is_ok() {
                    let _beaten = dropping_beaten_attempts();
                    if first.is_some() {
                        // It ran past the delay.
                        shared.first_overtaken();
                        first.set(None);
                    }
                    self.hedges.clear();
                    self.sleep = None;
                    shared.publish(HedgeEventKind::Won { hedge });
                    return Poll::Ready(result);
                }
                match refused(&result) {
                    Some(rejection) => {
                        shared.publish(HedgeEventKind::Skipped { hedge, rejection });
                    }
                    None => self.failed = Some(result),
                }
            }
            if first.is_none() && self.hedges.is_empty() {
                self.sleep = None;
                return match self.failed.take() {
                    Some(failed) => Poll::Ready(failed),
                    // Every attempt made is a failure kept here, or won.
                    None => unreachable!("a hedged call ended without an outcome"),
                };
            }
            let Some(delay) = self.delay else {
                return Poll::Pending;
            };
            if self.started >= shared.config.max_hedged() {
                return Poll::Pending;
            }
            // The next hedge is due `delay` after the previous one (the
            // first attempt for the first hedge).
            if self.sleep.is_none() {
                let due = delay
                    .checked_mul(self.started + 1)
                    .and_then(|after| self.since.checked_add(after));
                if !in_time(due, retry) {
                    // The call's deadline leaves no time for a hedge due
                    // then, nor for any later one: none is made.
                    self.delay = None;
                    return Poll::Pending;
                }
                self.sleep = Some(match due {
                    Some(due) => shared.context.clock().sleep_until(due),
                    None => Sleep::new(std::future::pending()),
                });
            }
            let Some(sleep) = self.sleep.as_mut() else {
                return Poll::Pending;
            };
            if Pin::new(sleep).poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.sleep = None;
            self.started += 1;
            let hedge = self.started;
            if retry.is_some_and(|retry| !retry.hedge_allowed()) {
                shared.publish(HedgeEventKind::BudgetExhausted { hedge });
                continue;
            }
            shared.publish(HedgeEventKind::Started { hedge });
            self.hedges.push((hedge, Box::pin(attempt())));
        }
    }
}

/// Whether a hedge due at `due` (`None`: never) would start with more than
/// the retry's `min_attempt_time` left before the call's deadline
/// ([`crate::deadline`], read here, out of line, as a timer is set); always
/// without a deadline.
#[inline(never)]
fn in_time(due: Option<Instant>, retry: Option<&Retry>) -> bool {
    let Some(deadline) = crate::deadline::current() else {
        return true;
    };
    let min = retry.map_or(Duration::ZERO, |retry| retry.config().min_attempt_time());
    due.and_then(|due| due.checked_add(min))
        .is_some_and(|starts| starts < deadline)
}

impl<M, A: Future, F> fmt::Debug for Hedged<'_, M, A, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let race = self.race.as_ref();
        f.debug_struct("Hedged")
            .field("instance", &self.shared.instance)
            .field("first_running", &self.first.is_some())
            .field("hedges_running", &race.map_or(0, |race| race.hedges.len()))
            .field("hedges_started", &race.map_or(0, |race| race.started))
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;
    use std::sync::Arc;
    use std::task::Waker;
    use std::time::Duration;

    use super::*;
    use crate::clock::ManualClock;
    use crate::context::PolicyContext;
    use crate::events::{Event, EventBus, EventStream};
    use crate::hedge::{Hedge, HedgeConfig};
    use crate::rejection::{BulkheadFull, CallTimeout, Rejection};
    use crate::retry::RetryConfig;

    const DELAY: Duration = Duration::from_millis(50);

    type Outcome = Result<&'static str, CallError<&'static str>>;

    /// An attempt the test finishes by hand: it resolves to what is put in
    /// its cell, and tells when it is dropped.
    struct Attempt {
        outcome: Rc<RefCell<Option<Outcome>>>,
        dropped: Rc<RefCell<bool>>,
    }

    impl Future for Attempt {
        type Output = Outcome;
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Outcome> {
            match self.outcome.borrow_mut().take() {
                Some(outcome) => Poll::Ready(outcome),
                None => Poll::Pending,
            }
        }
    }

    impl Drop for Attempt {
        fn drop(&mut self) {
            *self.dropped.borrow_mut() = true;
        }
    }

    /// What the test holds of an attempt: where to put its outcome, and
    /// whether it was dropped.
    type Handle = (Rc<RefCell<Option<Outcome>>>, Rc<RefCell<bool>>);

    /// The handles of the attempts made so far: put an outcome in, see
    /// whether it was dropped.
    #[derive(Default, Clone)]
    struct Attempts(Rc<RefCell<Vec<Handle>>>);

    impl Attempts {
        fn make(&self) -> impl FnMut() -> Attempt + use<> {
            let attempts = self.clone();
            move || {
                let (outcome, dropped) = Default::default();
                let attempt = Attempt {
                    outcome: Rc::clone(&outcome),
                    dropped: Rc::clone(&dropped),
                };
                attempts.0.borrow_mut().push((outcome, dropped));
                attempt
            }
        }

        fn count(&self) -> usize {
            self.0.borrow().len()
        }

        fn finish(&self, i: usize, outcome: Outcome) {
            *self.0.borrow()[i].0.borrow_mut() = Some(outcome);
        }

        fn dropped(&self, i: usize) -> bool {
            *self.0.borrow()[i].1.borrow()
        }
    }

    fn hedge(max_hedged: u32, clock: &ManualClock) -> (Hedge, EventStream, PolicyContext) {
        let bus = EventBus::default();
        let events = bus.subscribe();
        let context = PolicyContext::new(Arc::new(clock.clone())).with_events(bus);
        let config = HedgeConfig::builder()
            .max_hedged(max_hedged)
            .delay(DELAY)
            .build()
            .unwrap();
        (
            Hedge::with_context("hedge", config, context.clone()),
            events,
            context,
        )
    }

    fn poll<F: Future>(future: Pin<&mut F>) -> Poll<F::Output> {
        future.poll(&mut Context::from_waker(Waker::noop()))
    }

    fn kinds(events: &mut EventStream) -> Vec<HedgeEventKind> {
        events
            .drain()
            .filter_map(|event| match event {
                Event::Hedge(event) => Some(event.kind),
                _ => None,
            })
            .collect()
    }

    fn full() -> Outcome {
        Err(CallError::Rejected(Rejection::from(BulkheadFull::new("b"))))
    }

    #[test]
    fn a_hedge_starts_only_once_delay_has_passed() {
        let clock = ManualClock::new();
        let (hedge, mut events, _) = hedge(2, &clock);
        let attempts = Attempts::default();
        let mut call = std::pin::pin!(hedge.run(None, attempts.make()));
        assert!(poll(call.as_mut()).is_pending());
        clock.advance(DELAY - Duration::from_nanos(1));
        assert!(poll(call.as_mut()).is_pending());
        assert_eq!(attempts.count(), 1, "no hedge before the delay");
        clock.advance(Duration::from_nanos(1));
        assert!(poll(call.as_mut()).is_pending());
        assert_eq!(attempts.count(), 2, "the first hedge, at the delay");
        clock.advance(DELAY - Duration::from_nanos(1));
        assert!(poll(call.as_mut()).is_pending());
        assert_eq!(attempts.count(), 2);
        clock.advance(Duration::from_nanos(1));
        assert!(poll(call.as_mut()).is_pending());
        assert_eq!(attempts.count(), 3, "the second, a delay later");
        clock.advance(10 * DELAY);
        assert!(poll(call.as_mut()).is_pending());
        assert_eq!(attempts.count(), 3, "max_hedged is 2");
        assert_eq!(
            kinds(&mut events),
            [
                HedgeEventKind::Started { hedge: 1 },
                HedgeEventKind::Started { hedge: 2 }
            ]
        );
    }

    #[test]
    fn the_first_ok_wins_and_the_other_attempts_are_dropped_at_once() {
        let clock = ManualClock::new();
        let (hedge, mut events, _) = hedge(2, &clock);
        let attempts = Attempts::default();
        let mut call = std::pin::pin!(hedge.run(None, attempts.make()));
        assert!(poll(call.as_mut()).is_pending());
        clock.advance(2 * DELAY);
        assert!(poll(call.as_mut()).is_pending());
        assert_eq!(attempts.count(), 3);
        attempts.finish(1, Ok("hedge"));
        assert_eq!(poll(call.as_mut()), Poll::Ready(Ok("hedge")));
        assert!(
            attempts.dropped(0) && attempts.dropped(2),
            "the losers are dropped"
        );
        assert_eq!(clock.sleepers(), 0, "and the timer too");
        assert_eq!(
            kinds(&mut events).last(),
            Some(&HedgeEventKind::Won { hedge: 1 })
        );
    }

    #[test]
    fn a_first_attempt_ready_at_once_reads_no_clock_and_sets_no_timer() {
        let clock = ManualClock::new();
        let (hedge, mut events, _) = hedge(1, &clock);
        let mut call = std::pin::pin!(hedge.run(None, || async { Ok::<_, CallError<()>>(7) }));
        assert_eq!(poll(call.as_mut()), Poll::Ready(Ok(7)));
        assert!(call.race.is_none(), "no race was kept");
        assert_eq!(clock.sleepers(), 0);
        assert_eq!(kinds(&mut events), []);
    }

    #[test]
    fn a_failure_before_the_delay_ends_the_call_without_a_hedge() {
        let clock = ManualClock::new();
        let (hedge, mut events, _) = hedge(1, &clock);
        let attempts = Attempts::default();
        let mut call = std::pin::pin!(hedge.run(None, attempts.make()));
        assert!(poll(call.as_mut()).is_pending());
        attempts.finish(0, Err(CallError::Inner("boom")));
        assert_eq!(
            poll(call.as_mut()),
            Poll::Ready(Err(CallError::Inner("boom")))
        );
        assert_eq!(attempts.count(), 1);
        assert_eq!(kinds(&mut events), []);
    }

    #[test]
    fn a_refused_hedge_is_skipped_and_the_first_attempt_still_counts() {
        let clock = ManualClock::new();
        let (hedge, mut events, _) = hedge(2, &clock);
        let attempts = Attempts::default();
        let mut call = std::pin::pin!(hedge.run(None, attempts.make()));
        assert!(poll(call.as_mut()).is_pending());
        clock.advance(DELAY);
        assert!(poll(call.as_mut()).is_pending());
        attempts.finish(1, full());
        assert!(
            poll(call.as_mut()).is_pending(),
            "a skipped hedge is no failure"
        );
        attempts.finish(0, Ok("first"));
        assert_eq!(poll(call.as_mut()), Poll::Ready(Ok("first")));
        assert_eq!(
            kinds(&mut events),
            [
                HedgeEventKind::Started { hedge: 1 },
                HedgeEventKind::Skipped {
                    hedge: 1,
                    rejection: crate::rejection::RejectionKind::BulkheadFull
                },
            ]
        );
    }

    #[test]
    fn when_every_attempt_fails_the_last_failure_is_the_calls() {
        let clock = ManualClock::new();
        let (hedge, _events, _) = hedge(2, &clock);
        let attempts = Attempts::default();
        let mut call = std::pin::pin!(hedge.run(None, attempts.make()));
        assert!(poll(call.as_mut()).is_pending());
        clock.advance(DELAY);
        assert!(poll(call.as_mut()).is_pending());
        attempts.finish(0, Err(CallError::Inner("first")));
        assert!(poll(call.as_mut()).is_pending(), "the hedge still runs");
        clock.advance(DELAY);
        assert!(poll(call.as_mut()).is_pending());
        assert_eq!(attempts.count(), 3, "a hedge still running gets company");
        attempts.finish(2, full());
        attempts.finish(
            1,
            Err(CallError::Rejected(Rejection::from(CallTimeout::new("t")))),
        );
        let Poll::Ready(Err(CallError::Rejected(rejection))) = poll(call.as_mut()) else {
            panic!("the call should have failed");
        };
        assert_eq!(rejection.instance(), "t", "a timed-out hedge is a failure");
    }

    #[test]
    fn hedges_draw_on_the_retry_budget() {
        let clock = ManualClock::new();
        let (hedge, mut events, context) = hedge(2, &clock);
        let config = RetryConfig::builder()
            .budget_ratio(0.0)
            .budget_min_per_second(0)
            .build()
            .unwrap();
        let retry = Retry::with_context("retry", config, context);
        let attempts = Attempts::default();
        let mut call = std::pin::pin!(hedge.run(Some(&retry), attempts.make()));
        assert!(poll(call.as_mut()).is_pending());
        clock.advance(2 * DELAY);
        assert!(poll(call.as_mut()).is_pending());
        assert_eq!(attempts.count(), 1, "the budget had no room");
        assert_eq!(
            kinds(&mut events),
            [
                HedgeEventKind::BudgetExhausted { hedge: 1 },
                HedgeEventKind::BudgetExhausted { hedge: 2 }
            ]
        );
        attempts.finish(0, Ok("first"));
        assert_eq!(poll(call.as_mut()), Poll::Ready(Ok("first")));
    }

    #[test]
    fn a_zero_delay_starts_every_hedge_at_once() {
        let clock = ManualClock::new();
        let bus = EventBus::default();
        let context = PolicyContext::new(Arc::new(clock.clone())).with_events(bus);
        let config = HedgeConfig::builder()
            .max_hedged(3)
            .delay(Duration::ZERO)
            .build()
            .unwrap();
        let hedge = Hedge::with_context("hedge-zero", config, context);
        let attempts = Attempts::default();
        let mut call = std::pin::pin!(hedge.run(None, attempts.make()));
        assert!(poll(call.as_mut()).is_pending());
        assert_eq!(attempts.count(), 4);
    }

    #[test]
    fn a_percentile_delay_hedges_nothing_while_it_warms_up_then_follows_the_latency() {
        let clock = ManualClock::new();
        let bus = EventBus::default();
        let mut events = bus.subscribe();
        let context = PolicyContext::new(Arc::new(clock.clone())).with_events(bus);
        let config = HedgeConfig::builder()
            .delay(crate::hedge::HedgeDelay::percentile(90.0))
            .build()
            .unwrap();
        let hedge = Hedge::with_context("hedge-p90", config, context);
        assert_eq!(hedge.delay(), None);
        // Warming up: every call takes 10 ms, and none is hedged.
        for _ in 0..crate::hedge::estimate::WARM_UP {
            let attempts = Attempts::default();
            let mut call = std::pin::pin!(hedge.run(None, attempts.make()));
            assert!(poll(call.as_mut()).is_pending());
            clock.advance(Duration::from_millis(10));
            assert!(poll(call.as_mut()).is_pending());
            assert_eq!(attempts.count(), 1, "no hedge while warming up");
            attempts.finish(0, Ok("slow"));
            assert!(poll(call.as_mut()).is_ready());
        }
        let delay = hedge.delay().expect("warmed up");
        assert!(
            delay.abs_diff(Duration::from_millis(10)) < Duration::from_micros(100),
            "{delay:?}"
        );
        assert_eq!(kinds(&mut events), []);

        // A call still running at the estimate gets its hedge then.
        let attempts = Attempts::default();
        let mut call = std::pin::pin!(hedge.run(None, attempts.make()));
        assert!(poll(call.as_mut()).is_pending());
        clock.advance(delay - Duration::from_nanos(1));
        assert!(poll(call.as_mut()).is_pending());
        assert_eq!(attempts.count(), 1);
        clock.advance(Duration::from_nanos(1));
        assert!(poll(call.as_mut()).is_pending());
        assert_eq!(attempts.count(), 2, "hedged at the estimate");
        attempts.finish(1, Ok("hedge"));
        assert_eq!(poll(call.as_mut()), Poll::Ready(Ok("hedge")));
        assert!(
            hedge.delay().unwrap() > delay,
            "the overtaken attempt was slower"
        );

        // Calls answered at their first poll pull it down, reading no clock.
        for _ in 0..100 {
            let mut quick = std::pin::pin!(hedge.run(None, || async { Ok::<_, CallError<()>>(1) }));
            assert!(poll(quick.as_mut()).is_ready());
        }
        assert!(hedge.delay().unwrap() < delay);
    }
}
