//! [`PushbackLayer`]: a response that asks the client to come back later
//! becomes an error that says when.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use http::{HeaderName, StatusCode, header::RETRY_AFTER};
use tower_layer::Layer;
use tower_service::Service;

use super::{PushbackError, PushedBack, digits};

/// gRPC's pushback header (gRPC retry design, A6).
const GRPC_RETRY_PUSHBACK_MS: HeaderName = HeaderName::from_static("grpc-retry-pushback-ms");
/// gRPC's status header: a trailers-only answer carries it with the
/// headers.
const GRPC_STATUS: HeaderName = HeaderName::from_static("grpc-status");

/// Turns a response that asks the client to wait into
/// [`PushbackError::PushedBack`]: a `429 Too Many Requests` or a `503
/// Service Unavailable` with a `Retry-After` header (delta-seconds, or an
/// HTTP-date, measured from the system time: a date past is zero), or any
/// response whose headers carry `grpc-retry-pushback-ms` (a gRPC
/// trailers-only response carries it there; it is read first when both
/// are) unless they say the call succeeded (`grpc-status: 0`: pushback
/// qualifies a failure only). A `grpc-retry-pushback-ms` that is not a
/// non-negative integer means "do not retry": the wait is
/// [`Duration::MAX`], on which a retry gives up. Only headers are read: a
/// pushback sent in trailers after a body is not seen.
///
/// The wait is for a retry above it: [`PushbackError`] implements
/// [`Pushback`](bulkhead_core::Pushback), so a
/// [`PipelineLayer`](super::super::PipelineLayer) whose pipeline was built
/// with [`pushback::<PushbackError<B, E>>()`](crate::pipeline::PipelineBuilder::pushback)
/// waits at least that long before its next attempt (and gives up when it
/// is longer than the retry's `max_wait_interval`). Without a retry, the
/// caller only sees such a response as an error that holds it
/// ([`PushedBack::into_response`]). Other responses pass unchanged.
///
/// # Examples
///
/// ```
/// use std::convert::Infallible;
/// use std::future::{Ready, ready};
/// use std::task::{Context, Poll};
/// use std::time::Duration;
///
/// use bulkhead_registry::tower::{PushbackError, PushbackLayer};
/// use tower_layer::Layer;
/// use tower_service::Service;
///
/// /// Answers 503, asking to come back in two seconds.
/// struct Busy;
///
/// impl Service<()> for Busy {
///     type Response = http::Response<&'static str>;
///     type Error = Infallible;
///     type Future = Ready<Result<Self::Response, Infallible>>;
///
///     fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
///         Poll::Ready(Ok(()))
///     }
///     fn call(&mut self, _: ()) -> Self::Future {
///         ready(Ok(http::Response::builder().status(503).header("retry-after", "2").body("busy").unwrap()))
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let Err(PushbackError::PushedBack(pushed)) = PushbackLayer::new().layer(Busy).call(()).await else {
///     panic!("a 503 with Retry-After is pushed back");
/// };
/// assert_eq!(pushed.retry_after(), Duration::from_secs(2));
/// assert_eq!(*pushed.into_response().body(), "busy");
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct PushbackLayer {
    _private: (),
}

impl PushbackLayer {
    /// The layer.
    pub fn new() -> Self {
        PushbackLayer::default()
    }
}

impl<S> Layer<S> for PushbackLayer {
    type Service = PushbackService<S>;

    fn layer(&self, inner: S) -> PushbackService<S> {
        PushbackService { inner }
    }
}

/// The service of a [`PushbackLayer`].
#[derive(Debug, Clone)]
pub struct PushbackService<S> {
    inner: S,
}

impl<S, R, B> Service<R> for PushbackService<S>
where
    S: Service<R, Response = http::Response<B>>,
{
    type Response = http::Response<B>;
    type Error = PushbackError<B, S::Error>;
    type Future = PushbackFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(PushbackError::Inner)
    }

    fn call(&mut self, request: R) -> Self::Future {
        PushbackFuture {
            future: self.inner.call(request),
        }
    }
}

pin_project_lite::pin_project! {
    /// The response future of a [`PushbackService`].
    #[must_use = "futures do nothing unless polled"]
    pub struct PushbackFuture<F> {
        #[pin]
        future: F,
    }
}

impl<F, B, E> Future for PushbackFuture<F>
where
    F: Future<Output = Result<http::Response<B>, E>>,
{
    type Output = Result<http::Response<B>, PushbackError<B, E>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let response = match self.project().future.poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(Err(error)) => return Poll::Ready(Err(PushbackError::Inner(error))),
            Poll::Ready(Ok(response)) => response,
        };
        Poll::Ready(match asked_wait(&response) {
            Some(retry_after) => Err(PushbackError::PushedBack(PushedBack::new(
                retry_after,
                response,
            ))),
            None => Ok(response),
        })
    }
}

impl<F> fmt::Debug for PushbackFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PushbackFuture").finish_non_exhaustive()
    }
}

/// How long `response` asks the client to wait, if it does.
fn asked_wait<B>(response: &http::Response<B>) -> Option<Duration> {
    let headers = response.headers();
    let succeeded = headers.get(GRPC_STATUS).is_some_and(|status| status == "0");
    if let Some(value) = headers.get(GRPC_RETRY_PUSHBACK_MS).filter(|_| !succeeded) {
        // Anything but a non-negative integer: "do not retry" (A6).
        return Some(digits(value.as_bytes()).map_or(Duration::MAX, Duration::from_millis));
    }
    let status = response.status();
    if status != StatusCode::TOO_MANY_REQUESTS && status != StatusCode::SERVICE_UNAVAILABLE {
        return None;
    }
    let value = headers.get(RETRY_AFTER)?;
    if let Some(secs) = digits(value.as_bytes()) {
        return Some(Duration::from_secs(secs));
    }
    let date = httpdate::parse_http_date(value.to_str().ok()?).ok()?;
    Some(
        date.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}
