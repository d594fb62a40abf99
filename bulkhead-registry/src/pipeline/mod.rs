//! Policies built in code instead of with attributes: [`Pipeline`].

mod keyed;
mod predicate;

pub use keyed::{KeyedPipeline, KeyedPipelineBuilder};

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use bulkhead_core::{CallError, Classifier, Policies, Pushback};

use crate::error::RegistryError;
use crate::policy::Managed;
use crate::registry::Registry;
use crate::specs::PolicySpecs;
use predicate::{Predicate, RetryAfter};

/// A set of policies around calls made through it, built with
/// [`Pipeline::builder`].
///
/// The policies compose in one fixed order, whatever order the builder
/// methods were called in:
/// `Retry( Hedge( CircuitBreaker( RateLimiter( Timeout( Bulkhead( Chaos( call ) ) ) ) ) ) )`.
///
/// There is no fallback policy here: a pipeline returns a `Result`, and its
/// fallback is the caller's `or_else`, which sees every outcome
/// (`CallError::Rejected` for a refusal, `CallError::Inner` for the call's
/// own error) after the last retry:
///
/// ```
/// use bulkhead_registry::{Pipeline, Registry};
/// use bulkhead_core::{CallError, Rejection};
///
/// let registry = Registry::new();
/// let thumbnails = Pipeline::builder(&registry, "thumbnails")
///     .bulkhead(|b| b.max_concurrent(1))
///     .build()?;
/// let cached = |_: &str| b"cached".to_vec();
///
/// let _busy = registry.bulkhead("thumbnails")?.bulkhead().try_enter_owned()?;
/// let thumbnail = thumbnails
///     .execute(|| Ok::<_, std::io::Error>(b"fresh".to_vec()))
///     .or_else(|error| match error {
///         CallError::Rejected(Rejection::BulkheadFull(_)) => Ok(cached("cat")),
///         other => Err(other),
///     });
/// assert_eq!(thumbnail.unwrap(), b"cached");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// The pipeline's id is the instance id of every policy it builds, so
/// `registry.bulkhead("renderer")` returns the bulkhead of the pipeline
/// `"renderer"`. Clones share the same instances; a pipeline is cheap to
/// clone and share between threads.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use bulkhead_registry::{Pipeline, Registry};
///
/// let registry = Registry::new();
/// let render = Pipeline::builder(&registry, "renderer")
///     .bulkhead(|b| b.max_concurrent(10))
///     .retry(|r| r.max_attempts(3).wait(Duration::ZERO))
///     .build()?;
///
/// let mut attempts = 0;
/// let report = render.execute(|| {
///     attempts += 1;
///     if attempts < 2 { Err(std::io::Error::other("flaky")) } else { Ok("r-1 rendered") }
/// });
/// assert_eq!(report.unwrap(), "r-1 rendered");
/// assert_eq!(registry.bulkhead("renderer")?.max_concurrent(), 10);
/// # Ok::<(), bulkhead_registry::RegistryError>(())
/// ```
#[derive(Clone)]
pub struct Pipeline {
    id: Arc<str>,
    policies: Policies,
    retry_if: Option<Predicate>,
    record_if: Option<Predicate>,
    pushback: Option<RetryAfter>,
}

