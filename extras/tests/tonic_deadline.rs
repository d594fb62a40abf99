//! Our overload layers between tonic clients and servers over loopback: a
//! tonic client's deadline reaches a handler below our `DeadlineLayer`, our
//! `PropagateDeadlineLayer` passes the time left on to the next server and
//! refuses a call with none left, and a request that cannot get a slot
//! before its deadline is answered `DEADLINE_EXCEEDED`.
//!
//! One unary method written by hand (no protoc, no build script): a prost
//! message each way, a `tower::Service` server calling
//! `tonic::server::Grpc::unary`, a client calling `tonic::client::Grpc::unary`.
//! Timings have wide margins (the deadlines are 10x what loopback needs);
//! no assertion measures how long anything took beyond "well before".

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bulkhead::retry::Pushback;
use bulkhead::tower::{
    DeadlineLayer, PipelineLayer, PropagateDeadlineLayer, PushbackError, PushbackLayer,
    PushbackService, ServiceError, Unavailable, grpc_timeout,
};
use bulkhead::{ManualClock, Pipeline, Registry, RejectionKind, deadline};
use tokio::net::TcpListener;
use tonic::body::Body;
use tonic::client::{Grpc, GrpcService};
use tonic::codegen::http::{self, uri::PathAndQuery};
use tonic::codegen::{Bytes, StdError};
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Channel, Server};
use tonic::{Code, Request, Response, Status};
use tonic_prost::ProstCodec;
use tower::ServiceBuilder;
use tower::layer::util::Identity;
use tower::{Layer, Service};

/// The request.
#[derive(Clone, PartialEq, prost::Message)]
struct Ping {
    /// What the handler is asked to do (each test's handler says).
    #[prost(uint64, tag = "1")]
    n: u64,
}

/// What a handler saw.
#[derive(Clone, PartialEq, prost::Message)]
struct Report {
    /// The time its deadline left it, in microseconds, if it had one.
    #[prost(uint64, optional, tag = "1")]
    left_micros: Option<u64>,
    /// The `grpc-timeout` header it received ("" without one).
    #[prost(string, tag = "2")]
    grpc_timeout: String,
    /// For a handler that calls another: how long it spent from reading
    /// `left_micros` to the answer.
    #[prost(uint64, tag = "3")]
    spent_micros: u64,
    /// And what the other one saw.
    #[prost(message, optional, tag = "4")]
    downstream: Option<Seen>,
}

/// What a downstream handler saw (`Report`'s first two fields).
#[derive(Clone, PartialEq, prost::Message)]
struct Seen {
    #[prost(uint64, optional, tag = "1")]
    left_micros: Option<u64>,
    #[prost(string, tag = "2")]
    grpc_timeout: String,
}

const PATH: &str = "/test.Node/Ping";

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
type Handler = Arc<dyn Fn(Request<Ping>) -> BoxFuture<Result<Report, Status>> + Send + Sync>;

/// A gRPC server of one unary method, answering with `handler`, counting
/// the requests that reached it.
#[derive(Clone)]
struct Node {
    handler: Handler,
    calls: Arc<AtomicUsize>,
}

impl Node {
    fn new<F, Fut>(handler: F) -> Node
    where
        F: Fn(Request<Ping>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Report, Status>> + Send + 'static,
    {
        Node {
            handler: Arc::new(move |request| Box::pin(handler(request))),
            calls: Arc::default(),
        }
    }
}

impl tower::Service<http::Request<Body>> for Node {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<http::Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let unary = Unary(self.handler.clone(), self.calls.clone());
        Box::pin(async move {
            let mut grpc = tonic::server::Grpc::new(ProstCodec::<Report, Ping>::default());
            Ok(grpc.unary(unary, request).await)
        })
    }
}

struct Unary(Handler, Arc<AtomicUsize>);

impl tonic::server::UnaryService<Ping> for Unary {
    type Response = Report;
    type Future = BoxFuture<Result<Response<Report>, Status>>;

    fn call(&mut self, request: Request<Ping>) -> Self::Future {
        self.1.fetch_add(1, SeqCst);
        let answer = (self.0)(request);
        Box::pin(async move { answer.await.map(Response::new) })
    }
}

/// Serves `node` behind `layer` on a loopback port of its own.
async fn serve<L>(layer: L, node: Node) -> String
where
    L: Layer<Node> + Clone + Send + 'static,
    L::Service: tower::Service<http::Request<Body>, Response = http::Response<Body>>
        + Clone
        + Send
        + 'static,
    <L::Service as tower::Service<http::Request<Body>>>::Future: Send,
    <L::Service as tower::Service<http::Request<Body>>>::Error: Into<StdError> + Send,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let server = Server::builder()
        .layer(layer)
        .serve_with_incoming(node, TcpIncoming::from(listener));
    tokio::spawn(server);
    address
}

