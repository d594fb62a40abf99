//! The composition rules (`docs/composition.md`) through generated
//! wrappers, as `bulkhead-registry/tests/pipeline/composition.rs` proves
//! them through `Pipeline`: the fixed order
//! `Retry( CircuitBreaker( RateLimiter( Timeout( Bulkhead( method ) ) ) ) )`
//! (inside `#[fallback]` and around `#[hedge]`: `fallback.rs`, `hedging.rs`)
//! whatever order the attributes are written in, and what follows from it,
//! sync and async, on a `ManualClock`. Every wrapper returns the method's
//! own error type: a rejection arrives as `ServiceError::Rejected`.

use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
use std::task::Poll;
use std::thread;
use std::time::Duration;

use bulkhead::circuit_breaker::CircuitState;
use bulkhead::events::{Event, TimeoutEventKind};
use bulkhead::{ManualClock, Registry, Rejection, RejectionKind, resilient};

use crate::support::{ServiceError, manual, poll, wait_until};

/// What the delegate does on each call: counts it, fails the first `fails`
/// calls with `message`, and moves the clock by `advance` (to overrun a
/// timeout).
#[derive(Debug, Default)]
pub struct Script {
    calls: AtomicU32,
    fails: u32,
    message: &'static str,
    advance: Option<(ManualClock, Duration)>,
}

impl Script {
    pub fn ok() -> Self {
        Script::default()
    }

    pub fn failing(fails: u32, message: &'static str) -> Self {
        Script {
            fails,
            message,
            ..Script::default()
        }
    }

    pub fn advancing(clock: &ManualClock, by: Duration) -> Self {
        Script {
            advance: Some((clock.clone(), by)),
            ..Script::default()
        }
    }

    pub fn calls(&self) -> u32 {
        self.calls.load(SeqCst)
    }

    fn run(&self) -> Result<u32, ServiceError> {
        let n = self.calls.fetch_add(1, SeqCst) + 1;
        if let Some((clock, by)) = &self.advance {
            clock.advance(*by);
        }
        if n <= self.fails {
            Err(ServiceError::Backend(self.message.to_owned()))
        } else {
            Ok(n)
        }
    }
}

/// Errors worth another attempt, and failures for the breaker.
pub fn is_transient(error: &ServiceError) -> bool {
    matches!(error, ServiceError::Backend(m) if m == "transient")
}

#[resilient]
pub trait Composed: Send + Sync {
    /// Every policy, written innermost first: the order is still fixed.
    #[bulkhead(max_concurrent = 1)]
    #[timeout(duration = "1s")]
    #[rate_limiter(limit_for_period = 100, refresh_period = "1s")]
    #[circuit_breaker(minimum_calls = 10)]
    #[retry(max_attempts = 2, wait = "0")]
    fn ordered(&self, script: &Script) -> Result<u32, ServiceError>;

    #[timeout(duration = "1s")]
    #[circuit_breaker(minimum_calls = 10)]
    #[bulkhead(max_concurrent = 1)]
    #[retry(max_attempts = 2, wait = "0")]
    #[rate_limiter(limit_for_period = 100, refresh_period = "1s")]
    async fn ordered_async(&self, script: &Script) -> Result<u32, ServiceError>;

    #[retry(max_attempts = 2, wait = "1s")]
    #[bulkhead(max_concurrent = 1)]
    fn delayed(&self, script: &Script) -> Result<u32, ServiceError>;

    #[retry(max_attempts = 2, wait = "1s")]
    #[bulkhead(max_concurrent = 1)]
    async fn delayed_async(&self, script: &Script) -> Result<u32, ServiceError>;

    #[retry(max_attempts = 3, wait = "0")]
    #[bulkhead(max_concurrent = 1)]
    fn retried(&self, script: &Script) -> Result<u32, ServiceError>;

    #[retry(max_attempts = 3, wait = "0")]
    #[bulkhead(max_concurrent = 1)]
    async fn retried_async(&self, script: &Script) -> Result<u32, ServiceError>;

