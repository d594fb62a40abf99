//! Policies built in code instead of with attributes: [`Pipeline`].

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use bulkhead_core::{Bulkhead, BulkheadConfigBuilder, CallError, Rejection};

use crate::error::RegistryError;
use crate::registry::Registry;

/// A set of policies around calls made through it, built with
/// [`Pipeline::builder`].
///
/// The pipeline's id is the instance id of every policy it builds, so
/// `registry.bulkhead("renderer")` returns the bulkhead of the pipeline
/// `"renderer"`. Clones share the same instances; a pipeline is cheap to
/// clone and share between threads.
///
/// # Examples
///
/// ```
/// use bulkhead_registry::{Pipeline, Registry};
///
/// let registry = Registry::new();
/// let render = Pipeline::builder(&registry, "renderer")
///     .bulkhead(|b| b.max_concurrent(10))
///     .build()?;
///
/// let report = render.execute(|| Ok::<_, std::io::Error>("r-1 rendered"));
/// assert_eq!(report.unwrap(), "r-1 rendered");
/// assert_eq!(registry.bulkhead("renderer")?.max_concurrent(), 10);
/// # Ok::<(), bulkhead_registry::RegistryError>(())
/// ```
#[derive(Clone)]
pub struct Pipeline {
    id: Arc<str>,
    bulkhead: Option<Bulkhead>,
}

impl Pipeline {
    /// Starts building the pipeline `id` on `registry`.
    pub fn builder(registry: &Registry, id: impl Into<String>) -> PipelineBuilder<'_> {
        PipelineBuilder {
            registry,
            id: id.into(),
            bulkhead: None,
        }
    }

    /// The pipeline's id, which is also its policies' instance id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Runs `call` under the pipeline's policies, on this thread.
    ///
    /// With a `max_wait`, waiting for a slot blocks the thread: from async
    /// code, use [`execute_async`](Self::execute_async).
    ///
    /// `call` is `FnMut` because a retry may call it more than once.
    ///
    /// # Errors
    ///
    /// [`CallError::Rejected`] if a policy refused the call,
    /// [`CallError::Inner`] if the call ran and failed.
    pub fn execute<T, E, F>(&self, mut call: F) -> Result<T, CallError<E>>
    where
        F: FnMut() -> Result<T, E>,
    {
        let _permit = match &self.bulkhead {
            Some(bulkhead) => Some(bulkhead.enter().map_err(Rejection::from)?),
            None => None,
        };
        call().map_err(CallError::Inner)
    }

    /// Runs the future `call` makes under the pipeline's policies, without
    /// blocking a thread; the bulkhead slot is held until that future
    /// completes or is dropped.
    ///
    /// Nothing happens until the returned future is first polled.
    ///
    /// # Errors
    ///
    /// As for [`execute`](Self::execute).
    pub async fn execute_async<T, E, F, Fut>(&self, mut call: F) -> Result<T, CallError<E>>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, E>>,
    {
        let _permit = match &self.bulkhead {
            Some(bulkhead) => Some(bulkhead.enter_async().await.map_err(Rejection::from)?),
            None => None,
        };
        call().await.map_err(CallError::Inner)
    }
}

impl fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pipeline")
            .field("id", &self.id)
            .field("bulkhead", &self.bulkhead)
            .finish()
    }
}

/// Builds a [`Pipeline`]; see [`Pipeline::builder`].
///
/// Each policy method takes a closure over that policy's config builder. The
/// policies always compose in the same order, whatever order they are added
/// in.
#[must_use]
pub struct PipelineBuilder<'r> {
    registry: &'r Registry,
    id: String,
    bulkhead: Option<BulkheadConfigBuilder>,
}

impl PipelineBuilder<'_> {
    /// Adds a bulkhead (innermost, right around the call).
    pub fn bulkhead(
        mut self,
        f: impl FnOnce(BulkheadConfigBuilder) -> BulkheadConfigBuilder,
    ) -> Self {
        self.bulkhead = Some(f(self.bulkhead.take().unwrap_or_default()));
        self
    }

    /// Resolves every policy in the registry.
    ///
    /// # Errors
    ///
    /// REG-004, REG-008 or an ATR code, as for
    /// [`Registry::bulkhead_policy`].
    pub fn build(self) -> Result<Pipeline, RegistryError> {
        let source = format!("pipeline {:?}", self.id);
        let bulkhead = match &self.bulkhead {
            Some(spec) => Some(self.registry.bulkhead_policy(&self.id, &source, spec)?),
            None => None,
        };
        Ok(Pipeline {
            id: self.id.into(),
            bulkhead,
        })
    }
}

impl fmt::Debug for PipelineBuilder<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PipelineBuilder")
            .field("id", &self.id)
            .field("bulkhead", &self.bulkhead)
            .finish_non_exhaustive()
    }
}