impl Pipeline {
    /// Starts building the pipeline `id` on `registry`.
    pub fn builder(registry: &Registry, id: impl Into<String>) -> PipelineBuilder<'_> {
        let id = id.into();
        PipelineBuilder {
            registry,
            specs: PolicySpecs::new(id.as_str()).declared_by(format!("pipeline {id:?}")),
            retry_if: None,
            record_if: None,
            pushback: None,
        }
    }

    /// The pipeline's id, which is also its policies' instance id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The policies, to inspect them.
    pub fn policies(&self) -> &Policies {
        &self.policies
    }

    /// Runs `call` under the pipeline's policies, on this thread.
    ///
    /// `call` is `FnMut` because a retry may call it more than once. A
    /// hedge does not apply: a sync call runs one attempt at a time. Waits
    /// (a retry delay, a rate-limiter permit, a bulkhead slot) block the
    /// thread: from async code, use [`execute_async`](Self::execute_async).
    /// A timeout cannot pre-empt a sync call: it bounds the wait for a
    /// bulkhead slot, and a call that overruns keeps its result and is
    /// reported (an event). The wait for a rate-limiter permit is outside
    /// the timeout (the fixed order, as for async calls): the deadline
    /// counts from when the permit was granted.
    ///
    /// # Errors
    ///
    /// [`CallError::Rejected`] if a policy refused the (last) attempt,
    /// [`CallError::Inner`] if it ran and failed.
    pub fn execute<T, E, F>(&self, call: F) -> Result<T, CallError<E>>
    where
        E: 'static,
        F: FnMut() -> Result<T, E>,
    {
        let retry_if = |error: &E| Predicate::test(self.retry_if.as_ref(), error);
        let record_if = |error: &E| Predicate::test(self.record_if.as_ref(), error);
        let classify = Classifier::new().retry_if(&retry_if).record_if(&record_if);
        let classify = match self.pushback.as_ref().and_then(RetryAfter::of_type) {
            Some(retry_after) => classify.retry_after_with(retry_after),
            None => classify,
        };
        self.policies.call(&classify, call)
    }

    /// Runs the future `call` makes under the pipeline's policies, without
    /// blocking a thread. The bulkhead slot is held until that future
    /// completes or is dropped; a timeout drops it at the deadline. With a
    /// hedge, `call` makes the future of each attempt, and several may run
    /// at once.
    ///
    /// Nothing happens until the returned future is first polled.
    ///
    /// # Errors
    ///
    /// As for [`execute`](Self::execute).
    pub async fn execute_async<T, E, F, Fut>(&self, mut call: F) -> Result<T, CallError<E>>
    where
        E: 'static,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let retry_if = |error: &E| Predicate::test(self.retry_if.as_ref(), error);
        let record_if = |error: &E| Predicate::test(self.record_if.as_ref(), error);
        let classify = Classifier::new().retry_if(&retry_if).record_if(&record_if);
        let classify = match self.pushback.as_ref().and_then(RetryAfter::of_type) {
            Some(retry_after) => classify.retry_after_with(retry_after),
            None => classify,
        };
        // `call` is lent, not moved: moving the caller's closure into the
        // policies' future copies its captures, just written one by one, by
        // wider loads that stall on store forwarding (BENCHMARKS.md).
        if self.policies.hedge().is_some() {
            // Polled out of line: inlined, the hedged race made this
            // future's `poll` too large to be inlined into its caller, which
            // cost every pipeline without a hedge about 5 ns.
            let hedged = std::pin::pin!(self.policies.call_hedged(&classify, &mut call));
            poll_out_of_line(hedged).await
        } else {
            self.policies.call_async(&classify, &mut call).await
        }
    }
}

/// Awaits `future`, polling it through a call that is never inlined.
fn poll_out_of_line<F: Future>(
    mut future: std::pin::Pin<&mut F>,
) -> impl Future<Output = F::Output> + '_ {
    #[inline(never)]
    fn poll<F: Future>(
        future: std::pin::Pin<&mut F>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        future.poll(cx)
    }
    std::future::poll_fn(move |cx| poll(future.as_mut(), cx))
}

impl fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pipeline")
            .field("id", &self.id)
            .field("policies", &self.policies)
            .finish_non_exhaustive()
    }
}

/// Builds a [`Pipeline`]; see [`Pipeline::builder`].
///
/// Each policy method takes a closure over that policy's config builder;
/// calling one twice extends the same builder. The policies always compose in
/// the same order, whatever order they are added in.
#[must_use]
pub struct PipelineBuilder<'r> {
    registry: &'r Registry,
    /// Every policy under the pipeline's id.
    specs: PolicySpecs,
    retry_if: Option<Predicate>,
    record_if: Option<Predicate>,
    pushback: Option<RetryAfter>,
}