    #[retry(max_attempts = 3, wait = "0", abort_on = [BulkheadFull])]
    #[bulkhead(max_concurrent = 1)]
    fn aborted(&self, script: &Script) -> Result<u32, ServiceError>;

    #[retry(max_attempts = 3, wait = "0", abort_on = [BulkheadFull])]
    #[bulkhead(max_concurrent = 1)]
    async fn aborted_async(&self, script: &Script) -> Result<u32, ServiceError>;

    #[circuit_breaker(
        minimum_calls = 2,
        sliding_window_size = 2,
        failure_rate_threshold = 50
    )]
    #[bulkhead(max_concurrent = 1)]
    fn recorded(&self, script: &Script) -> Result<u32, ServiceError>;

    #[circuit_breaker(
        minimum_calls = 2,
        sliding_window_size = 2,
        failure_rate_threshold = 50
    )]
    #[bulkhead(max_concurrent = 1)]
    async fn recorded_async(&self, script: &Script) -> Result<u32, ServiceError>;

    #[circuit_breaker(minimum_calls = 2, sliding_window_size = 2, ignore_on = [BulkheadFull])]
    #[bulkhead(max_concurrent = 1)]
    fn ignored(&self, script: &Script) -> Result<u32, ServiceError>;

    #[circuit_breaker(minimum_calls = 2, sliding_window_size = 2, ignore_on = [BulkheadFull])]
    #[bulkhead(max_concurrent = 1)]
    async fn ignored_async(&self, script: &Script) -> Result<u32, ServiceError>;

    #[timeout(duration = "1s")]
    #[bulkhead(max_concurrent = 1, max_wait = "10s")]
    fn waits(&self, script: &Script) -> Result<u32, ServiceError>;

    #[timeout(duration = "1s")]
    #[bulkhead(max_concurrent = 1, max_wait = "10s")]
    async fn waits_async(&self, script: &Script) -> Result<u32, ServiceError>;

    #[timeout(duration = "500ms")]
    #[bulkhead(max_concurrent = 1)]
    async fn never_ends(&self) -> Result<u32, ServiceError>;

    #[timeout(duration = "100ms")]
    fn overruns(&self, script: &Script) -> Result<u32, ServiceError>;

    #[rate_limiter(limit_for_period = 3, refresh_period = "1s", max_wait = "0")]
    #[bulkhead(max_concurrent = 1)]
    fn limited(&self, script: &Script) -> Result<u32, ServiceError>;

    #[rate_limiter(limit_for_period = 3, refresh_period = "1s", max_wait = "0")]
    #[bulkhead(max_concurrent = 1)]
    async fn limited_async(&self, script: &Script) -> Result<u32, ServiceError>;

    #[retry(max_attempts = 3, wait = "0", retry_if = is_transient)]
    #[circuit_breaker(minimum_calls = 1, sliding_window_size = 1, record_if = is_transient)]
    fn judged(&self, script: &Script) -> Result<u32, ServiceError>;

    #[retry(max_attempts = 3, wait = "0", retry_if = is_transient)]
    #[circuit_breaker(minimum_calls = 1, sliding_window_size = 1, record_if = is_transient)]
    async fn judged_async(&self, script: &Script) -> Result<u32, ServiceError>;

    #[retry(max_attempts = 3, wait = "1s")]
    #[bulkhead(max_concurrent = 1)]
    async fn retried_later(&self, script: Arc<Script>) -> Result<u32, ServiceError>;

    #[retry(max_attempts = 2, wait = "0")]
    #[timeout(duration = "1s")]
    async fn stuck_once(&mut self, script: &Script) -> Result<u32, ServiceError>;

    #[circuit_breaker(
        minimum_calls = 2,
        sliding_window_size = 2,
        wait_in_open = "30s",
        permitted_calls_in_half_open = 1
    )]
    fn half_open(&self, script: &Script) -> Result<u32, ServiceError>;

    #[circuit_breaker(
        minimum_calls = 2,
        sliding_window_size = 2,
        wait_in_open = "30s",
        permitted_calls_in_half_open = 1
    )]
    async fn half_open_async(&self, script: &Script) -> Result<u32, ServiceError>;
}