/// A client of the server at `address`, over `layer`.
fn client<L: Layer<Channel>>(address: &str, layer: L) -> Grpc<L::Service> {
    let channel = Channel::from_shared(address.to_owned())
        .unwrap()
        .connect_lazy();
    Grpc::new(layer.layer(channel))
}

/// Calls the method.
async fn ping<T>(client: &mut Grpc<T>, request: Request<Ping>) -> Result<Report, Status>
where
    T: GrpcService<Body>,
    T::Error: Into<StdError>,
    T::ResponseBody: tonic::codegen::Body<Data = Bytes> + Send + 'static,
    <T::ResponseBody as tonic::codegen::Body>::Error: Into<StdError>,
{
    client
        .ready()
        .await
        .map_err(|error| Status::from_error(error.into()))?;
    let codec = ProstCodec::<Ping, Report>::default();
    let path = PathAndQuery::from_static(PATH);
    client
        .unary(request, path, codec)
        .await
        .map(Response::into_inner)
}

fn with_timeout(n: u64, timeout: Duration) -> Request<Ping> {
    let mut request = Request::new(Ping { n });
    request.set_timeout(timeout);
    request
}

/// What a handler sees: the time left (system clock) and the header.
fn seen(request: &Request<Ping>) -> Seen {
    Seen {
        left_micros: deadline::remaining().map(|left| left.as_micros() as u64),
        grpc_timeout: request
            .metadata()
            .get("grpc-timeout")
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned(),
    }
}

/// A handler answering with what it sees.
fn reporter() -> Node {
    Node::new(|request| {
        let seen = seen(&request);
        async move {
            Ok(Report {
                left_micros: seen.left_micros,
                grpc_timeout: seen.grpc_timeout,
                ..Report::default()
            })
        }
    })
}

/// The time a `grpc-timeout` text gives.
fn parsed(text: &str) -> Duration {
    grpc_timeout::parse(&http::HeaderValue::from_str(text).unwrap())
        .unwrap_or_else(|| panic!("{text:?} is not a grpc-timeout"))
}

#[tokio::test]
async fn a_client_deadline_reaches_our_server_layer() {
    let registry = Registry::new();
    let address = serve(DeadlineLayer::new(registry.clock().clone()), reporter()).await;
    let mut client = client(&address, Identity::new());

    let report = ping(&mut client, with_timeout(1, Duration::from_millis(300)))
        .await
        .unwrap();
    let sent = parsed(&report.grpc_timeout);
    assert!(sent <= Duration::from_millis(300), "{sent:?}");
    let left = Duration::from_micros(report.left_micros.expect("a deadline"));
    assert!(
        left > Duration::ZERO && left <= sent,
        "{left:?} of {sent:?}"
    );

    // Without a timeout the handler runs with no deadline.
    let report = ping(&mut client, Request::new(Ping { n: 2 }))
        .await
        .unwrap();
    assert_eq!(
        (report.left_micros, report.grpc_timeout.as_str()),
        (None, "")
    );
}

#[tokio::test]
async fn our_client_layer_passes_the_remaining_time_on() {
    let registry = Registry::new();
    let b = serve(DeadlineLayer::new(registry.clock().clone()), reporter()).await;
    let to_b = client(&b, PropagateDeadlineLayer::new(registry.clock().clone()));
    let a = Node::new(move |request: Request<Ping>| {
        let mut to_b = to_b.clone();
        async move {
            let start = Instant::now();
            let left = deadline::remaining();
            // n = 2: the outgoing request asks for less than is left.
            let outgoing = match request.get_ref().n {
                2 => with_timeout(0, Duration::from_millis(50)),
                _ => Request::new(Ping { n: 0 }),
            };
            let downstream = ping(&mut to_b, outgoing).await?;
            Ok(Report {
                left_micros: left.map(|left| left.as_micros() as u64),
                spent_micros: start.elapsed().as_micros() as u64,
                downstream: Some(Seen {
                    left_micros: downstream.left_micros,
                    grpc_timeout: downstream.grpc_timeout,
                }),
                ..Report::default()
            })
        }
    });
    let a = serve(DeadlineLayer::new(registry.clock().clone()), a).await;
    let mut client = client(&a, Identity::new());

    let report = ping(&mut client, with_timeout(1, Duration::from_secs(3)))
        .await
        .unwrap();
    let a_left = Duration::from_micros(report.left_micros.expect("A has a deadline"));
    let spent = Duration::from_micros(report.spent_micros);
    let b_seen = report.downstream.unwrap();
    let sent = parsed(&b_seen.grpc_timeout);
    // Below what A had, above what A had less the time A spent.
    assert!(sent <= a_left, "B was sent {sent:?}, A had {a_left:?}");
    assert!(
        sent + spent >= a_left,
        "B was sent {sent:?}, A had {a_left:?} and spent {spent:?}"
    );
    let b_left = Duration::from_micros(b_seen.left_micros.expect("B has a deadline"));
    assert!(
        b_left > Duration::ZERO && b_left <= sent,
        "{b_left:?} of {sent:?}"
    );

    // A shorter timeout already on the outgoing request is kept.
    let report = ping(&mut client, with_timeout(2, Duration::from_secs(3)))
        .await
        .unwrap();
    let sent = parsed(&report.downstream.unwrap().grpc_timeout);
    assert!(sent <= Duration::from_millis(50), "{sent:?}");
}

