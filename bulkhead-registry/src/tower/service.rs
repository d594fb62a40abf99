//! The services: [`BulkheadService`] and [`PipelineService`].

use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bulkhead_core::{Bulkhead, CallError, InstanceTelemetry};
use tower_service::Service;

use super::error::{ServiceError, Unavailable};
use super::future::{PipelineFuture, ResponseFuture, Timing};
use super::replay::{Attempts, Replay};
use super::retry_after;
use super::wait::{self, Entry};
use crate::pipeline::Pipeline;

/// A service whose calls each hold a slot of a bulkhead; made by a
/// [`BulkheadLayer`](super::BulkheadLayer).
///
/// `poll_ready` is the inner service's. `call` takes a free slot and calls
/// the inner service. With none free, a bulkhead with `max_wait` zero refuses
/// the request at once; one with a `max_wait` queues it, and the response
/// future calls the inner service once the slot is there, or is refused when
/// `max_wait` has passed. The response future holds the slot until it
/// completes or is dropped.
///
/// A request that waits is answered by the instance of the inner service
/// that was polled ready for it; the service keeps a clone for the next
/// request (hence `S: Clone`).
#[derive(Clone)]
pub struct BulkheadService<S> {
    inner: S,
    bulkhead: Bulkhead,
    retry_after: Duration,
    /// Whether the bulkhead's `max_wait` is above zero: a request that finds
    /// no free slot waits.
    waits: bool,
    /// The histograms of the bulkhead's instance in its registry.
    telemetry: Option<Arc<InstanceTelemetry>>,
}

impl<S> BulkheadService<S> {
    /// `inner` behind `bulkhead`, with `retry_after` as the refusals' hint
    /// (and its floor, when the bulkhead's figures give one).
    pub fn new(inner: S, bulkhead: Bulkhead, retry_after: Duration) -> Self {
        let waits = !bulkhead.config().max_wait().is_zero();
        let telemetry = bulkhead.telemetry();
        BulkheadService {
            inner,
            bulkhead,
            retry_after,
            waits,
            telemetry,
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
    S: Service<Req> + Clone,
{
    type Response = S::Response;
    type Error = ServiceError<S::Error>;
    type Future = ResponseFuture<S, Req>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(ServiceError::Inner)
    }

    #[inline]
    fn call(&mut self, request: Req) -> Self::Future {
        let timing = self.telemetry.as_ref().and_then(Timing::start);
        let entered = if self.waits {
            match wait::enter(&self.bulkhead, self.retry_after) {
                Entry::Entered(entered) => entered,
                Entry::Queued(queued) => {
                    return ResponseFuture::waiting(queued, &mut self.inner, request, timing);
                }
            }
        } else {
            self.bulkhead
                .try_enter_owned()
                .map_err(|full| retry_after::refusal(&self.bulkhead, full, self.retry_after))
        };
        ResponseFuture::at_once(entered, &mut self.inner, request, timing)
    }
}

impl<S: fmt::Debug> fmt::Debug for BulkheadService<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BulkheadService")
            .field("inner", &self.inner)
            .field("bulkhead", &self.bulkhead.instance())
            .field("retry_after", &self.retry_after)
            .field("waits", &self.waits)
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
        let spare = super::layer::sends_again(&self.pipeline).then(|| ready.clone());
        let mut attempts = Attempts::new(ready, spare, request, self.replay.clone());
        let pipeline = self.pipeline.clone();
        let hint = self.retry_after;
        PipelineFuture::new(async move {
            let result = pipeline.execute_async(|| attempts.next()).await;
            result.map_err(|error| match error {
                CallError::Rejected(rejection) => {
                    let bulkhead = pipeline.policies().bulkhead();
                    let retry_after = retry_after::for_rejection(rejection, bulkhead, hint);
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
