//! [`DeadlineLayer`]: a server's requests run under the deadline their
//! caller sent.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bulkhead_core::{Clock, deadline};
use tower_layer::Layer;
use tower_service::Service;

use super::DeadlineHeader;

/// Runs each request that carries a deadline (gRPC's `grpc-timeout` unless
/// told another [`DeadlineHeader`]) under
/// [`deadline::scope`](bulkhead_core::deadline::scope): the inner
/// service's `call` and every poll of its response future, so that every
/// policy below and every call the handler makes sees the time left: a
/// [`PipelineLayer`](super::super::PipelineLayer) cuts its waits to it and
/// refuses with `Rejection::DeadlineExceeded` a request it cannot start in
/// time; a [`BulkheadLayer`](super::super::BulkheadLayer) cuts its wait for
/// a slot to it (its refusal stays `BulkheadFull`).
///
/// The deadline is `clock.now()` plus the time the header gives (no more
/// than [`max`](DeadlineLayer::max)), on the clock the policies measure
/// time on: the registry's. Of several values of the header, the shortest
/// holds. A request without the header, or with no value the header can
/// hold, runs with no deadline of its own (a deadline in force where it is
/// polled still holds).
///
/// # Examples
///
/// ```
/// use std::convert::Infallible;
/// use std::future::{Ready, ready};
/// use std::sync::Arc;
/// use std::task::{Context, Poll};
/// use std::time::Duration;
///
/// use bulkhead_core::{ManualClock, deadline};
/// use bulkhead_registry::tower::DeadlineLayer;
/// use tower_layer::Layer;
/// use tower_service::Service;
///
/// /// Answers with the time its request has left.
/// struct TimeLeft(ManualClock);
///
/// impl Service<http::Request<()>> for TimeLeft {
///     type Response = Option<Duration>;
///     type Error = Infallible;
///     type Future = Ready<Result<Option<Duration>, Infallible>>;
///
///     fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
///         Poll::Ready(Ok(()))
///     }
///     fn call(&mut self, _: http::Request<()>) -> Self::Future {
///         ready(Ok(deadline::remaining_on(&self.0)))
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let clock = ManualClock::new(); // the registry's
/// let mut service = DeadlineLayer::new(Arc::new(clock.clone()))
///     .max(Duration::from_secs(10))
///     .layer(TimeLeft(clock));
///
/// let asks = |timeout| http::Request::builder().header("grpc-timeout", timeout).body(()).unwrap();
/// assert_eq!(service.call(asks("300m")).await.unwrap(), Some(Duration::from_millis(300)));
/// assert_eq!(service.call(asks("2H")).await.unwrap(), Some(Duration::from_secs(10))); // capped
/// assert_eq!(service.call(asks("soon")).await.unwrap(), None); // ignored
/// assert_eq!(service.call(http::Request::new(())).await.unwrap(), None);
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct DeadlineLayer {
    clock: Arc<dyn Clock>,
    header: DeadlineHeader,
    max: Option<Duration>,
}

impl DeadlineLayer {
    /// A layer reading `grpc-timeout`, measuring on `clock` (the
    /// registry's: `registry.clock().clone()`), with no cap.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        DeadlineLayer {
            clock,
            header: DeadlineHeader::Grpc,
            max: None,
        }
    }

    /// Reads the deadline from `header` instead.
    #[must_use]
    pub fn header(mut self, header: DeadlineHeader) -> Self {
        self.header = header;
        self
    }

    /// Caps the time a caller may ask for: a longer one is cut to `max`.
    #[must_use]
    pub fn max(mut self, max: Duration) -> Self {
        self.max = Some(max);
        self
    }
}

impl<S> Layer<S> for DeadlineLayer {
    type Service = DeadlineService<S>;

    fn layer(&self, inner: S) -> DeadlineService<S> {
        DeadlineService {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service of a [`DeadlineLayer`].
#[derive(Debug, Clone)]
pub struct DeadlineService<S> {
    inner: S,
    layer: DeadlineLayer,
}

impl<S, B> Service<http::Request<B>> for DeadlineService<S>
where
    S: Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = DeadlineFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let layer = &self.layer;
        let by = layer.header.read(request.headers()).and_then(|left| {
            let left = layer.max.map_or(left, |max| left.min(max));
            layer.clock.now().checked_add(left)
        });
        let future = match by {
            Some(by) => deadline::with(by, || self.inner.call(request)),
            None => self.inner.call(request),
        };
        DeadlineFuture { by, future }
    }
}

pin_project_lite::pin_project! {
    /// The response future of a [`DeadlineService`]: the inner one, each
    /// poll under the request's deadline.
    #[must_use = "futures do nothing unless polled"]
    pub struct DeadlineFuture<F> {
        by: Option<Instant>,
        #[pin]
        future: F,
    }
}

impl<F: Future> Future for DeadlineFuture<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        match *this.by {
            Some(by) => deadline::with(by, || this.future.poll(cx)),
            None => this.future.poll(cx),
        }
    }
}

impl<F> fmt::Debug for DeadlineFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeadlineFuture")
            .field("by", &self.by)
            .finish_non_exhaustive()
    }
}
