//! A call's deadline (`bulkhead_core::deadline`) through the composed
//! policies, sync and async, on a `ManualClock`: every wait is cut to the
//! time left (the slot wait, the rate limiter's, the retry's delay, a
//! hedge's delay, the timeout), a call that cannot start in time is refused
//! with `DeadlineExceeded` (which policy refused it is its instance), and
//! the breaker records a `DeadlineExceeded` only when it cut a running call.

use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bulkhead_core::{
    Bulkhead, BulkheadConfig, BulkheadEventKind, CallError, CircuitBreaker, CircuitBreakerConfig,
    Classifier, Clock, Event, EventBus, EventStream, GiveUpReason, Hedge, HedgeConfig,
    HedgeEventKind, ManualClock, Policies, PolicyContext, RateLimiter, RateLimiterConfig,
    Rejection, RejectionKind, Retry, RetryConfig, RetryConfigBuilder, RetryEventKind, Timeout,
    TimeoutConfig, deadline,
};

const MS: Duration = Duration::from_millis(1);

/// A manual clock, shared by every policy, and their events.
struct World {
    clock: ManualClock,
    shared: Arc<dyn Clock>,
    bus: EventBus,
}

impl World {
    fn new() -> (World, EventStream) {
        let clock = ManualClock::new();
        let bus = EventBus::default();
        let events = bus.subscribe();
        let shared: Arc<dyn Clock> = Arc::new(clock.clone());
        (World { clock, shared, bus }, events)
    }

    fn context(&self) -> PolicyContext {
        PolicyContext::new(Arc::clone(&self.shared)).with_events(self.bus.clone())
    }

    fn policies(&self) -> Policies {
        Policies::on_clock(Arc::clone(&self.shared))
    }

    fn in_(&self, after: Duration) -> Instant {
        self.clock.now() + after
    }

    fn retry(&self, config: RetryConfigBuilder) -> Retry {
        Retry::with_context("d.retry", config.build().unwrap(), self.context())
    }

    fn bulkhead(&self, max_wait: Duration) -> Bulkhead {
        let config = BulkheadConfig::builder()
            .max_concurrent(1)
            .max_wait(max_wait)
            .build()
            .unwrap();
        Bulkhead::with_context("d.bulkhead", config, self.context())
    }

    fn timeout(&self, duration: Duration) -> Timeout {
        let config = TimeoutConfig::builder().duration(duration).build().unwrap();
        Timeout::with_context("d.timeout", config, self.context())
    }

    /// One permit a second, waited for up to 5 s.
    fn limiter(&self) -> RateLimiter {
        let config = RateLimiterConfig::builder()
            .limit_for_period(1)
            .refresh_period(Duration::from_secs(1))
            .max_wait(Duration::from_secs(5))
            .build()
            .unwrap();
        RateLimiter::with_context("d.limiter", config, self.context())
    }

    /// A breaker that opens on one failure.
    fn breaker(&self) -> CircuitBreaker {
        let config = CircuitBreakerConfig::builder()
            .sliding_window_size(1)
            .minimum_calls(1)
            .build()
            .unwrap();
        CircuitBreaker::with_context("d.breaker", config, self.context())
    }
}

/// Every error retried and recorded, for as long as a test's futures live.
fn classify<E: 'static>() -> &'static Classifier<'static, E> {
    Box::leak(Box::new(Classifier::new()))
}

