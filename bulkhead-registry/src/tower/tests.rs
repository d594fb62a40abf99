//! The layers' rules: where the slot is taken and given back, waiting for a
//! slot, refusals and their `Retry-After` hint, readiness, errors, pipelines
//! (waiting, timeouts, replays).

use std::convert::Infallible;
use std::fmt;
use std::future::{Future, Ready, poll_fn, ready};
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bulkhead_core::{
    BulkheadConfig, BulkheadEventKind, Event, ManualClock, Rejection, RejectionKind,
};
use tokio::sync::oneshot;
use tower_layer::Layer;
use tower_service::Service;

use super::{
    BulkheadLayer, DEFAULT_RETRY_AFTER, MAX_RETRY_AFTER, PipelineLayer, ServiceError, Unavailable,
};
use crate::{Pipeline, Registry};

/// Answers at once; fails while `failures` is above zero; counts calls.
#[derive(Clone, Default)]
struct Echo {
    calls: Arc<AtomicUsize>,
    failures: Arc<AtomicUsize>,
}

impl Service<u32> for Echo {
    type Response = u32;
    type Error = &'static str;
    type Future = Ready<Result<u32, &'static str>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: u32) -> Self::Future {
        self.calls.fetch_add(1, SeqCst);
        let failed = self
            .failures
            .fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1));
        ready(if failed.is_ok() {
            Err("flaky")
        } else {
            Ok(request)
        })
    }
}

/// Answers when the test sends the answer: `gates` holds one sender per call
/// not answered yet, `requests` every request it was called with.
#[derive(Clone, Default)]
struct Gated {
    gates: Arc<Mutex<Vec<oneshot::Sender<u32>>>>,
    requests: Arc<Mutex<Vec<u32>>>,
}

impl Gated {
    fn requests(&self) -> Vec<u32> {
        self.requests.lock().unwrap().clone()
    }

    fn open_all(&self, answer: u32) {
        for gate in self.gates.lock().unwrap().drain(..) {
            let _ = gate.send(answer);
        }
    }

    fn calls(&self) -> usize {
        self.gates.lock().unwrap().len()
    }
}

impl Service<u32> for Gated {
    type Response = u32;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<u32, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: u32) -> Self::Future {
        self.requests.lock().unwrap().push(request);
        let (gate, answer) = oneshot::channel();
        self.gates.lock().unwrap().push(gate);
        Box::pin(async move { Ok(answer.await.unwrap_or(0)) })
    }
}

