//! A pipeline whose bulkhead is keyed: [`KeyedPipeline`].

use std::borrow::Borrow;
use std::fmt;
use std::future::Future;
use std::hash::Hash;

use bulkhead_core::{CallError, Classifier, KeyedBulkhead, Rejection, RejectionKind};

use super::predicate::Predicate;
use super::{Pipeline, PipelineBuilder};
use crate::error::RegistryError;
use crate::keyed::{BulkheadKey, KeyedBulkheadBuilder};

impl<'r> PipelineBuilder<'r> {
    /// Makes the pipeline's bulkhead a keyed one ([`KeyedPipeline`]): a
    /// limit per key, `per_key`, under the global `max_concurrent`, with
    /// `f` setting its values in code over the registry's configuration
    /// (`[bulkhead.instances.<id>]`, keys under `.keys."<key>"`), as
    /// [`Registry::keyed_bulkhead_builder`](crate::Registry::keyed_bulkhead_builder)
    /// does. Call it last: the other policies are set on this builder
    /// before it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_core::{CallError, Rejection};
    /// use bulkhead_registry::{Pipeline, Registry};
    ///
    /// let registry = Registry::new();
    /// let api = Pipeline::builder(&registry, "api")
    ///     .retry(|r| r.max_attempts(2).wait(Duration::ZERO))
    ///     .keyed_bulkhead::<String>(|b| b.max_concurrent(10).per_key(1))
    ///     .build()?;
    ///
    /// let busy = api.keyed_bulkhead().try_enter("acme")?; // acme's one slot
    /// let refused = api.execute("acme", || Ok::<_, std::io::Error>("report"));
    /// assert!(matches!(refused, Err(CallError::Rejected(Rejection::BulkheadFull(_)))));
    /// assert_eq!(api.execute("globex", || Ok::<_, std::io::Error>("report")).unwrap(), "report");
    /// drop(busy);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn keyed_bulkhead<K: BulkheadKey>(
        self,
        f: impl FnOnce(KeyedBulkheadBuilder<'r, K>) -> KeyedBulkheadBuilder<'r, K>,
    ) -> KeyedPipelineBuilder<'r, K> {
        let id = self.specs.id().to_owned();
        let keyed = self
            .registry
            .keyed_bulkhead_builder::<K>(&id)
            .source(&format!("pipeline {id:?}"));
        KeyedPipelineBuilder {
            keyed: f(keyed),
            pipeline: self,
        }
    }
}

/// Builds a [`KeyedPipeline`]; see [`PipelineBuilder::keyed_bulkhead`].
#[must_use]
pub struct KeyedPipelineBuilder<'r, K> {
    pipeline: PipelineBuilder<'r>,
    keyed: KeyedBulkheadBuilder<'r, K>,
}

impl<K> fmt::Debug for KeyedPipelineBuilder<'_, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedPipelineBuilder")
            .field("pipeline", &self.pipeline)
            .field("keyed", &self.keyed)
            .finish()
    }
}

impl<K: BulkheadKey> KeyedPipelineBuilder<'_, K> {
    /// Resolves the keyed bulkhead, then the other policies (each in one
    /// batch: a keyed bulkhead made stays in the registry if the other
    /// policies are then refused).
    ///
    /// # Errors
    ///
    /// As [`KeyedBulkheadBuilder::build`] (REG-018 if the pipeline also has
    /// a plain bulkhead, or the id is one) and [`PipelineBuilder::build`].
    pub fn build(self) -> Result<KeyedPipeline<K>, RegistryError> {
        let keyed = self.keyed.build()?;
        let pipeline = self.pipeline.build()?;
        Ok(KeyedPipeline { pipeline, keyed })
    }
}

/// A [`Pipeline`] whose bulkhead is keyed: each call names its key, and
/// holds a slot of that key, innermost, under the other policies (which
/// see a refusal as `Rejection::BulkheadFull`, as a plain bulkhead's: the
/// retry retries it unless `abort_on` lists `BulkheadFull`, the breaker
/// records it unless `ignore_on` does).
///
/// Not (yet) as a plain pipeline: a pipeline's `pushback` is not read
/// through a keyed one; a sync call's wait for a key slot is bounded by
/// `max_wait` and a deadline scope, not by the pipeline's timeout (an async
/// call's is: the timeout drops it); and the key slot is taken inside the
/// call the other policies see, so a retry's `Retrying` event names no
/// rejection kind for a key's refusal.
#[derive(Clone)]
pub struct KeyedPipeline<K> {
    pipeline: Pipeline,
    keyed: KeyedBulkhead<K>,
}

