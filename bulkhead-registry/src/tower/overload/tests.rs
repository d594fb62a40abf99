//! The overload layers' rules on a `ManualClock`: which header is read,
//! what the handler sees, what a client sends on, what is pushed back.

use std::convert::Infallible;
use std::future::{Future, Ready, ready};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use bulkhead_core::{
    Clock, ManualClock, OwnedBulkheadPermit, Priority, RejectionKind, deadline, priority,
};
use http::{HeaderName, HeaderValue, Request, Response};
use tower_layer::Layer;
use tower_service::Service;

use super::super::{BulkheadLayer, PipelineLayer, ServiceError};
use super::*;
use crate::{Pipeline, Registry};

/// Answers with what `f` makes of the request, called in `call`; counts
/// its calls.
#[derive(Clone)]
struct Handler<F> {
    f: F,
    calls: Arc<AtomicUsize>,
}

fn handler<F>(f: F) -> Handler<F> {
    Handler {
        f,
        calls: Arc::default(),
    }
}

impl<F: FnMut(Request<()>) -> R, R> Service<Request<()>> for Handler<F> {
    type Response = R;
    type Error = Infallible;
    type Future = Ready<Result<R, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<()>) -> Self::Future {
        self.calls.fetch_add(1, SeqCst);
        ready(Ok((self.f)(request)))
    }
}

fn request(headers: &[(&'static str, &'static str)]) -> Request<()> {
    let mut request = Request::new(());
    for &(name, value) in headers {
        request
            .headers_mut()
            .append(name, HeaderValue::from_static(value));
    }
    request
}

fn envoy() -> DeadlineHeader {
    DeadlineHeader::Millis(HeaderName::from_static("x-envoy-expected-rq-timeout-ms"))
}

#[tokio::test]
async fn the_handler_runs_under_the_deadline_its_header_gives() {
    let clock = ManualClock::new();
    let seen = clock.clone();
    let layer = DeadlineLayer::new(Arc::new(clock.clone()));
    let mut service = layer.layer(handler(move |_| deadline::remaining_on(&seen)));
    let asked = service.call(request(&[("grpc-timeout", "1500m")]));
    assert_eq!(deadline::current(), None); // only inside the call and its polls
    assert_eq!(asked.await, Ok(Some(Duration::from_millis(1500))));
    assert_eq!(service.call(request(&[])).await, Ok(None));
    assert_eq!(
        service.call(request(&[("grpc-timeout", "1.5S")])).await,
        Ok(None)
    );
    // Sent twice (a proxy appended its own): the shorter holds.
    let twice = request(&[("grpc-timeout", "10S"), ("grpc-timeout", "1500m")]);
    assert_eq!(
        service.call(twice).await,
        Ok(Some(Duration::from_millis(1500)))
    );
}

#[tokio::test]
async fn a_configured_header_is_read_instead_of_grpc_timeout_and_the_cap_holds() {
    let clock = ManualClock::new();
    let seen = clock.clone();
    let layer = DeadlineLayer::new(Arc::new(clock.clone()))
        .header(envoy())
        .max(Duration::from_secs(2));
    let mut service = layer.layer(handler(move |_| deadline::remaining_on(&seen)));
    let both = request(&[
        ("grpc-timeout", "100m"),
        ("x-envoy-expected-rq-timeout-ms", "700"),
    ]);
    assert_eq!(
        service.call(both).await,
        Ok(Some(Duration::from_millis(700)))
    );
    let grpc_only = request(&[("grpc-timeout", "100m")]);
    assert_eq!(service.call(grpc_only).await, Ok(None));
    let greedy = request(&[("x-envoy-expected-rq-timeout-ms", "60000")]);
    assert_eq!(service.call(greedy).await, Ok(Some(Duration::from_secs(2))));
}

/// Reads, after yielding once, what `read` reads: proves the response
/// future's later polls run under the layer's scope.
#[derive(Clone)]
struct AtLaterPoll<T>(fn() -> T);

impl<T: Send + 'static> Service<Request<()>> for AtLaterPoll<T> {
    type Response = T;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<T, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<()>) -> Self::Future {
        let read = self.0;
        Box::pin(async move {
            tokio::task::yield_now().await;
            Ok(read())
        })
    }
}

#[tokio::test]
async fn every_poll_of_the_response_runs_under_the_deadline() {
    let clock = ManualClock::new();
    let by = clock.now() + Duration::from_secs(3);
    let mut service = DeadlineLayer::new(Arc::new(clock)).layer(AtLaterPoll(deadline::current));
    assert_eq!(
        service.call(request(&[("grpc-timeout", "3S")])).await,
        Ok(Some(by))
    );
    assert_eq!(service.call(request(&[])).await, Ok(None));
}