/// Answers a refusal as gRPC does: `DEADLINE_EXCEEDED` for a deadline,
/// `UNAVAILABLE` for any other.
fn status_of(refused: &Unavailable) -> Status {
    match refused.rejection().kind() {
        RejectionKind::DeadlineExceeded => Status::deadline_exceeded(refused.to_string()),
        _ => Status::unavailable(refused.to_string()),
    }
}

/// (The error type stays the pipeline's: tower's `MapResult` converts
/// `poll_ready`'s error into it. It never holds an error here.)
fn answer(
    result: Result<http::Response<Body>, ServiceError<Infallible>>,
) -> Result<http::Response<Body>, ServiceError<Infallible>> {
    match result {
        Ok(response) => Ok(response),
        Err(ServiceError::Unavailable(refused)) => Ok(status_of(&refused).into_http()),
        Err(ServiceError::Inner(never)) => match never {},
    }
}

#[tokio::test]

async fn a_request_that_cannot_start_in_time_is_refused_with_deadline_exceeded() {
    let registry = Registry::new();
    let pipeline = Pipeline::builder(&registry, "b")
        .bulkhead(|b| b.max_concurrent(1).max_wait(Duration::from_secs(1)))
        .build()
        .unwrap();
    let node = reporter();
    let calls = node.calls.clone();
    // B gives a request no more than 100 ms, whatever its client asks.
    let stack = ServiceBuilder::new()
        .layer(DeadlineLayer::new(registry.clock().clone()).max(Duration::from_millis(100)))
        .map_result(answer)
        .layer(PipelineLayer::new(pipeline).unwrap());
    let b = serve(stack, node).await;
    let mut client = client(&b, Identity::new());

    let handle = registry.bulkhead("b").unwrap();
    let held = handle.bulkhead().try_enter().unwrap();
    let start = Instant::now();
    let refused = ping(&mut client, with_timeout(1, Duration::from_secs(5)))
        .await
        .unwrap_err();
    let waited = start.elapsed();
    assert_eq!(refused.code(), Code::DeadlineExceeded, "{refused:?}");
    assert!(
        waited < Duration::from_secs(1),
        "refused after {waited:?}, max_wait is 1 s"
    );
    assert_eq!(calls.load(SeqCst), 0, "B's handler never ran");
    drop(held);
}

#[tokio::test]
async fn our_client_layer_refuses_a_call_with_no_time_left() {
    let registry = Registry::new();
    let b_node = reporter();
    let b_calls = b_node.calls.clone();
    let b = serve(DeadlineLayer::new(registry.clock().clone()), b_node).await;
    let to_b = client(&b, PropagateDeadlineLayer::new(registry.clock().clone()));
    // A takes longer than its deadline, then calls B.
    let a = Node::new(move |_| {
        let mut to_b = to_b.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            match ping(&mut to_b, Request::new(Ping { n: 0 })).await {
                Err(status) => {
                    let mapped = Unavailable::find(&status).map(status_of);
                    Err(mapped.unwrap_or(status))
                }
                Ok(_) => Err(Status::internal("B was called with no time left")),
            }
        }
    });
    // A gives a request no more than 20 ms, whatever its client asks.
    let a_layer = DeadlineLayer::new(registry.clock().clone()).max(Duration::from_millis(20));
    let a = serve(a_layer, a).await;
    let mut client = client(&a, Identity::new());

    let refused = ping(&mut client, with_timeout(1, Duration::from_secs(5)))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::DeadlineExceeded, "{refused:?}");
    assert_eq!(b_calls.load(SeqCst), 0, "B was never called");
}