fn poll_noop<F: Future>(future: Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

fn bulkhead(
    registry: &Registry,
    id: &str,
    spec: bulkhead_core::BulkheadConfigBuilder,
) -> bulkhead_core::Bulkhead {
    registry.bulkhead_policy(id, "tower tests", &spec).unwrap()
}

#[test]
fn the_slot_is_taken_in_call_and_given_back_when_the_response_completes() {
    let registry = Registry::new();
    let reports = bulkhead(
        &registry,
        "reports",
        BulkheadConfig::builder().max_concurrent(2),
    );
    let inner = Gated::default();
    let mut service = BulkheadLayer::new(reports.clone()).layer(inner.clone());

    assert!(poll_noop(pin!(poll_fn(|cx| service.poll_ready(cx)))).is_ready());
    assert_eq!(reports.concurrent_calls(), 0, "poll_ready takes no slot");
    let mut response = pin!(service.call(7));
    assert_eq!(reports.concurrent_calls(), 1, "call takes the slot");
    assert!(poll_noop(response.as_mut()).is_pending());
    assert_eq!(reports.concurrent_calls(), 1);

    inner.open_all(7);
    assert_eq!(poll_noop(response.as_mut()), Poll::Ready(Ok(7)));
    assert_eq!(
        reports.concurrent_calls(),
        0,
        "given back on completion, before the drop"
    );
}

#[test]
fn dropping_the_response_future_gives_the_slot_back() {
    let registry = Registry::new();
    let reports = bulkhead(
        &registry,
        "reports",
        BulkheadConfig::builder().max_concurrent(1),
    );
    let mut service = BulkheadLayer::new(reports.clone()).layer(Gated::default());
    let response = service.call(1);
    assert_eq!(reports.concurrent_calls(), 1);
    drop(response);
    assert_eq!(reports.concurrent_calls(), 0);
}

#[test]
fn a_full_bulkhead_refuses_at_once_without_calling_the_inner_service_and_publishes_it() {
    let registry = Registry::new();
    let mut events = registry.subscribe();
    // `max_wait` zero, the default: no waiting.
    let spec = BulkheadConfig::builder().max_concurrent(1);
    let reports = bulkhead(&registry, "reports", spec);
    let inner = Echo::default();
    let layer = BulkheadLayer::new(reports.clone()).retry_after(Duration::from_millis(1500));
    let mut service = layer.layer(inner.clone());

    let held = reports.try_enter().unwrap();
    let refused = poll_noop(pin!(service.call(1)));
    let Poll::Ready(Err(ServiceError::Unavailable(refused))) = refused else {
        panic!("refused at the first poll, got {refused:?}")
    };
    assert_eq!(
        inner.calls.load(SeqCst),
        0,
        "the inner service is not called"
    );
    assert_eq!(refused.rejection().kind(), RejectionKind::BulkheadFull);
    assert_eq!(refused.rejection().instance(), "reports");
    assert_eq!(refused.retry_after(), Duration::from_millis(1500));
    assert_eq!(refused.retry_after_secs(), 2, "rounded up");
    assert_eq!(
        refused.to_string(),
        r#"service unavailable: bulkhead "reports" is full"#
    );
    match events.try_recv() {
        Some(Event::Bulkhead(event)) => {
            assert_eq!(event.instance, "reports");
            assert!(matches!(
                event.kind,
                BulkheadEventKind::Rejected { waited: false, .. }
            ));
        }
        other => panic!("expected the rejection, got {other:?}"),
    }

    drop(held);
    assert_eq!(poll_noop(pin!(service.call(2))), Poll::Ready(Ok(2)));
    assert!(
        events.try_recv().is_none(),
        "admitted calls publish nothing"
    );
}

#[test]
fn readiness_and_errors_are_the_inner_services() {
    #[derive(Clone)]
    struct Broken;
    impl Service<u32> for Broken {
        type Response = u32;
        type Error = &'static str;
        type Future = Ready<Result<u32, &'static str>>;
        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Err("not ready"))
        }
        fn call(&mut self, _: u32) -> Self::Future {
            ready(Err("failed"))
        }
    }
    let registry = Registry::new();
    let reports = bulkhead(&registry, "reports", BulkheadConfig::builder());
    let mut service = BulkheadLayer::new(reports.clone()).layer(Broken);
    let ready = poll_noop(pin!(poll_fn(|cx| service.poll_ready(cx))));
    assert_eq!(ready, Poll::Ready(Err(ServiceError::Inner("not ready"))));
    let failed = poll_noop(pin!(service.call(1)));
    assert_eq!(failed, Poll::Ready(Err(ServiceError::Inner("failed"))));
    assert_eq!(reports.concurrent_calls(), 0);
}

#[test]
fn a_disabled_bulkhead_lets_every_request_through() {
    let registry = Registry::new();
    let spec = BulkheadConfig::builder().max_concurrent(1).enabled(false);
    let off = bulkhead(&registry, "off", spec);
    let mut service = BulkheadLayer::new(off).layer(Gated::default());
    let first = service.call(1);
    let mut second = pin!(service.call(2));
    assert!(
        poll_noop(second.as_mut()).is_pending(),
        "admitted, waiting on its gate"
    );
    drop(first);
}

#[test]
fn a_layer_from_the_registry_shares_the_instance_and_an_unknown_id_is_reg_009() {
    let registry = Registry::new();
    let reports = bulkhead(
        &registry,
        "reports",
        BulkheadConfig::builder().max_concurrent(1),
    );
    let layer = BulkheadLayer::from_registry(&registry, "reports").unwrap();
    let _held = reports.try_enter().unwrap();
    let mut service = layer.layer(Echo::default());
    assert!(matches!(
        poll_noop(pin!(service.call(1))),
        Poll::Ready(Err(_))
    ));
    let unknown = BulkheadLayer::from_registry(&registry, "nope").unwrap_err();
    assert_eq!(unknown.code(), "REG-009");
}