impl<K> fmt::Debug for KeyedPipeline<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedPipeline")
            .field("pipeline", &self.pipeline)
            .field("keyed", &self.keyed)
            .finish()
    }
}

impl<K: BulkheadKey> KeyedPipeline<K> {
    /// The pipeline's id, its keyed bulkhead's and its other policies'.
    pub fn id(&self) -> &str {
        self.pipeline.id()
    }

    /// The keyed bulkhead.
    pub fn keyed_bulkhead(&self) -> &KeyedBulkhead<K> {
        &self.keyed
    }

    /// The other policies.
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// Runs `call` under the policies with a slot of `key`, on this thread
    /// (see [`Pipeline::execute`]).
    ///
    /// # Errors
    ///
    /// [`CallError::Rejected`] if a policy (the keyed bulkhead included)
    /// refused the last attempt, [`CallError::Inner`] if it ran and failed.
    pub fn execute<Q, T, E, F>(&self, key: &Q, mut call: F) -> Result<T, CallError<E>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
        E: 'static,
        F: FnMut() -> Result<T, E>,
    {
        let attempt = || self.keyed.hold(key, &mut call);
        let (retries, records) = (self.retries::<E>(), self.records::<E>());
        let classify = Classifier::new()
            .retry_if(&retries)
            .record_if(&records)
            .refused_inside(refused_inside::<E>);
        self.pipeline
            .policies
            .call(&classify, attempt)
            .map_err(CallError::flatten)
    }

    /// Runs the future `call` makes under the policies with a slot of
    /// `key`, without blocking a thread (see [`Pipeline::execute_async`]).
    ///
    /// # Errors
    ///
    /// As for [`execute`](Self::execute).
    pub async fn execute_async<Q, T, E, F, Fut>(
        &self,
        key: &Q,
        mut call: F,
    ) -> Result<T, CallError<E>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
        E: 'static,
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let keyed = &self.keyed;
        let mut attempt = || keyed.hold_async(key, call());
        let (retries, records) = (self.retries::<E>(), self.records::<E>());
        let classify = Classifier::new()
            .retry_if(&retries)
            .record_if(&records)
            .refused_inside(refused_inside::<E>);
        let policies = &self.pipeline.policies;
        let result = if policies.hedge().is_some() {
            policies.call_hedged(&classify, &mut attempt).await
        } else {
            policies.call_async(&classify, &mut attempt).await
        };
        result.map_err(CallError::flatten)
    }

    /// Whether the retry tries an attempt again after this error: the
    /// pipeline's `retry_if` for the call's own errors, `abort_on` for the
    /// keyed bulkhead's refusals.
    fn retries<E: 'static>(&self) -> impl Fn(&CallError<E>) -> bool + '_ {
        move |error| match error {
            CallError::Inner(error) => Predicate::test(self.pipeline.retry_if.as_ref(), error),
            CallError::Rejected(rejection) => self.pipeline.policies.retries_rejection(rejection),
        }
    }

    /// Whether the breaker records this error as a failure: `record_if`
    /// for the call's own errors, `ignore_on` for the keyed bulkhead's
    /// refusals.
    fn records<E: 'static>(&self) -> impl Fn(&CallError<E>) -> bool + '_ {
        move |error| match error {
            CallError::Inner(error) => Predicate::test(self.pipeline.record_if.as_ref(), error),
            CallError::Rejected(rejection) => self.pipeline.policies.records_rejection(rejection),
        }
    }
}

/// A key's refusal, which the policies see as the call's own error: for
/// the histograms' outcome labels (`bulkhead_full`, not `error`).
fn refused_inside<E>(error: &CallError<E>) -> Option<RejectionKind> {
    error.rejection().map(Rejection::kind)
}
