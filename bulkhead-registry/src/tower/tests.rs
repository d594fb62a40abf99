//! The layers' rules: where the slot is taken and given back, refusals,
//! readiness, errors, pipelines (waiting, timeouts, replays).

use std::convert::Infallible;
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

use super::{BulkheadLayer, PipelineLayer, ServiceError, Unavailable};
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

/// Answers when the test sends the answer: `gates` holds one sender per call.
#[derive(Clone, Default)]
struct Gated {
    gates: Arc<Mutex<Vec<oneshot::Sender<u32>>>>,
}

impl Gated {
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

    fn call(&mut self, _: u32) -> Self::Future {
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
    // max_wait is not used by the layer: it never waits.
    let spec = BulkheadConfig::builder()
        .max_concurrent(1)
        .max_wait(Duration::from_secs(60));
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
fn a_pipeline_that_retries_needs_a_replay_and_is_reg_012_without_one() {
    let registry = Registry::new();
    let pipeline = Pipeline::builder(&registry, "retrying")
        .retry(|r| r.max_attempts(2))
        .build()
        .unwrap();
    let err = PipelineLayer::new(pipeline).unwrap_err();
    assert_eq!(err.code(), "REG-012");
    assert!(
        err.to_string().contains("PipelineLayer::with_replay"),
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
    send_sync::<super::ResponseFuture<Ready<Result<u32, Infallible>>>>();
    send::<super::PipelineFuture<u32, Infallible>>();
    send_sync::<ServiceError<std::io::Error>>();
    send_sync::<Unavailable>();
}