#[test]
fn unavailable_is_found_in_a_boxed_error_and_a_zero_hint_is_zero_seconds() {
    let refused = Unavailable::new(
        Rejection::from(bulkhead_core::CircuitOpen::new("db")),
        Duration::ZERO,
    );
    assert_eq!(refused.retry_after_secs(), 0);
    let boxed: Box<dyn std::error::Error + Send + Sync> =
        Box::new(ServiceError::<std::io::Error>::Unavailable(refused));
    assert_eq!(Unavailable::find(&*boxed), Some(&refused));
    let inner: Box<dyn std::error::Error + Send + Sync> =
        Box::new(ServiceError::Inner(std::io::Error::other("disk")));
    assert_eq!(Unavailable::find(&*inner), None);
    assert_eq!(inner.to_string(), "disk");
}

/// A registry on a manual clock: a wait ends only when the test moves it.
fn on_manual_clock(track_sizing: bool) -> (Registry, ManualClock) {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .track_sizing(track_sizing)
        .build();
    (registry, clock)
}

fn waiting(max_concurrent: u32, max_wait: Duration) -> bulkhead_core::BulkheadConfigBuilder {
    BulkheadConfig::builder()
        .max_concurrent(max_concurrent)
        .max_wait(max_wait)
}

/// Lets the runtime's other tasks run until `condition` holds: a bounded
/// number of turns, so that a task nobody woke fails the test instead of
/// hanging it. Not a timing assertion.
async fn yield_until(what: &str, mut condition: impl FnMut() -> bool) {
    for _ in 0..1000 {
        if condition() {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("gave up waiting until {what}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_request_queued_behind_a_full_bulkhead_runs_once_the_holder_finishes() {
    let (registry, _clock) = on_manual_clock(true);
    let reports = bulkhead(&registry, "reports", waiting(1, Duration::from_millis(250)));
    let inner = Gated::default();
    let mut service = BulkheadLayer::new(reports.clone()).layer(inner.clone());

    let first = tokio::spawn(service.call(1));
    let second = tokio::spawn(service.call(2));
    assert_eq!(
        reports.waiting_calls(),
        1,
        "queued in `call`, behind the first"
    );
    tokio::task::yield_now().await; // both tasks poll their response
    assert_eq!(
        inner.requests(),
        [1],
        "the waiting request has not reached the service"
    );
    assert!(!second.is_finished());

    inner.open_all(10);
    assert_eq!(first.await.unwrap(), Ok(10));
    // The slot went to the waiting request, whose task was woken to call
    // the service.
    yield_until("the second request reached the service", || {
        inner.requests().len() == 2
    })
    .await;
    assert_eq!(inner.requests(), [1, 2]);
    assert_eq!(
        (reports.concurrent_calls(), reports.waiting_calls()),
        (1, 0)
    );
    inner.open_all(20);
    assert_eq!(second.await.unwrap(), Ok(20));
    assert_eq!(reports.concurrent_calls(), 0);
    let traffic = reports.traffic().unwrap();
    assert_eq!(
        (traffic.admitted, traffic.rejected, traffic.abandoned),
        (2, 0, 0),
        "both admitted, nothing counted twice"
    );
}

#[test]
fn a_queued_request_whose_max_wait_passes_is_refused_as_an_immediate_refusal_is() {
    let (registry, clock) = on_manual_clock(false);
    let mut events = registry.subscribe();
    let reports = bulkhead(&registry, "reports", waiting(1, Duration::from_millis(250)));
    let inner = Echo::default();
    let layer = BulkheadLayer::new(reports.clone()).retry_after(Duration::from_secs(3));
    let mut service = layer.layer(inner.clone());

    let _held = reports.try_enter().unwrap();
    let mut queued = pin!(service.call(1));
    assert!(poll_noop(queued.as_mut()).is_pending(), "waits for a slot");
    assert_eq!(reports.waiting_calls(), 1);
    clock.advance(Duration::from_millis(249));
    assert!(poll_noop(queued.as_mut()).is_pending(), "within max_wait");

    clock.advance(Duration::from_millis(1));
    let refused = poll_noop(queued.as_mut());
    let Poll::Ready(Err(ServiceError::Unavailable(refused))) = refused else {
        panic!("refused once max_wait passed, got {refused:?}")
    };
    assert_eq!(refused.rejection().kind(), RejectionKind::BulkheadFull);
    assert_eq!(refused.rejection().instance(), "reports");
    assert_eq!(refused.retry_after_secs(), 3, "the layer's hint");
    assert_eq!(
        refused.to_string(),
        r#"service unavailable: bulkhead "reports" is full"#
    );
    assert_eq!(
        inner.calls.load(SeqCst),
        0,
        "the inner service is not called"
    );
    assert_eq!(reports.waiting_calls(), 0);
    match events.try_recv() {
        Some(Event::Bulkhead(event)) => assert!(matches!(
            event.kind,
            BulkheadEventKind::Rejected { waited: true, .. }
        )),
        other => panic!("expected the rejection, got {other:?}"),
    }
}

#[test]
fn a_dropped_waiting_response_future_leaves_the_queue_and_never_reaches_the_service() {
    let (registry, _clock) = on_manual_clock(false);
    let reports = bulkhead(&registry, "reports", waiting(1, Duration::from_secs(60)));
    let inner = Gated::default();
    let mut service = BulkheadLayer::new(reports.clone()).layer(inner.clone());

    let mut holder = pin!(service.call(1));
    let handed_over = service.call(2);
    let left_early = service.call(3);
    let mut last = pin!(service.call(4));
    assert_eq!(reports.waiting_calls(), 3);
    drop(left_early);
    assert_eq!(reports.waiting_calls(), 2, "left the queue at once");

    inner.open_all(10);
    assert_eq!(poll_noop(holder.as_mut()), Poll::Ready(Ok(10)));
    assert_eq!(
        reports.waiting_calls(),
        1,
        "the slot was handed to request 2"
    );
    // Dropped before it was polled again: its slot passes on to request 4.
    drop(handed_over);
    assert!(poll_noop(last.as_mut()).is_pending(), "on its gate");
    assert_eq!(inner.requests(), [1, 4], "the dropped requests never ran");
    assert_eq!(
        (reports.concurrent_calls(), reports.waiting_calls()),
        (1, 0)
    );

    inner.open_all(40);
    assert_eq!(poll_noop(last.as_mut()), Poll::Ready(Ok(40)));
    assert_eq!(
        (reports.concurrent_calls(), reports.waiting_calls()),
        (0, 0)
    );
}

/// Refuses one request through `service` and returns its refusal.
fn refuse<S>(service: &mut S) -> Unavailable
where
    S: Service<u32, Error = ServiceError<&'static str>>,
    S::Response: fmt::Debug,
{
    match poll_noop(pin!(service.call(0))) {
        Poll::Ready(Err(ServiceError::Unavailable(refused))) => refused,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn retry_after_is_estimated_from_the_hold_time_when_sizing_is_tracked_else_the_layers_hint() {
    for tracked in [false, true] {
        let (registry, clock) = on_manual_clock(tracked);
        let reports = bulkhead(
            &registry,
            "reports",
            BulkheadConfig::builder().max_concurrent(2),
        );
        let mut service = BulkheadLayer::new(reports.clone()).layer(Echo::default());

        let held = [reports.try_enter_owned(), reports.try_enter_owned()];
        let refused = refuse(&mut service);
        assert_eq!(
            refused.retry_after(),
            DEFAULT_RETRY_AFTER,
            "no call completed yet"
        );

        // Two calls held their slots 10 s each: W = 10 s.
        clock.advance(Duration::from_secs(10));
        drop(held);
        let _held = [reports.try_enter_owned(), reports.try_enter_owned()];
        let refused = refuse(&mut service);
        // k = 1 slot to come free, L = 2 in flight: 1 × 10 s / 2.
        let expected = if tracked { 5 } else { 1 };
        assert_eq!(refused.retry_after_secs(), expected, "tracked: {tracked}");
    }
}

#[test]
fn the_estimated_retry_after_counts_the_queue_and_stays_between_the_hint_and_a_minute() {
    let (registry, clock) = on_manual_clock(true);
    let exports = bulkhead(&registry, "exports", waiting(2, Duration::from_secs(1)));
    let mut service = BulkheadLayer::new(exports.clone()).layer(Echo::default());
    drop(exports.try_enter());
    let held = [exports.try_enter_owned(), exports.try_enter_owned()];
    clock.advance(Duration::from_secs(20));
    drop(held);
    // Three calls completed: 0 s, 20 s and 20 s, W = 40 s / 3.
    let held = [exports.try_enter_owned(), exports.try_enter_owned()];

    let mut queued: Vec<_> = (1..=3).map(|i| Box::pin(service.call(i))).collect();
    assert_eq!(exports.waiting_calls(), 3);
    clock.advance(Duration::from_secs(1));
    // Each refusal leaves the others queued: k = Q + 1 with Q = 2, 1, 0,
    // and the hint is ⌈k × W / 2⌉.
    let hints: Vec<u64> = queued
        .iter_mut()
        .map(|response| match poll_noop(response.as_mut()) {
            Poll::Ready(Err(ServiceError::Unavailable(refused))) => refused.retry_after_secs(),
            other => panic!("expected a refusal, got {other:?}"),
        })
        .collect();
    assert_eq!(hints, [20, 14, 7]);

    // The layer's hint is the floor; a minute is the ceiling.
    let mut floored = BulkheadLayer::new(exports.clone())
        .retry_after(Duration::from_secs(10))
        .layer(Echo::default());
    let mut queued = pin!(floored.call(4));
    clock.advance(Duration::from_secs(1));
    let Poll::Ready(Err(ServiceError::Unavailable(refused))) = poll_noop(queued.as_mut()) else {
        panic!("refused")
    };
    assert_eq!(
        refused.retry_after_secs(),
        10,
        "⌈W / 2⌉ = 7 is below the floor"
    );

    drop(held);
    let slow = exports.try_enter_owned();
    clock.advance(Duration::from_secs(3600));
    drop(slow);
    let _held = [exports.try_enter_owned(), exports.try_enter_owned()];
    let mut queued = pin!(service.call(5));
    clock.advance(Duration::from_secs(1));
    let Poll::Ready(Err(ServiceError::Unavailable(refused))) = poll_noop(queued.as_mut()) else {
        panic!("refused")
    };
    assert_eq!(
        refused.retry_after(),
        MAX_RETRY_AFTER,
        "an hour-long call inflated W"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_pipeline_bulkhead_waits_and_the_inner_service_is_called_only_with_a_slot() {
    let registry = Registry::new();
    let pipeline = Pipeline::builder(&registry, "reports")
        .bulkhead(|b| b.max_concurrent(1).max_wait(Duration::from_secs(600)))
        .build()
        .unwrap();
    let inner = Gated::default();
    let mut service = PipelineLayer::new(pipeline).unwrap().layer(inner.clone());

    let first = tokio::spawn(service.call(1));
    let second = tokio::spawn(service.call(2));
    let handle = registry.bulkhead("reports").unwrap();
    while handle.waiting_calls() < 1 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        inner.calls(),
        1,
        "the waiting request has not reached the service"
    );

    inner.open_all(10);
    assert_eq!(first.await.unwrap(), Ok(10));
    while inner.calls() < 1 {
        tokio::task::yield_now().await;
    }
    inner.open_all(20);
    assert_eq!(second.await.unwrap(), Ok(20));
}

#[tokio::test(flavor = "current_thread")]
async fn a_pipeline_timeout_drops_the_call_and_is_unavailable() {
    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    let pipeline = Pipeline::builder(&registry, "reports")
        .timeout(|t| t.duration(Duration::from_secs(1)))
        .bulkhead(|b| b.max_concurrent(1))
        .build()
        .unwrap();
    let layer = PipelineLayer::new(pipeline)
        .unwrap()
        .retry_after(Duration::from_secs(3));
    let mut service = layer.layer(Gated::default());

    let call = tokio::spawn(service.call(1));
    let handle = registry.bulkhead("reports").unwrap();
    while handle.concurrent_calls() < 1 {
        tokio::task::yield_now().await;
    }
    clock.advance(Duration::from_secs(1));
    let Err(ServiceError::Unavailable(refused)) = call.await.unwrap() else {
        panic!("timed out")
    };
    assert_eq!(refused.rejection().kind(), RejectionKind::Timeout);
    assert_eq!(refused.retry_after_secs(), 3);
    assert_eq!(
        handle.concurrent_calls(),
        0,
        "the dropped call gave its slot back"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_pipeline_with_replay_sends_a_copy_per_attempt_and_a_full_one_is_unavailable() {
    let registry = Registry::new();
    let pipeline = Pipeline::builder(&registry, "inventory")
        .retry(|r| r.max_attempts(3).wait(Duration::ZERO))
        .bulkhead(|b| b.max_concurrent(1))
        .build()
        .unwrap();
    let copies = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&copies);
    let layer = PipelineLayer::with_replay(pipeline, move |request: &u32| {
        counted.fetch_add(1, SeqCst);
        *request
    });
    let inner = Echo::default();
    inner.failures.store(2, SeqCst);
    let mut service = layer.layer(inner.clone());
    poll_fn(|cx| service.poll_ready(cx)).await.unwrap();
    assert_eq!(service.call(5).await, Ok(5));
    assert_eq!(inner.calls.load(SeqCst), 3);
    assert_eq!(copies.load(SeqCst), 3);

    inner.failures.store(3, SeqCst);
    assert_eq!(service.call(6).await, Err(ServiceError::Inner("flaky")));

    let _held = registry
        .bulkhead("inventory")
        .unwrap()
        .bulkhead()
        .try_enter_owned()
        .unwrap();
    let refused = service.call(7).await.unwrap_err();
    assert_eq!(
        refused.unavailable().map(|u| u.rejection().kind()),
        Some(RejectionKind::BulkheadFull)
    );
}

#[test]
fn a_pipeline_refusal_by_its_bulkhead_gets_the_same_estimated_retry_after() {
    let (registry, clock) = on_manual_clock(true);
    let pipeline = Pipeline::builder(&registry, "inventory")
        .bulkhead(|b| b.max_concurrent(1))
        .build()
        .unwrap();
    let layer = PipelineLayer::new(pipeline).unwrap();
    let mut service = layer.layer(Echo::default());
    let inventory = registry.bulkhead("inventory").unwrap().bulkhead().clone();

    let held = inventory.try_enter_owned();
    assert_eq!(refuse(&mut service).retry_after(), DEFAULT_RETRY_AFTER);
    clock.advance(Duration::from_secs(4));
    drop(held);
    let _held = inventory.try_enter_owned();
    let refused = refuse(&mut service);
    assert_eq!(refused.rejection().kind(), RejectionKind::BulkheadFull);
    assert_eq!(refused.retry_after_secs(), 4, "W = 4 s, one slot in flight");
}

#[test]
fn a_pipeline_that_retries_needs_a_replay_and_is_reg_012_without_one() {
    let registry = Registry::new();
    let pipeline = Pipeline::builder(&registry, "retrying")
        .retry(|r| r.max_attempts(2))
        .build()
        .unwrap();
    let err = PipelineLayer::new(pipeline).unwrap_err();
    assert_eq!(err.code(), "REG-012");
    assert_eq!(err.pipeline(), "retrying");
    assert!(
        err.to_string().contains("PipelineLayer::with_replay"),
        "{err}"
    );
}

#[test]
fn a_pipeline_that_hedges_needs_a_replay_too() {
    let registry = Registry::new();
    let pipeline = Pipeline::builder(&registry, "hedging")
        .hedge(|h| h.delay(Duration::from_millis(10)))
        .build()
        .unwrap();
    let err = PipelineLayer::new(pipeline).unwrap_err();
    assert_eq!(err.code(), "REG-012");
    assert!(
        err.to_string()
            .starts_with("REG-012: pipeline \"hedging\" hedges"),
        "{err}"
    );
}

#[test]
fn layers_services_futures_and_errors_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<BulkheadLayer>();
    send_sync::<PipelineLayer>();
    send_sync::<super::BulkheadService<Echo>>();
    send_sync::<super::PipelineService<Echo, super::SendOnce>>();
    send_sync::<super::ResponseFuture<Echo, u32>>();
    send::<super::PipelineFuture<u32, Infallible>>();
    send_sync::<ServiceError<std::io::Error>>();
    send_sync::<Unavailable>();
}

#[tokio::test(flavor = "current_thread")]
async fn a_pipeline_under_chaos_refuses_with_the_injected_fault_and_a_reload_lifts_it() {
    let registry = Registry::new();
    let pipeline = Pipeline::builder(&registry, "chaotic")
        .chaos(|c| c.enabled(true).fault_rate(1.0).seed(3))
        .build()
        .unwrap();
    let inner = Echo::default();
    let mut service = PipelineLayer::new(pipeline).unwrap().layer(inner.clone());
    match service.call(1).await {
        Err(ServiceError::Unavailable(unavailable)) => {
            assert_eq!(
                unavailable.rejection().kind(),
                bulkhead_core::RejectionKind::Injected
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        inner.calls.load(SeqCst),
        0,
        "the fault took the call's place"
    );
    registry
        .reload_toml("[chaos.instances.chaotic]\nenabled = false")
        .unwrap();
    assert_eq!(service.call(2).await, Ok(2));
}

/// While the registry's histograms record, a `BulkheadLayer` times its
/// requests: the wait for a slot (zero at once, the time queued
/// otherwise), and the request from arrival to answer as a call and its
/// one attempt, with its outcome.
#[tokio::test(flavor = "current_thread")]
async fn a_bulkhead_layer_records_waits_and_calls_while_the_histograms_record() {
    use bulkhead_core::HistogramKind;

    let registry = Registry::new();
    let reports = bulkhead(&registry, "reports", waiting(1, Duration::from_secs(5)));
    let inner = Gated::default();
    let mut service = BulkheadLayer::new(reports.clone()).layer(inner.clone());
    // Nothing is recorded before the histograms are asked for.
    let before = tokio::spawn(service.call(0));
    inner.open_all(0);
    assert_eq!(before.await.unwrap(), Ok(0));
    assert!(registry.telemetry().histograms().is_empty());

    registry.telemetry().record();
    let first = tokio::spawn(service.call(1));
    let second = tokio::spawn(service.call(2));
    tokio::task::yield_now().await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    inner.open_all(10);
    assert_eq!(first.await.unwrap(), Ok(10));
    yield_until("the second request reached the service", || {
        inner.requests().len() == 3
    })
    .await;
    inner.open_all(20);
    assert_eq!(second.await.unwrap(), Ok(20));
    // Refused: a full bulkhead with a zero max_wait.
    let full = bulkhead(
        &registry,
        "full",
        BulkheadConfig::builder().max_concurrent(1),
    );
    let held = full.try_enter();
    let mut refusing = BulkheadLayer::new(full.clone()).layer(Gated::default());
    assert!(refusing.call(3).await.is_err());
    drop(held);

    let read: Vec<(String, HistogramKind, String, u64, Duration)> = registry
        .telemetry()
        .histograms()
        .iter()
        .map(|h| {
            (
                h.instance().to_owned(),
                h.kind(),
                h.outcome().to_owned(),
                h.histogram().count(),
                h.histogram().sum(),
            )
        })
        .collect();
    let find = |instance: &str, kind, outcome: &str| {
        read.iter()
            .find(|(i, k, o, ..)| i == instance && *k == kind && o == outcome)
            .map(|(.., n, sum)| (*n, *sum))
            .unwrap_or_else(|| panic!("no {instance} {kind:?} {outcome} in {read:?}"))
    };
    let (waits, waited) = find("reports", HistogramKind::SlotWait, "admitted");
    assert_eq!(waits, 2);
    assert!(waited >= Duration::from_millis(20), "{waited:?}");
    let (calls, took) = find("reports", HistogramKind::CallDuration, "success");
    assert_eq!(calls, 2);
    assert!(
        took >= Duration::from_millis(40),
        "both calls spanned the gate: {took:?}"
    );
    assert_eq!(
        find("reports", HistogramKind::AttemptDuration, "success").0,
        2
    );
    assert_eq!(find("full", HistogramKind::SlotWait, "rejected").0, 1);
    assert_eq!(
        find("full", HistogramKind::CallDuration, "bulkhead_full").0,
        1
    );
}
