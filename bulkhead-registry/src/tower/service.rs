//! The services: [`BulkheadService`] and [`PipelineService`].

use std::fmt;
use std::task::{Context, Poll};
use std::time::Duration;

use bulkhead_core::{Bulkhead, CallError};
use tower_service::Service;

use super::error::{ServiceError, Unavailable};
use super::future::{PipelineFuture, ResponseFuture};
use super::replay::{Attempts, Replay};
use crate::pipeline::Pipeline;

/// A service whose calls each hold a slot of a bulkhead; made by a
/// [`BulkheadLayer`](super::BulkheadLayer).
///
/// `poll_ready` is the inner service's. `call` takes a free slot, or refuses
/// the request at once (the inner service is not called); the response
/// future holds the slot until it completes or is dropped.
#[derive(Clone)]
pub struct BulkheadService<S> {
    inner: S,
    bulkhead: Bulkhead,
    retry_after: Duration,
}

impl<S> BulkheadService<S> {
    /// `inner` behind `bulkhead`, with `retry_after` as the refusals' hint.
    pub fn new(inner: S, bulkhead: Bulkhead, retry_after: Duration) -> Self {
        BulkheadService {
            inner,
            bulkhead,
            retry_after,
        }
    }

    /// The bulkhead.
    pub fn bulkhead(&self) -> &Bulkhead {
        &self.bulkhead
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service, unwrapped.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, Req> Service<Req> for BulkheadService<S>
where
    S: Service<Req>,
{
    type Response = S::Response;
    type Error = ServiceError<S::Error>;
    type Future = ResponseFuture<S::Future>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(ServiceError::Inner)
    }

    #[inline]
    fn call(&mut self, request: Req) -> Self::Future {
        match self.bulkhead.try_enter_owned() {
            Ok(permit) => ResponseFuture::admitted(self.inner.call(request), permit),
            Err(full) => ResponseFuture::refused(Unavailable::new(full.into(), self.retry_after)),
        }
    }
}

impl<S: fmt::Debug> fmt::Debug for BulkheadService<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BulkheadService")
            .field("inner", &self.inner)
            .field("bulkhead", &self.bulkhead.instance())
            .field("retry_after", &self.retry_after)
            .finish()
    }
}

/// A service whose calls each run under a pipeline's policies; made by a
/// [`PipelineLayer`](super::PipelineLayer).
///
/// `poll_ready` is the inner service's. `call` returns at once; the future
/// runs the policies and calls the inner service (the instance that was
/// polled ready) once it holds a slot. A later attempt, if the pipeline
/// retries, calls a clone of it made at the start, after its own
/// `poll_ready`.
#[derive(Clone)]
pub struct PipelineService<S, R> {
    inner: S,
    pipeline: Pipeline,
    replay: R,
    retry_after: Duration,
}

impl<S, R> PipelineService<S, R> {
    pub(super) fn new(inner: S, pipeline: Pipeline, replay: R, retry_after: Duration) -> Self {
        PipelineService {
            inner,
            pipeline,
            replay,
            retry_after,
        }
    }

    /// The pipeline.
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, unwrapped.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, R, Req> Service<Req> for PipelineService<S, R>
where
    S: Service<Req> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Send + 'static,
    S::Error: Send + 'static,
    R: Replay<Req> + Clone + Send + 'static,
    Req: Send + 'static,
{
    type Response = S::Response;
    type Error = ServiceError<S::Error>;
    type Future = PipelineFuture<S::Response, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(ServiceError::Inner)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        // The instance polled ready serves the first attempt; `self` keeps a
        // clone, to be polled ready before the next request.
        let fresh = self.inner.clone();
        let ready = std::mem::replace(&mut self.inner, fresh);
        let retries = self
            .pipeline
            .policies()
            .retry()
            .is_some_and(|retry| retry.config().max_attempts() > 1);
        let spare = retries.then(|| ready.clone());
        let mut attempts = Attempts::new(ready, spare, request, self.replay.clone());
        let pipeline = self.pipeline.clone();
        let retry_after = self.retry_after;
        PipelineFuture::new(async move {
            pipeline
                .execute_async(|| attempts.next())
                .await
                .map_err(|error| match error {
                    CallError::Rejected(rejection) => {
                        ServiceError::Unavailable(Unavailable::new(rejection, retry_after))
                    }
                    CallError::Inner(error) => ServiceError::Inner(error),
                })
        })
    }
}

impl<S: fmt::Debug, R: fmt::Debug> fmt::Debug for PipelineService<S, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PipelineService")
            .field("inner", &self.inner)
            .field("pipeline", &self.pipeline.id())
            .field("replay", &self.replay)
            .field("retry_after", &self.retry_after)
            .finish()
    }
}