/// Runs each script.
#[derive(Debug, Default)]
pub struct Runner;

impl Composed for Runner {
    fn ordered(&self, script: &Script) -> Result<u32, ServiceError> {
        script.run()
    }
    async fn ordered_async(&self, script: &Script) -> Result<u32, ServiceError> {
        script.run()
    }
    fn delayed(&self, script: &Script) -> Result<u32, ServiceError> {
        script.run()
    }
    async fn delayed_async(&self, script: &Script) -> Result<u32, ServiceError> {
        script.run()
    }
    fn retried(&self, script: &Script) -> Result<u32, ServiceError> {
        script.run()
    }
    async fn retried_async(&self, script: &Script) -> Result<u32, ServiceError> {
        script.run()
    }
    fn aborted(&self, script: &Script) -> Result<u32, ServiceError> {
        script.run()
    }
    async fn aborted_async(&self, script: &Script) -> Result<u32, ServiceError> {
        script.run()
    }
    fn recorded(&self, script: &Script) -> Result<u32, ServiceError> {
        script.run()
    }
    async fn recorded_async(&self, script: &Script) -> Result<u32, ServiceError> {
        script.run()
    }
    fn ignored(&self, script: &Script) -> Result<u32, ServiceError> {
        script.run()
    }
    async fn ignored_async(&self, script: &Script) -> Result<u32, ServiceError> {
        script.run()
    }
    fn waits(&self, script: &Script) -> Result<u32, ServiceError> {
        script.run()
    }
    async fn waits_async(&self, script: &Script) -> Result<u32, ServiceError> {
        script.run()
    }
    async fn never_ends(&self) -> Result<u32, ServiceError> {
        std::future::pending().await
    }
    fn overruns(&self, script: &Script) -> Result<u32, ServiceError> {
        script.run()
    }
    fn limited(&self, script: &Script) -> Result<u32, ServiceError> {
        script.run()
    }
    async fn limited_async(&self, script: &Script) -> Result<u32, ServiceError> {
        script.run()
    }
    fn judged(&self, script: &Script) -> Result<u32, ServiceError> {
        script.run()
    }
    async fn judged_async(&self, script: &Script) -> Result<u32, ServiceError> {
        script.run()
    }
    async fn retried_later(&self, script: Arc<Script>) -> Result<u32, ServiceError> {
        script.run()
    }
    async fn stuck_once(&mut self, script: &Script) -> Result<u32, ServiceError> {
        if script.calls() == 0 {
            script.run()?;
            std::future::pending::<()>().await;
        }
        script.run()
    }
    fn half_open(&self, script: &Script) -> Result<u32, ServiceError> {
        script.run()
    }
    async fn half_open_async(&self, script: &Script) -> Result<u32, ServiceError> {
        script.run()
    }
}

/// The id of an unnamed method of [`Composed`], the same for each of its
/// policies.
pub fn id(method: &str) -> String {
    format!("macros::composition::Composed#{method}(&Script)")
}

fn wrapped(registry: &Registry) -> ResilientComposed<Runner> {
    ResilientComposed::new(Runner, registry).expect("the policies resolve")
}

/// Polls `future` to completion, which the test expects at once.
fn ready<F: std::future::Future>(future: F) -> F::Output {
    match poll(pin!(future)) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the call did not complete at once"),
    }
}

/// The kind of the rejection `result` holds.
#[track_caller]
fn rejected<T: std::fmt::Debug>(result: Result<T, ServiceError>) -> RejectionKind {
    match result {
        Err(ServiceError::Rejected(rejection)) => rejection.kind(),
        other => panic!("expected a rejection, got {other:?}"),
    }
}