#[tokio::test]
async fn an_earlier_deadline_around_the_server_still_holds() {
    let clock = ManualClock::new();
    let mut service =
        DeadlineLayer::new(Arc::new(clock.clone())).layer(handler(|_| deadline::current()));
    let outer = clock.now() + Duration::from_millis(50);
    let asked = request(&[("grpc-timeout", "10S")]);
    let call = deadline::with(outer, || service.call(asked));
    assert_eq!(call.await, Ok(Some(outer)));
    let asked = request(&[("grpc-timeout", "10m")]);
    let by = clock.now() + Duration::from_millis(10);
    let call = deadline::with(outer, || service.call(asked));
    assert_eq!(call.await, Ok(Some(by)));
}

/// A registry on a manual clock with a bulkhead `slots` of one slot, held,
/// and a `max_wait` of ten minutes; the pipeline `slots` that runs it.
fn one_slot_held() -> (ManualClock, Registry, Pipeline, OwnedBulkheadPermit) {
    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    let slots = Pipeline::builder(&registry, "slots")
        .bulkhead(|b| b.max_concurrent(1).max_wait(Duration::from_secs(600)))
        .build()
        .unwrap();
    let held = slots
        .policies()
        .bulkhead()
        .unwrap()
        .try_enter_owned()
        .unwrap();
    (clock, registry, slots, held)
}

#[tokio::test]
async fn a_pipeline_below_refuses_with_deadline_exceeded_when_the_deadline_passes() {
    let (clock, registry, slots, _held) = one_slot_held();
    let mut service = DeadlineLayer::new(registry.clock().clone())
        .layer(PipelineLayer::new(slots).unwrap().layer(handler(|_| ())));
    let waiting = tokio::spawn(service.call(request(&[("grpc-timeout", "2S")])));
    while clock.sleepers() == 0 {
        tokio::task::yield_now().await;
    }
    clock.advance(Duration::from_secs(2));
    let refused = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("refused at the deadline, not after max_wait")
        .unwrap()
        .unwrap_err();
    let kind = refused.unavailable().unwrap().rejection().kind();
    assert_eq!(kind, RejectionKind::DeadlineExceeded);
}

#[tokio::test]
async fn a_bulkhead_layer_below_stops_waiting_when_the_deadline_passes() {
    let (clock, registry, slots, _held) = one_slot_held();
    let bulkhead = slots.policies().bulkhead().unwrap().clone();
    let mut service = DeadlineLayer::new(registry.clock().clone())
        .layer(BulkheadLayer::new(bulkhead).layer(handler(|_| ())));
    let waiting = tokio::spawn(service.call(request(&[("grpc-timeout", "2S")])));
    while clock.sleepers() == 0 {
        tokio::task::yield_now().await;
    }
    clock.advance(Duration::from_secs(2));
    let refused = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("refused at the deadline, not after max_wait")
        .unwrap()
        .unwrap_err();
    let kind = refused.unavailable().unwrap().rejection().kind();
    assert_eq!(
        kind,
        RejectionKind::BulkheadFull,
        "its own refusal, at the deadline"
    );
}

#[tokio::test]
async fn the_class_comes_from_the_extension_or_the_header_it_is_told() {
    let mut by_header = PriorityLayer::header(HeaderName::from_static("x-priority"))
        .layer(handler(|_| priority::current()));
    for class in Priority::ALL {
        let mut tagged = Request::new(());
        tagged
            .headers_mut()
            .insert("x-priority", HeaderValue::from_static(class.name()));
        assert_eq!(by_header.call(tagged).await, Ok(Some(class)));
    }
    for ignored in ["Critical", "urgent", "", "high "] {
        let mut tagged = Request::new(());
        tagged
            .headers_mut()
            .insert("x-priority", HeaderValue::from_str(ignored).unwrap());
        assert_eq!(by_header.call(tagged).await, Ok(None), "{ignored:?}");
    }
    let mut extension = Request::new(());
    extension.extensions_mut().insert(Priority::High);
    assert_eq!(by_header.call(extension).await, Ok(None)); // not its source

    let mut by_extension = PriorityLayer::from_extension().layer(AtLaterPoll(priority::current));
    let mut extension = Request::new(());
    extension.extensions_mut().insert(Priority::Sheddable);
    assert_eq!(
        by_extension.call(extension).await,
        Ok(Some(Priority::Sheddable))
    );
    let header = request(&[("x-priority", "critical")]);
    assert_eq!(by_extension.call(header).await, Ok(None));
}

#[tokio::test]
async fn a_scope_around_the_call_beats_the_layers_class() {
    let mut service = PriorityLayer::header(HeaderName::from_static("x-priority"))
        .layer(handler(|_| priority::current()));
    let call = priority::with(Priority::Critical, || {
        service.call(request(&[("x-priority", "sheddable")]))
    });
    assert_eq!(
        priority::scope(Priority::Critical, call).await,
        Ok(Some(Priority::Critical))
    );
    assert_eq!(priority::current(), None);
}

