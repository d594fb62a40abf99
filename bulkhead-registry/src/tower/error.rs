//! The errors of the services: [`ServiceError`], and [`Unavailable`], what a
//! refused request carries to the handler that answers 503; and
//! [`RetryNeedsReplay`], why a layer cannot be built (REG-012).

use std::error::Error;
use std::fmt;
use std::time::Duration;

use bulkhead_core::Rejection;

/// The error of a [`BulkheadService`](super::BulkheadService) or a
/// [`PipelineService`](super::PipelineService): a policy refused the request
/// (answer `503 Service Unavailable`), or the inner service failed.
///
/// Building one allocates nothing. `Display` and `source` are transparent for
/// the inner error; for a refusal, `source` is the [`Unavailable`], so
/// [`Unavailable::find`] finds it in a boxed error chain.
///
/// With an inner service that cannot fail (`E = Infallible`, as axum
/// handlers), the refusal is the only case and can be taken apart with a
/// plain `let`:
///
/// ```
/// use std::convert::Infallible;
/// use bulkhead_registry::tower::ServiceError;
///
/// fn status(error: ServiceError<Infallible>) -> (u16, u64) {
///     let ServiceError::Unavailable(unavailable) = error;
///     (503, unavailable.retry_after_secs())
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServiceError<E> {
    /// A policy refused the request: the inner service was not called (or,
    /// for a timeout, its response future was dropped).
    Unavailable(Unavailable),
    /// The inner service failed (in `poll_ready` or in its response future).
    Inner(E),
}

impl<E> ServiceError<E> {
    /// The refusal, if a policy refused the request.
    pub fn unavailable(&self) -> Option<&Unavailable> {
        match self {
            ServiceError::Unavailable(unavailable) => Some(unavailable),
            ServiceError::Inner(_) => None,
        }
    }

    /// The inner service's error, if it failed.
    pub fn into_inner(self) -> Option<E> {
        match self {
            ServiceError::Unavailable(_) => None,
            ServiceError::Inner(error) => Some(error),
        }
    }
}

impl<E: fmt::Display> fmt::Display for ServiceError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServiceError::Unavailable(unavailable) => unavailable.fmt(f),
            ServiceError::Inner(error) => error.fmt(f),
        }
    }
}

impl<E: Error + 'static> Error for ServiceError<E> {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            ServiceError::Unavailable(unavailable) => Some(unavailable),
            ServiceError::Inner(error) => error.source(),
        }
    }
}

/// A request a policy refused, and how long the client should wait before
/// trying again: what a `503 Service Unavailable` with a `Retry-After`
/// header says.
///
/// A small `Copy` value: building one allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Unavailable {
    rejection: Rejection,
    retry_after: Duration,
}

impl Unavailable {
    /// A refusal by `rejection`, with `retry_after` as the hint to clients.
    pub const fn new(rejection: Rejection, retry_after: Duration) -> Self {
        Unavailable {
            rejection,
            retry_after,
        }
    }

    /// Which policy refused the request, and its instance id.
    pub const fn rejection(&self) -> Rejection {
        self.rejection
    }

    /// How long clients should wait before trying again: the layer's
    /// `retry_after` (one second unless set), or, when the registry tracks
    /// sizing, the estimate from the refusing bulkhead's figures (see the
    /// [module docs](super#the-retry-after-hint)).
    pub const fn retry_after(&self) -> Duration {
        self.retry_after
    }

    /// [`retry_after`](Self::retry_after) in whole seconds, rounded up: the
    /// value of a `Retry-After` header (`delay-seconds`, RFC 9110 10.2.3).
    pub const fn retry_after_secs(&self) -> u64 {
        let secs = self.retry_after.as_secs();
        if self.retry_after.subsec_nanos() > 0 {
            secs.saturating_add(1)
        } else {
            secs
        }
    }

    /// The first [`Unavailable`] in `error`'s chain of sources (`error`
    /// included): for handlers that receive a boxed error, as
    /// `tower::BoxError` stacks produce.
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_core::{BulkheadFull, Rejection};
    /// use bulkhead_registry::tower::{ServiceError, Unavailable};
    ///
    /// let refused = Unavailable::new(BulkheadFull::new("reports").into(), Duration::from_secs(2));
    /// let boxed: Box<dyn std::error::Error + Send + Sync> =
    ///     Box::new(ServiceError::<std::io::Error>::Unavailable(refused));
    /// assert_eq!(Unavailable::find(&*boxed), Some(&refused));
    /// ```
    pub fn find<'e>(error: &'e (dyn Error + 'static)) -> Option<&'e Unavailable> {
        std::iter::successors(Some(error), |&error| error.source())
            .find_map(|error| error.downcast_ref::<Unavailable>())
    }
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "service unavailable: {}", self.rejection)
    }
}

impl Error for Unavailable {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&self.rejection)
    }
}

/// A pipeline that retries or hedges, given to [`PipelineLayer::new`],
/// which sends each request only once (REG-012): a second attempt needs a
/// copy of the request, so build the layer with
/// [`PipelineLayer::with_replay`].
///
/// [`code`](RetryNeedsReplay::code) is `"REG-012"`, and `Display` starts
/// with it.
///
/// [`PipelineLayer::new`]: super::PipelineLayer::new
/// [`PipelineLayer::with_replay`]: super::PipelineLayer::with_replay
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "REG-012: pipeline {pipeline:?} {sends_again}, and a request can be sent only once: use PipelineLayer::with_replay to copy it for each attempt"
)]
pub struct RetryNeedsReplay {
    pipeline: String,
    /// `retries` or `hedges`.
    sends_again: &'static str,
}

impl RetryNeedsReplay {
    pub(super) fn new(pipeline: &str, hedges: bool) -> Self {
        RetryNeedsReplay {
            pipeline: pipeline.to_owned(),
            sends_again: if hedges { "hedges" } else { "retries" },
        }
    }

    /// The id of the pipeline that retries or hedges.
    pub fn pipeline(&self) -> &str {
        &self.pipeline
    }

    /// The error's code, `"REG-012"`.
    pub fn code(&self) -> &'static str {
        "REG-012"
    }
}