fn poll<F: Future>(future: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

/// The rejection of a refused call: its kind and instance.
fn refused<T: std::fmt::Debug, E: std::fmt::Debug>(
    result: &Result<T, CallError<E>>,
) -> (RejectionKind, &'static str) {
    match result {
        Err(CallError::Rejected(rejection)) => (rejection.kind(), rejection.instance()),
        other => panic!("not refused: {other:?}"),
    }
}

fn exceeded(instance: &'static str) -> (RejectionKind, &'static str) {
    (RejectionKind::DeadlineExceeded, instance)
}

fn retry_events(events: &mut EventStream) -> Vec<RetryEventKind> {
    events
        .drain()
        .filter_map(|event| match event {
            Event::Retry(event) => Some(event.kind),
            _ => None,
        })
        .collect()
}

/// Whether any event of `events` is a rejection by a bulkhead or a rate
/// limiter (a refusal by a deadline is neither).
fn any_policy_rejection(events: &mut EventStream) -> bool {
    events.drain().any(|event| {
        matches!(
            event,
            Event::Bulkhead(bulkhead_core::BulkheadEvent {
                kind: BulkheadEventKind::Rejected { .. },
                ..
            }) | Event::RateLimiter(_)
        )
    })
}

// ------------------------------------------------------- before an attempt

#[test]
fn a_call_with_no_time_left_is_refused_before_it_runs_naming_the_retry() {
    let (world, _events) = World::new();
    let breaker = world.breaker();
    let policies = world
        .policies()
        .with_retry(world.retry(RetryConfig::builder().wait(Duration::ZERO)))
        .with_circuit_breaker(breaker.clone())
        .with_bulkhead(world.bulkhead(Duration::ZERO));
    let ran = Cell::new(0);
    let now = world.clock.now();
    let result = deadline::with(now, || {
        policies.call(classify(), || {
            ran.set(ran.get() + 1);
            Ok::<_, ()>(1)
        })
    });
    assert_eq!(refused(&result), exceeded("d.retry"));
    assert_eq!(ran.get(), 0, "no attempt started, none was retried");
    assert_eq!(breaker.metrics().buffered_calls, 0, "nothing recorded");

    let async_result = deadline::with(now, || {
        let mut future = pin!(policies.call_async(classify(), || async { Ok::<_, ()>(1) }));
        poll(future.as_mut())
    });
    match async_result {
        Poll::Ready(result) => assert_eq!(refused(&result), exceeded("d.retry")),
        Poll::Pending => panic!("an async call with no time left waited"),
    }
    assert_eq!(breaker.metrics().buffered_calls, 0);
}

#[test]
fn without_a_retry_the_outermost_policy_refuses() {
    let (world, _events) = World::new();
    let policies = world
        .policies()
        .with_timeout(world.timeout(Duration::from_secs(1)))
        .with_bulkhead(world.bulkhead(Duration::ZERO));
    let result = deadline::with(world.clock.now(), || {
        policies.call(classify(), || Ok::<_, ()>(1))
    });
    assert_eq!(refused(&result), exceeded("d.timeout"));
}

#[test]
fn no_attempt_starts_with_min_attempt_time_or_less_left() {
    let (world, _events) = World::new();
    let retry = RetryConfig::builder().min_attempt_time(100 * MS);
    let policies = world.policies().with_retry(world.retry(retry));
    let call = |by| deadline::with(by, || policies.call(classify(), || Ok::<_, ()>(7)));
    assert_eq!(refused(&call(world.in_(100 * MS))), exceeded("d.retry"));
    assert_eq!(call(world.in_(101 * MS)), Ok(7));
}

#[test]
fn a_call_without_a_deadline_is_not_touched() {
    let (world, _events) = World::new();
    let retry = RetryConfig::builder().min_attempt_time(Duration::from_secs(3600));
    let policies = world.policies().with_retry(world.retry(retry));
    assert_eq!(policies.call(classify(), || Ok::<_, ()>(7)), Ok(7));
}

// ------------------------------------------------------------- the retry

#[test]
fn the_retry_gives_up_rather_than_sleep_past_the_deadline_sync() {
    let (world, mut events) = World::new();
    // Each attempt takes 300 ms (the call moves the clock), the retry waits
    // nothing: the second attempt ends at 600 ms, past a 500 ms deadline,
    // and no third is made.
    let retry = RetryConfig::builder().max_attempts(5).wait(Duration::ZERO);
    let policies = world.policies().with_retry(world.retry(retry));
    let attempts = Cell::new(0);
    let result = deadline::with(world.in_(500 * MS), || {
        policies.call(classify(), || {
            attempts.set(attempts.get() + 1);
            world.clock.advance(300 * MS);
            Err::<(), _>("flaky")
        })
    });
    assert_eq!(result, Err(CallError::Inner("flaky")), "the last failure");
    assert_eq!(attempts.get(), 2);
    assert_eq!(
        retry_events(&mut events).last(),
        Some(&RetryEventKind::GaveUp {
            attempts: 2,
            rejection: None,
            reason: GiveUpReason::Deadline,
        })
    );
}

#[test]
fn the_retry_gives_up_rather_than_sleep_past_the_deadline_async() {
    let (world, mut events) = World::new();
    let retry = RetryConfig::builder()
        .max_attempts(5)
        .wait(200 * MS)
        .min_attempt_time(50 * MS);
    let policies = world.policies().with_retry(world.retry(retry));
    let attempts = Cell::new(0);
    let by = world.in_(500 * MS);
    let mut call = pin!(deadline::scope(
        by,
        policies.call_async(classify(), || {
            attempts.set(attempts.get() + 1);
            async { Err::<(), _>("flaky") }
        })
    ));
    // Attempt 1 at 0 ms, attempt 2 at 200 ms; a third at 400 ms would have
    // 100 ms left, more than 50: it is made; a fourth at 600 ms is not.
    assert!(poll(call.as_mut()).is_pending());
    world.clock.advance(200 * MS);
    assert!(poll(call.as_mut()).is_pending());
    world.clock.advance(200 * MS);
    assert_eq!(
        poll(call.as_mut()),
        Poll::Ready(Err(CallError::Inner("flaky")))
    );
    assert_eq!(attempts.get(), 3);
    assert_eq!(world.clock.sleepers(), 0, "no sleep past the deadline");
    let kinds = retry_events(&mut events);
    assert_eq!(
        kinds.last(),
        Some(&RetryEventKind::GaveUp {
            attempts: 3,
            rejection: None,
            reason: GiveUpReason::Deadline,
        })
    );
}

// ------------------------------------------------------ the rate limiter

#[test]
fn the_rate_limiter_does_not_reserve_a_permit_past_the_deadline() {
    let (world, mut events) = World::new();
    let limiter = world.limiter();
    let breaker = world.breaker();
    let policies = world
        .policies()
        .with_retry(world.retry(RetryConfig::builder().wait(Duration::ZERO)))
        .with_circuit_breaker(breaker.clone())
        .with_rate_limiter(limiter.clone());
    assert_eq!(policies.call(classify(), || Ok::<_, ()>(0)), Ok(0));
    events.drain().for_each(drop);
    // The next permit is 1 s away, within max_wait but not the deadline.
    let result = deadline::with(world.in_(999 * MS), || {
        policies.call(classify(), || Ok::<_, ()>(1))
    });
    assert_eq!(refused(&result), exceeded("d.limiter"));
    assert_eq!(limiter.available_permits(), 0, "nothing reserved");
    assert_eq!(
        breaker.metrics().buffered_calls,
        1,
        "the refusal not recorded"
    );
    let kinds = retry_events(&mut events);
    assert_eq!(
        kinds,
        [RetryEventKind::Aborted {
            attempts: 1,
            rejection: Some(RejectionKind::DeadlineExceeded),
        }],
        "never retried"
    );

    // Async: the same refusal; with time enough, the permit is reserved.
    let mut late = pin!(deadline::scope(
        world.in_(999 * MS),
        policies.call_async(classify(), || async { Ok::<_, ()>(2) })
    ));
    match poll(late.as_mut()) {
        Poll::Ready(result) => assert_eq!(refused(&result), exceeded("d.limiter")),
        Poll::Pending => panic!("waited for a permit past the deadline"),
    }
    let mut in_time = pin!(deadline::scope(
        world.in_(1001 * MS),
        policies.call_async(classify(), || async { Ok::<_, ()>(3) })
    ));
    assert!(poll(in_time.as_mut()).is_pending());
    assert_eq!(limiter.available_permits(), -1, "reserved");
    world.clock.advance(Duration::from_secs(1));
    assert_eq!(poll(in_time.as_mut()), Poll::Ready(Ok(3)));
    assert!(!any_policy_rejection(&mut events));
}

// ----------------------------------------------------------- the slot wait

#[test]
fn the_slot_wait_ends_at_the_deadline_sync() {
    let (world, mut events) = World::new();
    let bulkhead = world.bulkhead(Duration::from_secs(10));
    let breaker = world.breaker();
    let policies = world
        .policies()
        .with_circuit_breaker(breaker.clone())
        .with_bulkhead(bulkhead.clone());
    let held = bulkhead.try_enter().unwrap();
    let by = world.in_(Duration::from_secs(1));
    let caller = std::thread::spawn({
        let policies = policies.clone();
        move || deadline::with(by, || policies.call(classify(), || Ok::<_, ()>(1)))
    });
    while bulkhead.waiting_calls() == 0 {
        std::thread::yield_now();
    }
    world.clock.advance(Duration::from_secs(1));
    let result = caller.join().unwrap();
    assert_eq!(refused(&result), exceeded("d.bulkhead"));
    assert_eq!(breaker.metrics().buffered_calls, 0, "refused before it ran");
    assert!(
        !any_policy_rejection(&mut events),
        "not the bulkhead's refusal"
    );
    drop(held);
}

#[test]
fn the_slot_wait_ends_at_the_deadline_async_with_and_without_a_timeout() {
    for timeout in [false, true] {
        let (world, mut events) = World::new();
        let bulkhead = world.bulkhead(Duration::from_secs(10));
        let breaker = world.breaker();
        let mut policies = world
            .policies()
            .with_circuit_breaker(breaker.clone())
            .with_bulkhead(bulkhead.clone());
        if timeout {
            policies = policies.with_timeout(world.timeout(Duration::from_secs(5)));
        }
        let held = bulkhead.try_enter().unwrap();
        let mut call = pin!(deadline::scope(
            world.in_(Duration::from_secs(1)),
            policies.call_async(classify(), || async { Ok::<_, ()>(1) })
        ));
        assert!(poll(call.as_mut()).is_pending());
        assert_eq!(bulkhead.waiting_calls(), 1);
        world.clock.advance(Duration::from_secs(1));
        let Poll::Ready(result) = poll(call.as_mut()) else {
            panic!("still waiting past the deadline (timeout: {timeout})");
        };
        // Under a timeout the deadline binds it too: both end at once,
        // and whichever reports it, the call ran out of time.
        let (kind, _) = refused(&result);
        assert_eq!(kind, RejectionKind::DeadlineExceeded, "timeout: {timeout}");
        assert_eq!(bulkhead.waiting_calls(), 0);
        assert!(!any_policy_rejection(&mut events));
        if !timeout {
            assert_eq!(refused(&result), exceeded("d.bulkhead"));
            assert_eq!(breaker.metrics().buffered_calls, 0, "refused before it ran");
        }
        drop(held);
    }
}

#[test]
fn enter_and_enter_async_used_directly_end_their_wait_at_the_deadline_as_full() {
    let (world, mut events) = World::new();
    let bulkhead = world.bulkhead(Duration::from_secs(10));
    let held = bulkhead.try_enter().unwrap();
    let by = world.in_(Duration::from_secs(1));
    let mut waiter = pin!(deadline::scope(by, bulkhead.enter_async()));
    assert!(poll(waiter.as_mut()).is_pending());
    world.clock.advance(Duration::from_secs(1));
    let Poll::Ready(Err(full)) = poll(waiter.as_mut()) else {
        panic!("enter_async waited past the deadline");
    };
    assert_eq!(full.instance(), "d.bulkhead");

    let sync = std::thread::spawn({
        let bulkhead = bulkhead.clone();
        let by = world.in_(Duration::from_secs(1));
        move || deadline::with(by, || bulkhead.enter().map(drop))
    });
    while bulkhead.waiting_calls() == 0 {
        std::thread::yield_now();
    }
    world.clock.advance(Duration::from_secs(1));
    assert!(
        sync.join().unwrap().is_err(),
        "enter waited past the deadline"
    );
    let rejections = events
        .drain()
        .filter(|event| {
            matches!(
                event,
                Event::Bulkhead(bulkhead_core::BulkheadEvent {
                    kind: BulkheadEventKind::Rejected { waited: true, .. },
                    ..
                })
            )
        })
        .count();
    assert_eq!(rejections, 2, "published as for max_wait");
    drop(held);
}

// -------------------------------------------------------------- the timeout

#[test]
fn the_earlier_of_the_timeout_and_the_deadline_ends_an_async_call() {
    for (deadline_after, expected) in [
        (300 * MS, exceeded("d.timeout")),
        (
            Duration::from_secs(5),
            (RejectionKind::Timeout, "d.timeout"),
        ),
    ] {
        let (world, mut events) = World::new();
        let breaker = world.breaker();
        let policies = world
            .policies()
            .with_circuit_breaker(breaker.clone())
            .with_timeout(world.timeout(Duration::from_secs(1)));
        let mut call = pin!(deadline::scope(
            world.in_(deadline_after),
            policies.call_async(classify(), std::future::pending::<Result<(), ()>>)
        ));
        assert!(poll(call.as_mut()).is_pending());
        world
            .clock
            .advance(deadline_after.min(Duration::from_secs(1)));
        let Poll::Ready(result) = poll(call.as_mut()) else {
            panic!("not cut after {deadline_after:?}");
        };
        assert_eq!(refused(&result), expected);
        // The call ran: the breaker records it as a failure either way.
        assert_eq!(breaker.metrics().failed_calls, 1);
        let timed_out = events
            .drain()
            .any(|event| matches!(event, Event::Timeout(_)));
        assert_eq!(
            timed_out,
            expected.0 == RejectionKind::Timeout,
            "TimedOut only for the timeout's own"
        );
    }
}

// ---------------------------------------------------------------- the hedge

#[test]
fn no_hedge_starts_with_min_attempt_time_or_less_left() {
    for (deadline_after, hedged) in [(150 * MS, false), (Duration::from_secs(1), true)] {
        let (world, mut events) = World::new();
        let hedge = Hedge::with_context(
            "d.hedge",
            HedgeConfig::builder().delay(100 * MS).build().unwrap(),
            world.context(),
        );
        let retry = RetryConfig::builder()
            .max_attempts(1)
            .min_attempt_time(60 * MS);
        let policies = world
            .policies()
            .with_retry(world.retry(retry))
            .with_hedge(hedge);
        let attempts = Cell::new(0);
        let mut call = pin!(deadline::scope(
            world.in_(deadline_after),
            policies.call_hedged(classify(), || {
                attempts.set(attempts.get() + 1);
                std::future::pending::<Result<(), ()>>()
            })
        ));
        assert!(poll(call.as_mut()).is_pending());
        world.clock.advance(100 * MS);
        assert!(poll(call.as_mut()).is_pending());
        assert_eq!(
            attempts.get(),
            if hedged { 2 } else { 1 },
            "{deadline_after:?}"
        );
        let started = events
            .drain()
            .any(|event| matches!(event, Event::Hedge(e) if matches!(e.kind, HedgeEventKind::Started { .. })));
        assert_eq!(started, hedged);
    }
}

// ------------------------------------------------------------------ scopes

#[test]
fn nested_scopes_keep_the_earlier_deadline_for_the_policies_too() {
    let (world, _events) = World::new();
    let policies = world
        .policies()
        .with_retry(world.retry(RetryConfig::builder().min_attempt_time(10 * MS)));
    let result = deadline::with(world.in_(5 * MS), || {
        deadline::with(world.in_(Duration::from_secs(60)), || {
            policies.call(classify(), || Ok::<_, ()>(1))
        })
    });
    assert_eq!(
        refused(&result),
        exceeded("d.retry"),
        "the outer 5 ms binds"
    );
    assert_eq!(deadline::current(), None);
}

#[test]
fn a_panic_inside_a_scope_restores_the_deadline_before() {
    let (world, _events) = World::new();
    let outer = world.in_(Duration::from_secs(1));
    deadline::with(outer, || {
        let inner = world.in_(MS);
        let caught =
            std::panic::catch_unwind(|| deadline::with(inner, || panic!("inside the scope")));
        assert!(caught.is_err());
        assert_eq!(deadline::current(), Some(outer));
    });
    assert_eq!(deadline::current(), None);
}

#[test]
fn deadline_exceeded_is_a_rejection_like_the_others() {
    let rejection = Rejection::from(bulkhead_core::DeadlineExceeded::new("api"));
    assert_eq!(rejection.kind(), RejectionKind::DeadlineExceeded);
    assert_eq!(rejection.instance(), "api");
    assert_eq!(
        rejection.to_string(),
        r#"no time left before the call's deadline in "api""#
    );
    assert_eq!(
        RejectionKind::parse("abort_on", "DeadlineExceeded"),
        Ok(RejectionKind::DeadlineExceeded)
    );
}