#[tokio::test]
async fn the_client_sends_the_time_left_rounded_down() {
    let clock = ManualClock::new();
    let sent = |request: Request<()>| request.headers().get("grpc-timeout").cloned();
    let mut client = PropagateDeadlineLayer::new(Arc::new(clock.clone())).layer(handler(sent));
    let by = clock.now() + Duration::from_secs(1);
    clock.advance(Duration::from_nanos(250_000_123));
    let call = deadline::with(by, || client.call(request(&[])));
    assert_eq!(
        call.await.unwrap(),
        Some(HeaderValue::from_static("749999u"))
    );
    // No deadline: a header already there goes as it is, none is added.
    let call = client.call(request(&[("grpc-timeout", "10H")]));
    assert_eq!(call.await.unwrap(), Some(HeaderValue::from_static("10H")));
    assert_eq!(client.call(request(&[])).await.unwrap(), None);
}

#[tokio::test]
async fn the_client_never_raises_a_shorter_time_already_there() {
    let clock = ManualClock::new();
    let sent = |request: Request<()>| {
        request
            .headers()
            .get("x-envoy-expected-rq-timeout-ms")
            .cloned()
    };
    let mut client = PropagateDeadlineLayer::new(Arc::new(clock.clone()))
        .header(envoy())
        .layer(handler(sent));
    let by = clock.now() + Duration::from_secs(2);
    let shorter = request(&[("x-envoy-expected-rq-timeout-ms", "150")]);
    let call = deadline::with(by, || client.call(shorter));
    assert_eq!(call.await.unwrap(), Some(HeaderValue::from_static("150")));
    let longer = request(&[("x-envoy-expected-rq-timeout-ms", "90000")]);
    let call = deadline::with(by, || client.call(longer));
    assert_eq!(call.await.unwrap(), Some(HeaderValue::from_static("2000")));
}

#[tokio::test]
async fn a_request_with_no_time_left_is_refused_before_it_is_sent() {
    let clock = ManualClock::new();
    let inner = handler(|_| ());
    let calls = Arc::clone(&inner.calls);
    let mut client = PropagateDeadlineLayer::new(Arc::new(clock.clone())).layer(inner);
    let by = clock.now() + Duration::from_millis(5);
    clock.advance(Duration::from_millis(5));
    let refused = deadline::with(by, || client.call(request(&[])))
        .await
        .unwrap_err();
    let unavailable = refused.unavailable().unwrap();
    assert_eq!(
        unavailable.rejection().kind(),
        RejectionKind::DeadlineExceeded
    );
    assert_eq!(unavailable.rejection().instance(), PROPAGATE_DEADLINE);
    assert_eq!(calls.load(SeqCst), 0);
}