/// How many bulkhead rejections were published.
fn bulkhead_rejections(events: &mut bulkhead::events::EventStream) -> usize {
    events
        .drain()
        .filter(|e| matches!(e, Event::Bulkhead(_)))
        .count()
}

#[test]
fn the_order_is_fixed_whatever_order_the_attributes_are_written_in() {
    let (_, registry) = manual();
    let service = wrapped(&registry);
    for method in ["ordered", "ordered_async"] {
        let mut events = registry.subscribe();
        let id = id(method);
        let handle = registry.bulkhead(&id).unwrap();
        let held = handle.bulkhead().try_enter().unwrap();
        let script = Script::ok();
        let out = if method == "ordered" {
            service.ordered(&script)
        } else {
            ready(service.ordered_async(&script))
        };
        // The bulkhead is innermost: the retry outside it tried twice, the
        // breaker between them recorded both attempts.
        assert_eq!(rejected(out), RejectionKind::BulkheadFull, "{method}");
        assert_eq!(script.calls(), 0, "{method}: the method never ran");
        assert_eq!(bulkhead_rejections(&mut events), 2, "{method}");
        let breaker = registry.circuit_breaker(&id).unwrap().snapshot();
        assert_eq!(breaker.failed_calls, 2, "{method}");
        drop(held);
        let out = if method == "ordered" {
            service.ordered(&script)
        } else {
            ready(service.ordered_async(&script))
        };
        assert_eq!(out.unwrap(), 1, "{method}");
    }
}

#[test]
fn a_slot_is_held_only_while_the_method_runs_not_during_a_retry_delay_sync() {
    let (clock, registry) = manual();
    let service = wrapped(&registry);
    let handle = registry.bulkhead(&id("delayed")).unwrap();
    let script = Script::failing(1, "first attempt fails");
    thread::scope(|s| {
        let call = s.spawn(|| service.delayed(&script));
        wait_until("the retry delay starts", || clock.sleepers() == 1);
        assert_eq!(handle.concurrent_calls(), 0, "no slot during the delay");
        let other = handle.bulkhead().try_enter();
        assert!(other.is_ok(), "another caller can use the slot meanwhile");
        drop(other);
        clock.advance(Duration::from_secs(1));
        assert_eq!(call.join().unwrap().unwrap(), 2);
    });
    assert_eq!(script.calls(), 2);
}

#[test]
fn a_slot_is_held_only_while_the_method_runs_not_during_a_retry_delay_async() {
    let (clock, registry) = manual();
    let service = wrapped(&registry);
    let handle = registry.bulkhead(&id("delayed_async")).unwrap();
    let script = Script::failing(1, "first attempt fails");
    let mut call = pin!(service.delayed_async(&script));
    assert!(poll(call.as_mut()).is_pending(), "waits out the delay");
    assert_eq!(script.calls(), 1);
    assert_eq!(handle.concurrent_calls(), 0, "no slot during the delay");
    drop(handle.bulkhead().try_enter().expect("the slot is free"));
    clock.advance(Duration::from_secs(1));
    assert!(matches!(poll(call.as_mut()), Poll::Ready(Ok(2))));
    assert_eq!(script.calls(), 2);
}

#[test]
fn bulkhead_full_is_retried_by_default_and_abort_on_fails_fast() {
    let (_, registry) = manual();
    let service = wrapped(&registry);
    for (method, attempts) in [
        ("retried", 3),
        ("retried_async", 3),
        ("aborted", 1),
        ("aborted_async", 1),
    ] {
        let handle = registry.bulkhead(&id(method)).unwrap();
        let _held = handle.bulkhead().try_enter().unwrap();
        let mut events = registry.subscribe();
        let script = Script::ok();
        let out = match method {
            "retried" => service.retried(&script),
            "retried_async" => ready(service.retried_async(&script)),
            "aborted" => service.aborted(&script),
            _ => ready(service.aborted_async(&script)),
        };
        assert_eq!(rejected(out), RejectionKind::BulkheadFull, "{method}");
        assert_eq!(
            bulkhead_rejections(&mut events),
            attempts,
            "{method}: attempts that met the full bulkhead"
        );
    }
}

