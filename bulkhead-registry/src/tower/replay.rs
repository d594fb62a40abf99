//! How a [`PipelineService`](super::PipelineService) gets a request (and a
//! ready service) for each attempt: [`Replay`], [`SendOnce`], [`ReplayWith`].

use std::fmt;
use std::future::{Future, poll_fn};

use tower_service::Service;

/// Makes the request of each attempt of a pipeline with a retry:
/// [`SendOnce`] or [`ReplayWith`] (sealed).
///
/// A service takes its request by value, so a second attempt needs a copy
/// made before the first. HTTP requests are not `Clone` (their body is a
/// stream), so the copy is the application's to make, as with
/// `tower::retry::Policy::clone_request`.
pub trait Replay<Req>: sealed::Sealed {
    /// A copy of `request` to send, keeping the original for later attempts;
    /// `None` to send the original itself (there is no later attempt).
    fn replay(&self, request: &Req) -> Option<Req>;
}

/// Each request is sent once, as it came: for pipelines without a retry.
/// See [`PipelineLayer::new`](super::PipelineLayer::new).
#[derive(Debug, Clone, Copy, Default)]
pub struct SendOnce;

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::SendOnce {}
    impl<F> Sealed for super::ReplayWith<F> {}
}

impl<Req> Replay<Req> for SendOnce {
    #[inline]
    fn replay(&self, _: &Req) -> Option<Req> {
        None
    }
}

/// Each attempt sends `f(&request)`: for pipelines with a retry. See
/// [`PipelineLayer::with_replay`](super::PipelineLayer::with_replay).
#[derive(Clone, Copy)]
pub struct ReplayWith<F>(pub(super) F);

impl<Req, F> Replay<Req> for ReplayWith<F>
where
    F: Fn(&Req) -> Req,
{
    #[inline]
    fn replay(&self, request: &Req) -> Option<Req> {
        Some((self.0)(request))
    }
}

impl<F> fmt::Debug for ReplayWith<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ReplayWith")
            .field(&std::any::type_name::<F>())
            .finish()
    }
}

/// The attempts of one request through a pipeline.
pub(super) struct Attempts<S, Req, R> {
    /// The instance the caller polled ready, for the first attempt.
    ready: Option<S>,
    /// A clone for later attempts, if the pipeline retries or hedges (each
    /// attempt clones it: hedged attempts run at once).
    spare: Option<S>,
    /// The original request, until it is sent.
    request: Option<Req>,
    replay: R,
}

impl<S, Req, R> Attempts<S, Req, R>
where
    S: Service<Req> + Clone,
    R: Replay<Req>,
{
    pub(super) fn new(ready: S, spare: Option<S>, request: Req, replay: R) -> Self {
        Attempts {
            ready: Some(ready),
            spare,
            request: Some(request),
            replay,
        }
    }

    /// The next attempt, owning what it needs: the pipeline calls this once
    /// per attempt, after its policies let the attempt through.
    pub(super) fn next(
        &mut self,
    ) -> impl Future<Output = Result<S::Response, S::Error>> + use<S, Req, R> {
        let request = match &self.request {
            Some(original) => self.replay.replay(original).or_else(|| self.request.take()),
            None => None,
        };
        let (service, polled) = match self.ready.take() {
            Some(ready) => (Some(ready), true),
            None => (self.spare.clone(), false),
        };
        async move {
            // `PipelineLayer::new` refuses pipelines that retry or hedge
            // (REG-012), and
            // `with_replay` always has a copy: every attempt has both.
            let (Some(mut service), Some(request)) = (service, request) else {
                unreachable!(
                    "an attempt without a request: the pipeline retried a SendOnce request"
                )
            };
            if !polled {
                poll_fn(|cx| service.poll_ready(cx)).await?;
            }
            service.call(request).await
        }
    }
}