fn answer(status: u16, headers: &[(&'static str, &str)]) -> Response<&'static str> {
    let mut response = Response::new("body");
    *response.status_mut() = http::StatusCode::from_u16(status).unwrap();
    for &(name, value) in headers {
        response
            .headers_mut()
            .append(name, HeaderValue::from_str(value).unwrap());
    }
    response
}

async fn pushed(response: Response<&'static str>) -> Option<Duration> {
    let mut service = PushbackLayer::new().layer(handler(move |_| response.clone()));
    match service.call(request(&[])).await {
        Ok(response) => {
            assert_eq!(*response.body(), "body");
            None
        }
        Err(PushbackError::PushedBack(pushed)) => {
            let wait = pushed.retry_after();
            assert_eq!(*pushed.into_response().body(), "body");
            Some(wait)
        }
        Err(PushbackError::Inner(never)) => match never {},
    }
}

#[tokio::test]
async fn busy_answers_with_retry_after_are_pushed_back() {
    let secs = |s| Some(Duration::from_secs(s));
    assert_eq!(pushed(answer(503, &[("retry-after", "2")])).await, secs(2));
    assert_eq!(pushed(answer(429, &[("retry-after", "0")])).await, secs(0));
    // Other statuses, or no usable header: passed on unchanged.
    assert_eq!(pushed(answer(500, &[("retry-after", "2")])).await, None);
    assert_eq!(pushed(answer(200, &[("retry-after", "2")])).await, None);
    assert_eq!(pushed(answer(503, &[])).await, None);
    assert_eq!(pushed(answer(503, &[("retry-after", "soon")])).await, None);
    assert_eq!(pushed(answer(503, &[("retry-after", "-3")])).await, None);
}

#[tokio::test]
async fn an_http_date_counts_from_now_and_a_past_one_is_zero() {
    let later = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(3600));
    let wait = pushed(answer(503, &[("retry-after", &later)]))
        .await
        .unwrap();
    // The date has whole seconds: at most one second less, never more.
    assert!(
        wait <= Duration::from_secs(3600) && wait >= Duration::from_secs(3500),
        "{wait:?}"
    );
    let past = "Sun, 06 Nov 1994 08:49:37 GMT";
    assert_eq!(
        pushed(answer(429, &[("retry-after", past)])).await,
        Some(Duration::ZERO)
    );
}

#[tokio::test]
async fn grpc_pushback_is_read_from_any_answer_and_garbage_means_do_not_retry() {
    let header = "grpc-retry-pushback-ms";
    assert_eq!(
        pushed(answer(200, &[(header, "200")])).await,
        Some(Duration::from_millis(200))
    );
    assert_eq!(
        pushed(answer(503, &[(header, "0")])).await,
        Some(Duration::ZERO)
    );
    for garbage in ["-1", "1.5", "", "soon", "99999999999999999999999"] {
        let expected = if garbage.starts_with('9') {
            Duration::from_millis(u64::MAX)
        } else {
            Duration::MAX
        };
        assert_eq!(
            pushed(answer(200, &[(header, garbage)])).await,
            Some(expected),
            "{garbage:?}"
        );
    }
    // It wins over Retry-After.
    let both = answer(503, &[(header, "40"), ("retry-after", "9")]);
    assert_eq!(pushed(both).await, Some(Duration::from_millis(40)));
}

#[tokio::test]
async fn a_grpc_answer_that_succeeded_is_not_pushed_back() {
    // Pushback only qualifies a failed call (A6): an OK trailers-only
    // answer that carries it is still an answer.
    let header = "grpc-retry-pushback-ms";
    let ok = answer(200, &[("grpc-status", "0"), (header, "200")]);
    assert_eq!(pushed(ok).await, None);
    let unavailable = answer(200, &[("grpc-status", "14"), (header, "200")]);
    assert_eq!(pushed(unavailable).await, Some(Duration::from_millis(200)));
}

#[tokio::test]
async fn a_retry_without_a_cap_gives_up_when_told_not_to_retry() {
    // gRPC's negative pushback: "do not retry". A retry with no
    // `max_wait_interval` took Duration::MAX as a wait, and slept forever.
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let pipeline = Pipeline::builder(&registry, "upstream")
        .retry(|r| r.max_attempts(3).wait(Duration::ZERO))
        .pushback::<PushbackError<&'static str, Infallible>>()
        .build()
        .unwrap();
    let inner = handler(|_| answer(503, &[("grpc-retry-pushback-ms", "-1")]));
    let calls = Arc::clone(&inner.calls);
    let mut service = PipelineLayer::with_replay(pipeline, |_: &Request<()>| Request::new(()))
        .layer(PushbackLayer::new().layer(inner));
    std::future::poll_fn(|cx| service.poll_ready(cx))
        .await
        .unwrap();
    let mut call = std::pin::pin!(service.call(Request::new(())));
    let mut cx = Context::from_waker(std::task::Waker::noop());
    let answered = (0..100).find_map(|_| match call.as_mut().poll(&mut cx) {
        Poll::Ready(answered) => Some(answered),
        Poll::Pending => None,
    });
    let refused = answered.expect("given up at once, not asleep for ever");
    let Err(ServiceError::Inner(PushbackError::PushedBack(pushed))) = refused else {
        panic!("the answer that said not to retry: {refused:?}");
    };
    assert_eq!(pushed.retry_after(), Duration::MAX);
    assert_eq!(calls.load(SeqCst), 1, "not tried again");
}

#[test]
fn the_errors_tell_a_retry_how_long_to_wait() {
    use bulkhead_core::Pushback;

    let pushed = PushedBack::new(Duration::from_secs(2), Response::new(()));
    assert_eq!(Pushback::retry_after(&pushed), Some(Duration::from_secs(2)));
    let error = PushbackError::<(), &str>::PushedBack(pushed);
    assert_eq!(Pushback::retry_after(&error), Some(Duration::from_secs(2)));
    let error = PushbackError::<(), &str>::Inner("connection refused");
    assert_eq!(Pushback::retry_after(&error), None);
    assert_eq!(error.to_string(), "connection refused");
}

#[test]
fn bounds() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<DeadlineService<()>>();
    send_sync::<DeadlineFuture<Ready<()>>>();
    send_sync::<PriorityService<()>>();
    send_sync::<PriorityFuture<Ready<()>>>();
    send_sync::<PropagateDeadline<()>>();
    send_sync::<PropagateFuture<Ready<()>>>();
    send_sync::<PushbackService<()>>();
    send_sync::<PushbackFuture<Ready<()>>>();
    send_sync::<PushbackError<String, std::io::Error>>();
    // A body that is not `Sync` (tonic's) still makes a `Sync` error.
    send_sync::<PushedBack<std::cell::Cell<u8>>>();
}