#[test]
fn the_breaker_records_bulkhead_full_as_a_failure_unless_ignored() {
    let (_, registry) = manual();
    let service = wrapped(&registry);
    let call = |method: &str, script: &Script| match method {
        "recorded" => service.recorded(script),
        "recorded_async" => ready(service.recorded_async(script)),
        "ignored" => service.ignored(script),
        _ => ready(service.ignored_async(script)),
    };
    for (method, ignore) in [
        ("recorded", false),
        ("recorded_async", false),
        ("ignored", true),
        ("ignored_async", true),
    ] {
        let handle = registry.bulkhead(&id(method)).unwrap();
        let held = handle.bulkhead().try_enter().unwrap();
        let script = Script::ok();
        for _ in 0..2 {
            assert_eq!(rejected(call(method, &script)), RejectionKind::BulkheadFull);
        }
        drop(held);
        let breaker = registry.circuit_breaker(&id(method)).unwrap();
        let next = call(method, &script);
        if ignore {
            assert_eq!(breaker.state(), CircuitState::Closed, "{method}");
            assert_eq!(next.unwrap(), 1, "{method}");
        } else {
            assert_eq!(breaker.state(), CircuitState::Open, "{method}");
            assert_eq!(rejected(next), RejectionKind::CircuitOpen, "{method}");
            assert_eq!(script.calls(), 0, "{method}");
        }
    }
}

#[test]
fn waiting_for_a_slot_counts_towards_the_timeout_sync() {
    let (clock, registry) = manual();
    let service = wrapped(&registry);
    let handle = registry.bulkhead(&id("waits")).unwrap();
    let _held = handle.bulkhead().try_enter().unwrap();
    let script = Script::ok();
    thread::scope(|s| {
        let call = s.spawn(|| service.waits(&script));
        wait_until("the call waits for a slot", || handle.waiting_calls() == 1);
        clock.advance(Duration::from_secs(1));
        assert_eq!(rejected(call.join().unwrap()), RejectionKind::Timeout);
    });
    assert_eq!(handle.waiting_calls(), 0);
    assert_eq!(script.calls(), 0);
}

#[test]
fn waiting_for_a_slot_counts_towards_the_timeout_async() {
    let (clock, registry) = manual();
    let service = wrapped(&registry);
    let handle = registry.bulkhead(&id("waits_async")).unwrap();
    let _held = handle.bulkhead().try_enter().unwrap();
    let script = Script::ok();
    let mut call = pin!(service.waits_async(&script));
    assert!(poll(call.as_mut()).is_pending());
    assert_eq!(handle.waiting_calls(), 1);
    clock.advance(Duration::from_secs(1));
    match poll(call.as_mut()) {
        Poll::Ready(out) => assert_eq!(rejected(out), RejectionKind::Timeout),
        Poll::Pending => panic!("the deadline passed"),
    }
    assert_eq!(
        handle.waiting_calls(),
        0,
        "the dropped waiter left the queue"
    );
    assert_eq!(script.calls(), 0);
}

#[test]
fn an_async_call_is_dropped_at_its_deadline_and_frees_its_slot() {
    let (clock, registry) = manual();
    let service = wrapped(&registry);
    let handle = registry
        .bulkhead("macros::composition::Composed#never_ends()")
        .unwrap();
    let mut call = pin!(service.never_ends());
    assert!(poll(call.as_mut()).is_pending());
    assert_eq!(handle.concurrent_calls(), 1);
    clock.advance(Duration::from_millis(500));
    match poll(call.as_mut()) {
        Poll::Ready(out) => assert_eq!(rejected(out), RejectionKind::Timeout),
        Poll::Pending => panic!("the deadline passed"),
    }
    assert_eq!(
        handle.concurrent_calls(),
        0,
        "the slot is free at the deadline, before the future is dropped"
    );
}