#[tokio::test]
async fn grpc_retry_pushback_ms_in_a_trailers_only_answer_is_pushed_back() {
    let registry = Registry::new();
    let busy = Node::new(|request: Request<Ping>| async move {
        let mut status = Status::unavailable("busy");
        let pushback = match request.get_ref().n {
            1 => "200",
            _ => "-1", // do not retry
        };
        status
            .metadata_mut()
            .insert("grpc-retry-pushback-ms", pushback.parse().unwrap());
        Err(status)
    });
    let b = serve(DeadlineLayer::new(registry.clock().clone()), busy).await;
    let mut client = client(&b, PushbackLayer::new());

    // tonic keeps the layer's error as the source of an `UNKNOWN` status.
    let pushed_back = |status: &Status| {
        let error = std::error::Error::source(status)?;
        let error = error.downcast_ref::<PushbackError<Body, tonic::transport::Error>>()?;
        if let PushbackError::PushedBack(pushed) = error {
            assert_eq!(
                pushed.headers()["grpc-status"],
                "14",
                "UNAVAILABLE, trailers-only"
            );
        }
        error.retry_after()
    };
    let refused = ping(&mut client, Request::new(Ping { n: 1 }))
        .await
        .unwrap_err();
    assert_eq!(
        pushed_back(&refused),
        Some(Duration::from_millis(200)),
        "{refused:?}"
    );
    let refused = ping(&mut client, Request::new(Ping { n: 2 }))
        .await
        .unwrap_err();
    assert_eq!(pushed_back(&refused), Some(Duration::MAX), "{refused:?}");
}

/// B refused the call; `retry_after` is what its answer asked, read by
/// the `PushbackLayer` under the tonic client.
#[derive(Debug)]
struct Refused {
    retry_after: Option<Duration>,
    #[allow(dead_code)] // read by Debug, when a test fails
    status: Status,
}

impl Pushback for Refused {
    fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }
}

/// The call to B as a service of its own, for a pipeline that retries it
/// (a `Ping` can be sent again; an HTTP body cannot).
#[derive(Clone)]
struct PingB(Grpc<PushbackService<Channel>>);

impl tower::Service<Ping> for PingB {
    type Response = Report;
    type Error = Refused;
    type Future = BoxFuture<Result<Report, Refused>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Refused>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Ping) -> Self::Future {
        let mut grpc = self.0.clone();
        Box::pin(async move {
            ping(&mut grpc, Request::new(request))
                .await
                .map_err(|status| {
                    // tonic keeps the layer's error as the status's source.
                    let pushed = std::error::Error::source(&status).and_then(|error| {
                        error.downcast_ref::<PushbackError<Body, tonic::transport::Error>>()
                    });
                    Refused {
                        retry_after: pushed.and_then(Pushback::retry_after),
                        status,
                    }
                })
        })
    }
}

#[tokio::test]
async fn grpc_retry_pushback_ms_makes_our_retry_wait() {
    // B refuses its first call, asking for 200 ms, and answers the next.
    let first = Arc::new(AtomicUsize::new(0));
    let b = Node::new(move |_| {
        let nth = first.fetch_add(1, SeqCst);
        async move {
            if nth > 0 {
                return Ok(Report::default());
            }
            let mut status = Status::unavailable("busy");
            let wait = "200".parse().unwrap();
            status.metadata_mut().insert("grpc-retry-pushback-ms", wait);
            Err(status)
        }
    });
    let b_seen = b.calls.clone();
    let registry = Registry::new();
    let b = serve(DeadlineLayer::new(registry.clock().clone()), b).await;

    // A's retry runs on a manual clock: the test says when time passes.
    let clock = ManualClock::new();
    let a_registry = Registry::builder().clock(clock.clone()).build();
    let pipeline = Pipeline::builder(&a_registry, "to_b")
        .retry(|r| r.max_attempts(2).wait(Duration::ZERO))
        .pushback::<Refused>()
        .build()
        .unwrap();
    let mut to_b = PipelineLayer::with_replay(pipeline, Ping::clone)
        .layer(PingB(client(&b, PushbackLayer::new())));
    let call = tokio::spawn(to_b.call(Ping { n: 1 }));

    // The first attempt was refused and the retry sleeps on the clock.
    while clock.sleepers() == 0 {
        assert!(!call.is_finished(), "{:?}", call.await);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(b_seen.load(SeqCst), 1);
    clock.advance(Duration::from_millis(199));
    assert_eq!(
        clock.sleepers(),
        1,
        "the retry waits the 200 ms B asked for"
    );
    assert_eq!(b_seen.load(SeqCst), 1);
    clock.advance(Duration::from_millis(1));
    assert!(call.await.unwrap().is_ok());
    assert_eq!(b_seen.load(SeqCst), 2);
}