impl PipelineBuilder<'_> {
    /// Adds `P`, or extends it (what `bulkhead`, `retry`, ... do).
    pub(crate) fn with<P: Managed>(mut self, f: impl FnOnce(P::Spec) -> P::Spec) -> Self {
        self.specs.extend::<P>(f);
        self
    }

    /// Retries only the errors of type `E` that `predicate` accepts (by
    /// default every error is retried). Calls whose error type is not `E`
    /// keep the default.
    pub fn retry_if<E: 'static>(
        mut self,
        predicate: impl Fn(&E) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.retry_if = Some(Predicate::new(predicate));
        self
    }

    /// Records as circuit-breaker failures only the errors of type `E` that
    /// `predicate` accepts; the others count as successes (by default every
    /// error is a failure). Calls whose error type is not `E` keep the
    /// default.
    pub fn record_if<E: 'static>(
        mut self,
        predicate: impl Fn(&E) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.record_if = Some(Predicate::new(predicate));
        self
    }

    /// Reads when errors of type `E` say the call may be tried again
    /// ([`Pushback::retry_after`]): the retry then waits at least that long
    /// before the next attempt, and gives up (`GaveUp`, no budget taken)
    /// when that is longer than its `max_wait_interval`. Calls whose error
    /// type is not `E` keep the retry's own backoff. (A method with policy
    /// attributes reads it without being asked, when its error type
    /// implements `Pushback`.)
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_core::{CallError, Pushback};
    /// use bulkhead_registry::{Pipeline, Registry};
    ///
    /// #[derive(Debug, PartialEq)]
    /// struct Throttled(Duration);
    /// impl Pushback for Throttled {
    ///     fn retry_after(&self) -> Option<Duration> {
    ///         Some(self.0)
    ///     }
    /// }
    ///
    /// let registry = Registry::new();
    /// let api = Pipeline::builder(&registry, "api")
    ///     .retry(|r| r.max_attempts(3).wait(Duration::ZERO).max_wait_interval(Duration::from_secs(1)))
    ///     .pushback::<Throttled>()
    ///     .build()?;
    /// let mut attempts = 0;
    /// let result = api.execute(|| {
    ///     attempts += 1;
    ///     Err::<(), _>(Throttled(Duration::from_secs(30)))
    /// });
    /// assert_eq!(result, Err(CallError::Inner(Throttled(Duration::from_secs(30)))));
    /// assert_eq!(attempts, 1); // 30 s is past max_wait_interval: given up
    /// # Ok::<(), bulkhead_registry::RegistryError>(())
    /// ```
    ///
    /// [`Pushback::retry_after`]: bulkhead_core::Pushback::retry_after
    pub fn pushback<E: Pushback + 'static>(mut self) -> Self {
        self.pushback = Some(RetryAfter::of::<E>());
        self
    }

    /// Resolves every policy in the registry, all or nothing.
    ///
    /// # Errors
    ///
    /// REG-004 for an unknown config, REG-008 if one of the ids exists with
    /// another configuration, CFG-004 if an environment variable for the id
    /// also matches another declared id, or the ATR code of an invalid
    /// value.
    pub fn build(self) -> Result<Pipeline, RegistryError> {
        let mut declarations = self.registry.declare();
        let policies = declarations.policies(&self.specs)?;
        declarations.commit();
        Ok(Pipeline {
            id: self.specs.id().into(),
            policies,
            retry_if: self.retry_if,
            record_if: self.record_if,
            pushback: self.pushback,
        })
    }
}

impl fmt::Debug for PipelineBuilder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PipelineBuilder")
            .field("specs", &self.specs)
            .finish_non_exhaustive()
    }
}