#[test]
fn a_sync_call_that_overruns_keeps_its_result_and_is_reported() {
    let (clock, registry) = manual();
    let service = wrapped(&registry);
    let mut events = registry.subscribe();
    let script = Script::advancing(&clock, Duration::from_millis(250));
    assert_eq!(service.overruns(&script).unwrap(), 1, "late but kept");
    let overrun = events.drain().find_map(|e| match e {
        Event::Timeout(t) => Some(t.kind),
        _ => None,
    });
    assert_eq!(
        overrun,
        Some(TimeoutEventKind::Overrun {
            timeout: Duration::from_millis(100),
            took: Duration::from_millis(250)
        })
    );
}

#[test]
fn a_call_rejected_by_the_bulkhead_has_already_taken_a_rate_limiter_permit() {
    let (_, registry) = manual();
    let service = wrapped(&registry);
    for method in ["limited", "limited_async"] {
        let call = |script: &Script| {
            if method == "limited" {
                service.limited(script)
            } else {
                ready(service.limited_async(script))
            }
        };
        let limiter = registry.rate_limiter(&id(method)).unwrap();
        let handle = registry.bulkhead(&id(method)).unwrap();
        let held = handle.bulkhead().try_enter().unwrap();
        let script = Script::ok();
        assert_eq!(limiter.available_permits(), 3);
        assert_eq!(rejected(call(&script)), RejectionKind::BulkheadFull);
        assert_eq!(
            limiter.available_permits(),
            2,
            "{method}: the rejected call used a permit"
        );
        drop(held);
        assert!(call(&script).is_ok() && call(&script).is_ok());
        assert_eq!(
            rejected(call(&script)),
            RejectionKind::RateLimited,
            "{method}"
        );
        assert_eq!(script.calls(), 2);
    }
}

#[test]
fn retry_if_and_record_if_judge_the_methods_own_errors() {
    let (_, registry) = manual();
    let service = wrapped(&registry);
    for method in ["judged", "judged_async"] {
        let call = |script: &Script| {
            if method == "judged" {
                service.judged(script)
            } else {
                ready(service.judged_async(script))
            }
        };
        let not_found = Script::failing(u32::MAX, "not found");
        assert!(
            matches!(call(&not_found), Err(ServiceError::Backend(m)) if m == "not found"),
            "{method}: the method's own error, as it returned it"
        );
        assert_eq!(not_found.calls(), 1, "{method}: not retried");
        let breaker = registry.circuit_breaker(&id(method)).unwrap();
        assert_eq!(breaker.state(), CircuitState::Closed, "not a failure");

        let transient = Script::failing(u32::MAX, "transient");
        // The first transient failure opens the breaker (a window of 1),
        // and the retries then meet the open breaker.
        assert_eq!(rejected(call(&transient)), RejectionKind::CircuitOpen);
        assert_eq!(transient.calls(), 1, "{method}");
        assert_eq!(breaker.state(), CircuitState::Open, "{method}");
    }
}

#[test]
fn a_transient_error_is_retried_until_an_attempt_succeeds() {
    let (_, registry) = manual();
    let service = wrapped(&registry);
    let flaky = Script::failing(2, "flaky");
    assert_eq!(service.retried(&flaky).unwrap(), 3);
    let flaky = Script::failing(2, "flaky");
    assert_eq!(ready(service.retried_async(&flaky)).unwrap(), 3);
    let broken = Script::failing(u32::MAX, "broken");
    assert!(matches!(service.retried(&broken), Err(ServiceError::Backend(m)) if m == "broken"));
    assert_eq!(broken.calls(), 3, "max_attempts");
}

#[tokio::test(flavor = "current_thread")]
async fn async_retries_never_block_the_thread() {
    // One thread runs the retrying call and the task that moves the clock:
    // a blocking retry delay would hang this test.
    let (clock, registry) = manual();
    let service = wrapped(&registry);
    let ticker = tokio::spawn({
        let clock = clock.clone();
        async move {
            loop {
                tokio::task::yield_now().await;
                clock.advance(Duration::from_millis(100));
            }
        }
    });
    let script = Arc::new(Script::failing(2, "not yet"));
    let out = service.retried_later(Arc::clone(&script)).await;
    ticker.abort();
    assert_eq!(out.unwrap(), 3);
    assert_eq!(script.calls(), 3);
}

