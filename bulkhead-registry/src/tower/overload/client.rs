//! [`PropagateDeadlineLayer`]: a client's requests carry the time their
//! caller has left.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bulkhead_core::{Clock, DeadlineExceeded, deadline};
use tower_layer::Layer;
use tower_service::Service;

use super::super::{ServiceError, Unavailable};
use super::DeadlineHeader;

/// The instance a request refused by a [`PropagateDeadlineLayer`] names in
/// its [`DeadlineExceeded`].
pub const PROPAGATE_DEADLINE: &str = "propagate_deadline";

/// Writes the time left before the deadline in force
/// ([`deadline::remaining_on`](bulkhead_core::deadline::remaining_on) its
/// clock) into each outgoing request: `grpc-timeout` unless told another
/// [`DeadlineHeader`], rounded down (a millisecond header says at least
/// `1`: `0` reads as "no timeout" to some proxies), never raising a shorter
/// time the request already carries.
///
/// The time left is read in `call`, so call under the deadline: inside
/// the handler below a [`DeadlineLayer`](super::DeadlineLayer), or inside
/// a [`deadline::scope`](bulkhead_core::deadline::scope)'s future (not as
/// the argument of one: that call runs before the scope). Without a
/// deadline in force the request goes as it is. With no time left it is
/// not sent: the response future is ready at once with
/// [`ServiceError::Unavailable`], whose rejection is
/// `Rejection::DeadlineExceeded` (instance [`PROPAGATE_DEADLINE`]), so
/// that the caller answers as for any deadline its policies found passed
/// (gRPC's `DEADLINE_EXCEEDED`, HTTP 504).
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
/// use bulkhead_core::{Clock, ManualClock, RejectionKind, deadline};
/// use bulkhead_registry::tower::PropagateDeadlineLayer;
/// use http::HeaderValue;
/// use tower_layer::Layer;
/// use tower_service::Service;
///
/// /// Answers with the `grpc-timeout` its request carries.
/// struct Sent;
///
/// impl Service<http::Request<()>> for Sent {
///     type Response = Option<HeaderValue>;
///     type Error = Infallible;
///     type Future = Ready<Result<Option<HeaderValue>, Infallible>>;
///
///     fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
///         Poll::Ready(Ok(()))
///     }
///     fn call(&mut self, request: http::Request<()>) -> Self::Future {
///         ready(Ok(request.headers().get("grpc-timeout").cloned()))
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let clock = ManualClock::new(); // the registry's
/// let mut client = PropagateDeadlineLayer::new(Arc::new(clock.clone())).layer(Sent);
/// let by = clock.now() + Duration::from_secs(2);
///
/// // A handler running under a deadline (one a `DeadlineLayer` set) calls out:
/// let sent = deadline::scope(by, async { client.call(http::Request::new(())).await }).await;
/// assert_eq!(sent.unwrap().unwrap(), "2000000u");
///
/// clock.advance(Duration::from_secs(2)); // no time left: not sent
/// let refused = deadline::scope(by, async { client.call(http::Request::new(())).await });
/// let refused = refused.await.unwrap_err();
/// assert_eq!(refused.unavailable().unwrap().rejection().kind(), RejectionKind::DeadlineExceeded);
///
/// // No deadline: the request goes as it is.
/// assert_eq!(client.call(http::Request::new(())).await.unwrap(), None);
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct PropagateDeadlineLayer {
    clock: Arc<dyn Clock>,
    header: DeadlineHeader,
}

impl PropagateDeadlineLayer {
    /// A layer writing `grpc-timeout`, measuring on `clock` (the one the
    /// deadline was set on: the registry's, `registry.clock().clone()`).
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        PropagateDeadlineLayer {
            clock,
            header: DeadlineHeader::Grpc,
        }
    }

    /// Writes `header` instead.
    #[must_use]
    pub fn header(mut self, header: DeadlineHeader) -> Self {
        self.header = header;
        self
    }
}

impl<S> Layer<S> for PropagateDeadlineLayer {
    type Service = PropagateDeadline<S>;

    fn layer(&self, inner: S) -> PropagateDeadline<S> {
        PropagateDeadline {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service of a [`PropagateDeadlineLayer`].
#[derive(Debug, Clone)]
pub struct PropagateDeadline<S> {
    inner: S,
    layer: PropagateDeadlineLayer,
}

impl<S, B> Service<http::Request<B>> for PropagateDeadline<S>
where
    S: Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = ServiceError<S::Error>;
    type Future = PropagateFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(ServiceError::Inner)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        let left = deadline::remaining_on(&*self.layer.clock);
        if let Some(left) = left {
            if left.is_zero() {
                return PropagateFuture::refused();
            }
            self.layer.header.write(request.headers_mut(), left);
        }
        PropagateFuture {
            future: Some(self.inner.call(request)),
        }
    }
}

pin_project_lite::pin_project! {
    /// The response future of a [`PropagateDeadline`]: the inner one, or
    /// the refusal of a request with no time left.
    #[must_use = "futures do nothing unless polled"]
    pub struct PropagateFuture<F> {
        #[pin]
        future: Option<F>,
    }
}

impl<F> PropagateFuture<F> {
    #[cold]
    #[inline(never)]
    fn refused() -> Self {
        PropagateFuture { future: None }
    }
}

impl<F, T, E> Future for PropagateFuture<F>
where
    F: Future<Output = Result<T, E>>,
{
    type Output = Result<T, ServiceError<E>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().future.as_pin_mut() {
            Some(future) => future.poll(cx).map_err(ServiceError::Inner),
            None => Poll::Ready(Err(ServiceError::Unavailable(Unavailable::new(
                DeadlineExceeded::new(PROPAGATE_DEADLINE).into(),
                Duration::ZERO,
            )))),
        }
    }
}

impl<F> fmt::Debug for PropagateFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PropagateFuture")
            .field("refused", &self.future.is_none())
            .finish_non_exhaustive()
    }
}
