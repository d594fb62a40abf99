//! [`Pushback`]: an error that says when the call may be tried again.

use std::time::Duration;

use crate::rejection::CallError;

/// An error that says when the call may be tried again: a server's
/// `Retry-After`, gRPC's `grpc-retry-pushback-ms`, a quota's reset time.
///
/// A retry that sees it waits at least that long before the next attempt
/// (the longer of it and its own backoff), and gives up at once, publishing
/// `GaveUp`, when it asks for longer than the retry's `max_wait_interval`,
/// or for [`Duration::MAX`], which says "do not try again" (gRPC's negative
/// `grpc-retry-pushback-ms`); no retry budget is taken then. Methods with policy attributes read it
/// by themselves when their error type implements it; a
/// [`Policies`](crate::Policies) call reads it through
/// [`Classifier::pushback`](crate::Classifier::pushback).
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use bulkhead_core::{CallError, Pushback};
///
/// #[derive(Debug)]
/// enum ApiError {
///     Throttled { retry_after: Duration },
///     Broken,
/// }
///
/// impl Pushback for ApiError {
///     fn retry_after(&self) -> Option<Duration> {
///         match self {
///             ApiError::Throttled { retry_after } => Some(*retry_after),
///             ApiError::Broken => None,
///         }
///     }
/// }
///
/// let throttled = ApiError::Throttled { retry_after: Duration::from_secs(2) };
/// assert_eq!(throttled.retry_after(), Some(Duration::from_secs(2)));
/// let inner: CallError<ApiError> = CallError::Inner(throttled);
/// assert_eq!(inner.retry_after(), Some(Duration::from_secs(2)));
/// ```
pub trait Pushback {
    /// `Some(d)`: do not try again before `d` has passed;
    /// `Some(Duration::MAX)`: do not try again at all (the retry gives up,
    /// with or without a `max_wait_interval`); `None`: no wish (the
    /// retry's own backoff applies).
    fn retry_after(&self) -> Option<Duration>;
}

/// The call's own error's wish; a policy's rejection has none.
impl<E: Pushback> Pushback for CallError<E> {
    fn retry_after(&self) -> Option<Duration> {
        match self {
            CallError::Inner(error) => error.retry_after(),
            CallError::Rejected(_) => None,
        }
    }
}

impl<T: Pushback + ?Sized> Pushback for &T {
    fn retry_after(&self) -> Option<Duration> {
        (**self).retry_after()
    }
}

impl<T: Pushback + ?Sized> Pushback for Box<T> {
    fn retry_after(&self) -> Option<Duration> {
        (**self).retry_after()
    }
}