#[test]
fn an_open_breaker_lets_a_trial_through_once_wait_in_open_passes_on_the_clock() {
    let (clock, registry) = manual();
    let service = wrapped(&registry);
    for method in ["half_open", "half_open_async"] {
        let call = |script: &Script| {
            if method == "half_open" {
                service.half_open(script)
            } else {
                ready(service.half_open_async(script))
            }
        };
        let down = Script::failing(u32::MAX, "down");
        for _ in 0..2 {
            assert!(matches!(call(&down), Err(ServiceError::Backend(_))));
        }
        let breaker = registry.circuit_breaker(&id(method)).unwrap();
        assert_eq!(breaker.state(), CircuitState::Open, "{method}");
        clock.advance(Duration::from_secs(29));
        assert_eq!(rejected(call(&Script::ok())), RejectionKind::CircuitOpen);
        clock.advance(Duration::from_secs(1));
        assert_eq!(call(&Script::ok()).unwrap(), 1, "{method}: the trial");
        assert_eq!(breaker.state(), CircuitState::Closed, "{method}");
    }
}

#[test]
fn the_wrapper_returns_the_methods_own_error_type_with_the_rejection_inside() {
    let (_, registry) = manual();
    let service = wrapped(&registry);
    let handle = registry.bulkhead(&id("aborted")).unwrap();
    let _held = handle.bulkhead().try_enter().unwrap();
    // No `CallError`: the method's own `Result<u32, ServiceError>`.
    let out: Result<u32, ServiceError> = service.aborted(&Script::ok());
    match out {
        Err(ServiceError::Rejected(Rejection::BulkheadFull(full))) => {
            assert_eq!(full.instance(), id("aborted"));
        }
        other => panic!("expected the rejection in the method's error, got {other:?}"),
    }
}

#[test]
fn every_policy_of_a_method_has_the_methods_id_and_a_handle_after_new() {
    let (_, registry) = manual();
    let id = id("ordered");
    assert_eq!(registry.retry(&id).unwrap_err().code(), "REG-009");
    let _service = wrapped(&registry);
    assert_eq!(registry.retry(&id).unwrap().snapshot().max_attempts, 2);
    assert_eq!(
        registry.circuit_breaker(&id).unwrap().snapshot().state,
        CircuitState::Closed
    );
    assert_eq!(
        registry
            .rate_limiter(&id)
            .unwrap()
            .snapshot()
            .limit_for_period,
        100
    );
    assert_eq!(
        registry.timeout(&id).unwrap().snapshot().duration,
        Duration::from_secs(1)
    );
    assert_eq!(registry.bulkhead(&id).unwrap().max_concurrent(), 1);
    assert_eq!(
        registry.timeout(&self::id("delayed")).unwrap_err().code(),
        "REG-009",
        "a method without #[timeout] has none"
    );
}

#[test]
fn an_async_mut_self_method_lends_the_delegate_to_each_attempt_even_after_a_timeout() {
    let (clock, registry) = manual();
    let mut service = wrapped(&registry);
    let script = Script::ok();
    {
        let mut call = pin!(service.stuck_once(&script));
        assert!(poll(call.as_mut()).is_pending(), "the first attempt hangs");
        clock.advance(Duration::from_secs(1));
        // The timeout dropped the first attempt, which gave the delegate
        // back; the retry's second attempt borrows it again.
        assert!(matches!(poll(call.as_mut()), Poll::Ready(Ok(2))));
    }
    assert_eq!(script.calls(), 2);
    let out = ready(service.stuck_once(&script));
    assert_eq!(
        out.unwrap(),
        3,
        "the delegate is still there for the next call"
    );
}
