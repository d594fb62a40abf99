//! The response futures: [`ResponseFuture`] (a bulkhead: no allocation
//! unless the request waits) and [`PipelineFuture`] (a pipeline: one box).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use std::sync::Arc;
use std::time::{Duration, Instant};

use bulkhead_core::{
    CallOutcome, InstanceTelemetry, Outcome, OwnedBulkheadPermit, RejectionKind, WaitOutcome,
};
use pin_project_lite::pin_project;
use tower_service::Service;

use super::error::{ServiceError, Unavailable};
use super::wait::Queued;

pin_project! {
    /// The response future of a [`BulkheadService`](super::BulkheadService).
    ///
    /// One of: the inner service's future, holding the request's slot until
    /// it completes (or is dropped); a refusal, ready at once; or, for a
    /// bulkhead with a `max_wait`, a request waiting in the bulkhead's queue
    /// with the service that will answer it, which is called once the slot
    /// is there. Dropped while it waits, it leaves the queue at once and the
    /// service is never called.
    ///
    /// The first two do not allocate; a request that waits allocates its
    /// place in the queue (one box).
    #[must_use = "futures do nothing unless polled"]
    pub struct ResponseFuture<S, Req>
    where
        S: Service<Req>,
    {
        #[pin]
        state: State<S, Req>,
        // Set while the instance's histograms record.
        timing: Option<Timing>,
    }
}

/// A request's times, for the histograms of its bulkhead's instance
/// ([`InstanceTelemetry`]), on the system clock: its arrival, and once it
/// holds a slot, that too.
pub(super) struct Timing {
    telemetry: Arc<InstanceTelemetry>,
    arrived: Instant,
}

impl Timing {
    /// The timing of a request arriving now, if the histograms record.
    #[inline]
    pub(super) fn start(telemetry: &Arc<InstanceTelemetry>) -> Option<Self> {
        telemetry.recording().then(|| Timing {
            telemetry: Arc::clone(telemetry),
            arrived: Instant::now(),
        })
    }

    /// The request got its slot (`at_once`: without waiting, a wait of zero).
    pub(super) fn admitted(self, at_once: bool) -> Self {
        let waited = if at_once {
            Duration::ZERO
        } else {
            self.arrived.elapsed()
        };
        self.telemetry.record_wait(waited, WaitOutcome::Admitted);
        self
    }

    /// The bulkhead refused the request.
    pub(super) fn refused(self, at_once: bool) {
        let now = Instant::now();
        let waited = if at_once {
            Duration::ZERO
        } else {
            now.saturating_duration_since(self.arrived)
        };
        self.telemetry.record_wait(waited, WaitOutcome::Rejected);
        self.ended(now, Outcome::Rejected(RejectionKind::BulkheadFull));
    }

    /// The inner service answered.
    fn answered(self, ok: bool) {
        let outcome = if ok { Outcome::Success } else { Outcome::Error };
        self.ended(Instant::now(), outcome);
    }

    fn ended(&self, now: Instant, outcome: Outcome) {
        let took = now.saturating_duration_since(self.arrived);
        self.telemetry.record_attempt(1, self.arrived, now, outcome);
        self.telemetry.record_call(took, outcome);
    }
}

pin_project! {
    #[project = StateProj]
    #[project_replace = StateReplace]
    enum State<S, Req>
    where
        S: Service<Req>,
    {
        Waiting {
            queued: Queued,
            // The instance that was polled ready, and its request.
            service: S,
            request: Req,
        },
        Admitted {
            #[pin]
            future: S::Future,
            // `None` once the future has completed: the slot went back then.
            permit: Option<OwnedBulkheadPermit>,
        },
        Refused {
            unavailable: Unavailable,
        },
        // Only while the service is being called, or after that call
        // panicked.
        Calling,
    }
}

impl<S: Service<Req>, Req> ResponseFuture<S, Req> {
    /// The future of a request whose slot was decided at once: the inner
    /// service called holding its slot (`Ok`), or the refusal; timed so.
    pub(super) fn at_once(
        entered: Result<OwnedBulkheadPermit, Unavailable>,
        service: &mut S,
        request: Req,
        timing: Option<Timing>,
    ) -> Self {
        match entered {
            Ok(permit) => ResponseFuture {
                state: State::Admitted {
                    future: service.call(request),
                    permit: Some(dropped_until_done(permit)),
                },
                timing: timing.map(|timing| timing.admitted(true)),
            },
            Err(unavailable) => {
                if let Some(timing) = timing {
                    timing.refused(true);
                }
                ResponseFuture {
                    state: State::Refused { unavailable },
                    timing: None,
                }
            }
        }
    }

    /// A request whose slot is `queued`: the instance polled ready answers
    /// it once it has its slot, and `service` keeps a clone, to be polled
    /// ready before the next request.
    pub(super) fn waiting(
        queued: Queued,
        service: &mut S,
        request: Req,
        timing: Option<Timing>,
    ) -> Self
    where
        S: Clone,
    {
        let fresh = service.clone();
        let service = std::mem::replace(service, fresh);
        ResponseFuture {
            state: State::Waiting {
                queued,
                service,
                request,
            },
            timing,
        }
    }
}

impl<S, Req, T, E> Future for ResponseFuture<S, Req>
where
    S: Service<Req, Response = T, Error = E>,
{
    type Output = Result<T, ServiceError<E>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let mut state = this.state;
        let timing = this.timing;
        loop {
            let permit = match state.as_mut().project() {
                StateProj::Admitted { future, permit } => {
                    let output = ready!(future.poll(cx));
                    // The call is over: its slot goes back now, not when the
                    // future is dropped, with how it ended.
                    if let Some(mut permit) = permit.take() {
                        permit.set_outcome(CallOutcome::of(&output));
                    }
                    if let Some(timing) = timing.take() {
                        timing.answered(output.is_ok());
                    }
                    return Poll::Ready(output.map_err(ServiceError::Inner));
                }
                StateProj::Refused { unavailable } => {
                    return Poll::Ready(Err(ServiceError::Unavailable(*unavailable)));
                }
                StateProj::Waiting { queued, .. } => match ready!(queued.as_mut().poll(cx)) {
                    Ok(permit) => {
                        *timing = timing.take().map(|timing| timing.admitted(false));
                        permit
                    }
                    Err(unavailable) => {
                        if let Some(timing) = timing.take() {
                            timing.refused(false);
                        }
                        state.set(State::Refused { unavailable });
                        continue;
                    }
                },
                StateProj::Calling => return Poll::Pending,
            };
            // The slot is there: call the service with the request, and
            // poll its future in the next turn.
            if let StateReplace::Waiting {
                mut service,
                request,
                ..
            } = state.as_mut().project_replace(State::Calling)
            {
                state.set(State::Admitted {
                    future: service.call(request),
                    permit: Some(dropped_until_done(permit)),
                });
            }
        }
    }
}

/// A permit an adaptive bulkhead counts as dropped unless the response
/// future completes (a client that goes away drops it mid-call).
fn dropped_until_done(mut permit: OwnedBulkheadPermit) -> OwnedBulkheadPermit {
    permit.set_outcome(CallOutcome::Dropped);
    permit
}

impl<S: Service<Req>, Req> fmt::Debug for ResponseFuture<S, Req> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut f = f.debug_struct("ResponseFuture");
        match &self.state {
            State::Waiting { .. } => f.field("state", &"waiting"),
            State::Admitted { permit, .. } => f.field("permit", permit),
            State::Refused { unavailable } => f.field("unavailable", unavailable),
            State::Calling => f.field("state", &"calling"),
        };
        f.finish_non_exhaustive()
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
