//! The errors of a [`PushbackService`](super::PushbackService):
//! [`PushbackError`] and [`PushedBack`], the response that asked to wait.

use std::error::Error;
use std::fmt;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use bulkhead_core::Pushback;

/// A response that asked the client to wait before trying again (`429` or
/// `503` with `Retry-After`, or `grpc-retry-pushback-ms`), and how long.
///
/// `Send` and `Sync` when the body is `Send` (tonic's body is not `Sync`;
/// tower stacks box their errors as `Send + Sync`): the body is kept where
/// only [`into_response`](PushedBack::into_response) reaches it.
pub struct PushedBack<B> {
    retry_after: Duration,
    parts: http::response::Parts,
    body: Mutex<B>,
}

impl<B> PushedBack<B> {
    pub(super) fn new(retry_after: Duration, response: http::Response<B>) -> Self {
        let (parts, body) = response.into_parts();
        PushedBack {
            retry_after,
            parts,
            body: Mutex::new(body),
        }
    }

    /// How long the response asked to wait; [`Duration::MAX`] when it
    /// asked not to try again.
    pub fn retry_after(&self) -> Duration {
        self.retry_after
    }

    /// The response's status.
    pub fn status(&self) -> http::StatusCode {
        self.parts.status
    }

    /// The response's headers.
    pub fn headers(&self) -> &http::HeaderMap {
        &self.parts.headers
    }

    /// The response, for a caller who gives up and passes it on.
    pub fn into_response(self) -> http::Response<B> {
        // Nothing locks the body before this: it cannot be poisoned.
        let body = self
            .body
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        http::Response::from_parts(self.parts, body)
    }
}

impl<B> fmt::Debug for PushedBack<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PushedBack")
            .field("retry_after", &self.retry_after)
            .field("status", &self.parts.status)
            .finish_non_exhaustive()
    }
}

impl<B> fmt::Display for PushedBack<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let status = self.parts.status;
        if self.retry_after == Duration::MAX {
            write!(f, "the server answered {status} and asked not to retry")
        } else {
            write!(
                f,
                "the server answered {status} and asked to wait {:?}",
                self.retry_after
            )
        }
    }
}

impl<B> Error for PushedBack<B> {}

/// A retry waits [`PushedBack::retry_after`] before trying again.
impl<B> Pushback for PushedBack<B> {
    fn retry_after(&self) -> Option<Duration> {
        Some(self.retry_after)
    }
}

/// The error of a [`PushbackService`](super::PushbackService): the response
/// asked to wait, or the inner service failed.
pub enum PushbackError<B, E> {
    /// The response asked the client to wait.
    PushedBack(PushedBack<B>),
    /// The inner service failed.
    Inner(E),
}

impl<B, E> PushbackError<B, E> {
    /// How long the response asked to wait; `None` for the inner
    /// service's own error.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            PushbackError::PushedBack(pushed) => Some(pushed.retry_after),
            PushbackError::Inner(_) => None,
        }
    }

    /// The inner service's error, if it failed.
    pub fn into_inner(self) -> Option<E> {
        match self {
            PushbackError::PushedBack(_) => None,
            PushbackError::Inner(error) => Some(error),
        }
    }
}

/// A retry waits what the response asked; the inner service's own error
/// asks nothing (the retry's backoff applies). Give the error type to
/// `PipelineBuilder::pushback` for a pipeline to read it.
impl<B, E> Pushback for PushbackError<B, E> {
    fn retry_after(&self) -> Option<Duration> {
        PushbackError::retry_after(self)
    }
}

impl<B, E: fmt::Debug> fmt::Debug for PushbackError<B, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PushbackError::PushedBack(pushed) => f.debug_tuple("PushedBack").field(pushed).finish(),
            PushbackError::Inner(error) => f.debug_tuple("Inner").field(error).finish(),
        }
    }
}

impl<B, E: fmt::Display> fmt::Display for PushbackError<B, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PushbackError::PushedBack(pushed) => pushed.fmt(f),
            PushbackError::Inner(error) => error.fmt(f),
        }
    }
}

impl<B, E: Error + 'static> Error for PushbackError<B, E> {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            PushbackError::PushedBack(_) => None,
            PushbackError::Inner(error) => error.source(),
        }
    }
}
