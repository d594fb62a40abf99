//! Errors that say when the call may be tried again (`Pushback`), read by
//! the retry through `Classifier::pushback`, sync and async, on a
//! `ManualClock`: the wait is the longer of the backoff and the hint, a
//! hint beyond `max_wait_interval` gives up at once without taking budget,
//! and a hint that would start the retry too late for the call's deadline
//! gives up too.

use std::cell::Cell;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bulkhead_core::{
    BulkheadFull, CallError, Classifier, Clock, Event, EventBus, EventStream, GiveUpReason,
    ManualClock, Policies, PolicyContext, Pushback, Rejection, Retry, RetryConfig,
    RetryConfigBuilder, RetryEventKind, deadline,
};

const MS: Duration = Duration::from_millis(1);

/// An error that asks for a wait (or none).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Busy(Option<Duration>);

impl Pushback for Busy {
    fn retry_after(&self) -> Option<Duration> {
        self.0
    }
}

fn setup(config: RetryConfigBuilder) -> (Policies, Retry, ManualClock, EventStream) {
    let clock = ManualClock::new();
    let shared: Arc<dyn Clock> = Arc::new(clock.clone());
    let bus = EventBus::default();
    let events = bus.subscribe();
    let context = PolicyContext::new(Arc::clone(&shared)).with_events(bus);
    let retry = Retry::with_context("p.retry", config.build().unwrap(), context);
    let policies = Policies::on_clock(shared).with_retry(retry.clone());
    (policies, retry, clock, events)
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

fn poll<F: Future>(future: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

/// The classifier that reads `Busy`'s hint, for as long as a test's
/// futures live.
fn reading() -> &'static Classifier<'static, Busy> {
    Box::leak(Box::new(Classifier::new().pushback()))
}

fn retrying(delay: Duration) -> RetryEventKind {
    RetryEventKind::Retrying {
        attempt: 1,
        delay,
        rejection: None,
    }
}

#[test]
fn a_hint_longer_than_the_backoff_is_waited_async() {
    let (policies, _retry, clock, mut events) = setup(
        RetryConfig::builder()
            .max_attempts(2)
            .wait(10 * MS)
            .max_wait_interval(Duration::from_secs(1)),
    );
    let attempts = Cell::new(0);
    let mut call = pin!(policies.call_async(reading(), || {
        attempts.set(attempts.get() + 1);
        async { Err::<(), _>(Busy(Some(300 * MS))) }
    }));
    assert!(poll(call.as_mut()).is_pending());
    clock.advance(299 * MS);
    assert!(poll(call.as_mut()).is_pending());
    assert_eq!(attempts.get(), 1, "not retried before the hint");
    clock.advance(MS);
    assert_eq!(
        poll(call.as_mut()),
        Poll::Ready(Err(CallError::Inner(Busy(Some(300 * MS)))))
    );
    assert_eq!(attempts.get(), 2);
    assert_eq!(retry_events(&mut events)[0], retrying(300 * MS));
}

#[test]
fn a_hint_shorter_than_the_backoff_changes_nothing() {
    let (policies, _retry, _clock, mut events) =
        setup(RetryConfig::builder().max_attempts(2).wait(200 * MS));
    let mut call =
        pin!(policies.call_async(reading(), || async { Err::<(), _>(Busy(Some(50 * MS))) }));
    assert!(poll(call.as_mut()).is_pending());
    assert_eq!(retry_events(&mut events), [retrying(200 * MS)]);
}

#[test]
fn without_classifier_pushback_the_hint_is_not_read() {
    let (policies, _retry, _clock, mut events) = setup(
        RetryConfig::builder()
            .max_attempts(2)
            .wait(10 * MS)
            .max_wait_interval(100 * MS),
    );
    let plain: &'static Classifier<'static, Busy> = Box::leak(Box::new(Classifier::new()));
    let mut call = pin!(policies.call_async(plain, || async {
        Err::<(), _>(Busy(Some(Duration::from_secs(60))))
    }));
    assert!(poll(call.as_mut()).is_pending());
    assert_eq!(retry_events(&mut events), [retrying(10 * MS)]);
}

#[test]
fn a_hint_beyond_max_wait_interval_gives_up_without_taking_budget() {
    for sync in [true, false] {
        let (policies, retry, clock, mut events) = setup(
            RetryConfig::builder()
                .max_attempts(3)
                .wait(Duration::ZERO)
                .max_wait_interval(Duration::from_secs(1))
                .budget_ratio(1.0)
                .budget_min_per_second(10),
        );
        let before = retry.budget().unwrap();
        let attempts = Cell::new(0);
        let busy = Busy(Some(Duration::from_secs(5)));
        let result = if sync {
            policies.call(reading(), || {
                attempts.set(attempts.get() + 1);
                Err::<(), _>(busy)
            })
        } else {
            let mut call = pin!(policies.call_async(reading(), || {
                attempts.set(attempts.get() + 1);
                async move { Err::<(), _>(busy) }
            }));
            match poll(call.as_mut()) {
                Poll::Ready(result) => result,
                Poll::Pending => panic!("slept on a hint beyond max_wait_interval"),
            }
        };
        assert_eq!(result, Err(CallError::Inner(busy)));
        assert_eq!(attempts.get(), 1, "sync: {sync}");
        assert_eq!(clock.sleepers(), 0);
        let after = retry.budget().unwrap();
        assert_eq!(
            after.retries, before.retries,
            "no retry taken from the budget"
        );
        assert_eq!(
            retry_events(&mut events),
            [RetryEventKind::GaveUp {
                attempts: 1,
                rejection: None,
                reason: GiveUpReason::Pushback(Duration::from_secs(5)),
            }]
        );
    }
}

#[test]
fn a_sync_call_waits_the_hint_too() {
    let (policies, _retry, clock, _events) =
        setup(RetryConfig::builder().max_attempts(2).wait(Duration::ZERO));
    let caller = std::thread::spawn(move || {
        let mut attempts = 0;
        let result = policies.call(&Classifier::new().pushback(), || {
            attempts += 1;
            Err::<(), _>(Busy(Some(400 * MS)))
        });
        (result, attempts)
    });
    while clock.sleepers() == 0 {
        std::thread::yield_now();
    }
    clock.advance(400 * MS);
    let (result, attempts) = caller.join().unwrap();
    assert_eq!(result, Err(CallError::Inner(Busy(Some(400 * MS)))));
    assert_eq!(attempts, 2, "retried once the hint had passed");
}

#[test]
fn a_hint_that_ends_too_close_to_the_deadline_gives_up() {
    let (policies, _retry, clock, mut events) = setup(
        RetryConfig::builder()
            .max_attempts(3)
            .wait(Duration::ZERO)
            .min_attempt_time(100 * MS),
    );
    let by = clock.now() + Duration::from_secs(1);
    let result = deadline::with(by, || {
        policies.call(reading(), || Err::<(), _>(Busy(Some(950 * MS))))
    });
    assert_eq!(result, Err(CallError::Inner(Busy(Some(950 * MS)))));
    assert_eq!(
        retry_events(&mut events),
        [RetryEventKind::GaveUp {
            attempts: 1,
            rejection: None,
            reason: GiveUpReason::Deadline,
        }]
    );
}

#[test]
fn a_rejection_asks_for_no_wait() {
    let rejected: CallError<Busy> = Rejection::from(BulkheadFull::new("p")).into();
    assert_eq!(rejected.retry_after(), None);
    let inner = CallError::Inner(Busy(Some(MS)));
    assert_eq!(inner.retry_after(), Some(MS));
}
