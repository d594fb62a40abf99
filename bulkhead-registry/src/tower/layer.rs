//! The layers: [`BulkheadLayer`] and [`PipelineLayer`].

use std::time::Duration;

use bulkhead_core::Bulkhead;
use tower_layer::Layer;

use super::error::RetryNeedsReplay;
use super::replay::{ReplayWith, SendOnce};
use super::retry_after::DEFAULT_RETRY_AFTER;
use super::service::{BulkheadService, PipelineService};
use crate::error::RegistryError;
use crate::pipeline::Pipeline;
use crate::registry::Registry;

/// Runs every request of the services it wraps through one bulkhead, which
/// waits up to its `max_wait` for a slot, inside the response future: a
/// request that gets no slot is refused with
/// [`ServiceError::Unavailable`](super::ServiceError::Unavailable) (at once
/// when `max_wait` is zero).
///
/// Every service the layer makes (every clone of every route it is applied
/// to) shares the bulkhead's slots and queue. See the [module docs](super)
/// for where the slot is taken, when it goes back, and how the
/// `Retry-After` hint of a refusal is computed.
#[derive(Debug, Clone)]
pub struct BulkheadLayer {
    bulkhead: Bulkhead,
    retry_after: Duration,
}

impl BulkheadLayer {
    /// A layer over `bulkhead`.
    ///
    /// With the bulkhead's `max_wait` zero (the default), a server answers a
    /// full bulkhead at once, with a 503 the client can back off from. With a
    /// `max_wait`, a request waits up to that long for a slot, in order of
    /// arrival, without holding up `poll_ready` (other requests of the route
    /// still find a free slot or join the queue); keep it short, since a
    /// waiting request holds its connection.
    pub fn new(bulkhead: Bulkhead) -> Self {
        BulkheadLayer {
            bulkhead,
            retry_after: DEFAULT_RETRY_AFTER,
        }
    }

    /// A layer over the bulkhead `id` of `registry`.
    ///
    /// # Errors
    ///
    /// REG-009 if the registry has no bulkhead `id`.
    pub fn from_registry(registry: &Registry, id: &str) -> Result<Self, RegistryError> {
        let handle = registry.bulkhead(id)?;
        Ok(BulkheadLayer::new(handle.bulkhead().clone()))
    }

    /// Sets the `Retry-After` hint of refusals ([`DEFAULT_RETRY_AFTER`]
    /// unless set). When the registry tracks sizing, a refusal's hint is
    /// estimated from the bulkhead's figures instead, and this is its least
    /// value; see [`MAX_RETRY_AFTER`](super::MAX_RETRY_AFTER) and the
    /// [module docs](super#the-retry-after-hint).
    #[must_use]
    pub fn retry_after(mut self, retry_after: Duration) -> Self {
        self.retry_after = retry_after;
        self
    }

    /// The bulkhead.
    pub fn bulkhead(&self) -> &Bulkhead {
        &self.bulkhead
    }
}

impl<S> Layer<S> for BulkheadLayer {
    type Service = BulkheadService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        BulkheadService::new(inner, self.bulkhead.clone(), self.retry_after)
    }
}

/// Runs every request of the services it wraps under a [`Pipeline`]'s
/// policies: `Retry( Hedge( CircuitBreaker( RateLimiter( Timeout(
/// Bulkhead( Chaos( call ) ) ) ) ) ) )`. A refusal by any of them (a fault
/// a chaos policy injects included) is
/// [`ServiceError::Unavailable`](super::ServiceError::Unavailable); a
/// pipeline with [`chaos`](crate::pipeline::PipelineBuilder::chaos) is
/// the chaos policy's layer.
///
/// As with a [`BulkheadLayer`], the pipeline's bulkhead waits up to its
/// `max_wait` for a slot (without blocking a thread), and the inner service
/// is called only once the request has one; a refusal by the bulkhead gets
/// the same `Retry-After` hint. The service needs `S: Clone` (each request
/// runs in a future of its own) and allocates one box per request.
///
/// `R` says how a retry gets a request to send again: [`SendOnce`] (no
/// retry) or [`ReplayWith`].
#[derive(Debug, Clone)]
pub struct PipelineLayer<R = SendOnce> {
    pipeline: Pipeline,
    replay: R,
    retry_after: Duration,
}

impl PipelineLayer {
    /// A layer over `pipeline`, sending each request once.
    ///
    /// # Errors
    ///
    /// [`RetryNeedsReplay`] (REG-012) if the pipeline has a retry with more
    /// than one attempt, or a hedge: the inner service consumes the
    /// request, so a second attempt needs a copy. Use
    /// [`with_replay`](Self::with_replay) for such a pipeline.
    pub fn new(pipeline: Pipeline) -> Result<Self, RetryNeedsReplay> {
        if sends_again(&pipeline) {
            let hedges = pipeline.policies().hedge().is_some();
            return Err(RetryNeedsReplay::new(pipeline.id(), hedges));
        }
        Ok(PipelineLayer {
            pipeline,
            replay: SendOnce,
            retry_after: DEFAULT_RETRY_AFTER,
        })
    }
}

/// Whether `pipeline` may send a request more than once: it retries, or
/// hedges (each hedged attempt, running beside the others, gets its own
/// clone of the service and copy of the request).
pub(super) fn sends_again(pipeline: &Pipeline) -> bool {
    let policies = pipeline.policies();
    policies.hedge().is_some()
        || policies
            .retry()
            .is_some_and(|retry| retry.config().max_attempts() > 1)
}

impl<F> PipelineLayer<ReplayWith<F>> {
    /// A layer over `pipeline` whose attempts each send `replay(&request)`,
    /// a copy of the request (for a `Clone` request, `Clone::clone`); the
    /// original is kept until the last attempt is over.
    pub fn with_replay(pipeline: Pipeline, replay: F) -> Self {
        PipelineLayer {
            pipeline,
            replay: ReplayWith(replay),
            retry_after: DEFAULT_RETRY_AFTER,
        }
    }
}

impl<R> PipelineLayer<R> {
    /// Sets the `Retry-After` hint of refusals ([`DEFAULT_RETRY_AFTER`]
    /// unless set); for a refusal by the pipeline's bulkhead, the least
    /// value of the hint its figures give when the registry tracks sizing,
    /// as for a [`BulkheadLayer`].
    #[must_use]
    pub fn retry_after(mut self, retry_after: Duration) -> Self {
        self.retry_after = retry_after;
        self
    }

    /// The pipeline.
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }
}

impl<S, R: Clone> Layer<S> for PipelineLayer<R> {
    type Service = PipelineService<S, R>;

    fn layer(&self, inner: S) -> Self::Service {
        PipelineService::new(
            inner,
            self.pipeline.clone(),
            self.replay.clone(),
            self.retry_after,
        )
    }
}
