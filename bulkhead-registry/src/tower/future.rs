//! The response futures: [`ResponseFuture`] (a bulkhead: no allocation) and
//! [`PipelineFuture`] (a pipeline: one box).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bulkhead_core::OwnedBulkheadPermit;
use pin_project_lite::pin_project;

use super::error::{ServiceError, Unavailable};

pin_project! {
    /// The response future of a [`BulkheadService`](super::BulkheadService).
    ///
    /// Either the inner service's future, holding the request's slot until it
    /// completes (or is dropped), or a refusal that is ready at once. Neither
    /// allocates.
    #[must_use = "futures do nothing unless polled"]
    pub struct ResponseFuture<F> {
        #[pin]
        state: State<F>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F> {
        Admitted {
            #[pin]
            future: F,
            // `None` once the future has completed: the slot went back then.
            permit: Option<OwnedBulkheadPermit>,
        },
        Refused {
            unavailable: Unavailable,
        },
    }
}

impl<F> ResponseFuture<F> {
    pub(super) fn admitted(future: F, permit: OwnedBulkheadPermit) -> Self {
        ResponseFuture {
            state: State::Admitted {
                future,
                permit: Some(permit),
            },
        }
    }

    pub(super) fn refused(unavailable: Unavailable) -> Self {
        ResponseFuture {
            state: State::Refused { unavailable },
        }
    }
}

impl<F, T, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<T, E>>,
{
    type Output = Result<T, ServiceError<E>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Admitted { future, permit } => {
                let output = ready!(future.poll(cx));
                // The call is over: its slot goes back now, not when the
                // future is dropped.
                drop(permit.take());
                Poll::Ready(output.map_err(ServiceError::Inner))
            }
            StateProj::Refused { unavailable } => {
                Poll::Ready(Err(ServiceError::Unavailable(*unavailable)))
            }
        }
    }
}

impl<F> fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.state {
            State::Admitted { permit, .. } => f
                .debug_struct("ResponseFuture")
                .field("permit", permit)
                .finish_non_exhaustive(),
            State::Refused { unavailable } => f
                .debug_struct("ResponseFuture")
                .field("unavailable", unavailable)
                .finish(),
        }
    }
}

type BoxedCall<T, E> = Pin<Box<dyn Future<Output = Result<T, ServiceError<E>>> + Send>>;

/// The response future of a [`PipelineService`](super::PipelineService):
/// the pipeline's policies around one or more calls of the inner service.
///
/// The policies compose into one state machine written as an `async fn`,
/// whose type cannot be named on stable Rust: it is boxed, one allocation per
/// request.
#[must_use = "futures do nothing unless polled"]
pub struct PipelineFuture<T, E> {
    inner: BoxedCall<T, E>,
}

impl<T, E> PipelineFuture<T, E> {
    pub(super) fn new(
        future: impl Future<Output = Result<T, ServiceError<E>>> + Send + 'static,
    ) -> Self {
        PipelineFuture {
            inner: Box::pin(future),
        }
    }
}

impl<T, E> Future for PipelineFuture<T, E> {
    type Output = Result<T, ServiceError<E>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.inner.as_mut().poll(cx)
    }
}

impl<T, E> fmt::Debug for PipelineFuture<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PipelineFuture").finish_non_exhaustive()
    }
}
