//! Why a call was not let through: [`Rejection`] and its kinds, and
//! [`CallError`], the error of a call made through a pipeline.
//!
//! All of these are small `Copy` values naming their instance by a
//! `&'static str`: building one allocates nothing and captures no backtrace,
//! so a rejection is cheap enough to be a normal outcome.

use std::fmt;

pub use bulkhead_keys::{RejectionKind, RejectionKinds};

macro_rules! rejection_kind {
    ($(#[$meta:meta])* $name:ident, $what:literal) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name {
            instance: &'static str,
        }

        impl $name {
            /// A rejection by the instance `instance`.
            ///
            /// `instance` is `'static` so that the rejection stays a plain
            /// copyable value; the policies hand out interned ids.
            pub const fn new(instance: &'static str) -> Self {
                $name { instance }
            }

            /// The id of the instance that rejected the call.
            pub const fn instance(&self) -> &'static str {
                self.instance
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, $what, self.instance)
            }
        }

        impl std::error::Error for $name {}
    };
}

rejection_kind!(
    /// The bulkhead had no free slot, and none came free within `max_wait`.
    BulkheadFull,
    "bulkhead {:?} is full"
);
rejection_kind!(
    /// The circuit breaker is open (or half-open with no trial call left).
    CircuitOpen,
    "circuit breaker {:?} is open"
);
rejection_kind!(
    /// The call did not complete within its timeout.
    CallTimeout,
    "call through {:?} timed out"
);
rejection_kind!(
    /// The rate limiter had no permit for this period, and none came within
    /// its `max_wait`.
    RateLimited,
    "rate limiter {:?} has no permit left"
);
rejection_kind!(
    /// A chaos policy injected a fault in place of the call (its `fault` is
    /// `error`).
    InjectedFault,
    "chaos {:?} injected a fault"
);
rejection_kind!(
    /// No time was left before the call's deadline (set by
    /// [`deadline::scope`](crate::deadline::scope) or
    /// [`deadline::with`](crate::deadline::with)): the call could not start
    /// before it (its instance: the policy that found no time left), or it
    /// ran and the deadline cut it (its instance: the timeout's).
    ///
    /// Never retried, whatever `abort_on` says: no time is left.
    DeadlineExceeded,
    "no time left before the call's deadline in {:?}"
);

/// A call that a policy refused to run (or, for a timeout, stopped waiting for).
///
/// Generated wrappers turn it into the method's own error type with
/// `From<Rejection>`; pipelines return it as [`CallError::Rejected`].
///
/// # Examples
///
/// ```
/// use bulkhead_core::{BulkheadFull, Rejection, RejectionKind};
///
/// let rejection = Rejection::from(BulkheadFull::new("thumbnails"));
/// assert_eq!(rejection.instance(), "thumbnails");
/// assert_eq!(rejection.kind(), RejectionKind::BulkheadFull);
/// assert_eq!(rejection.to_string(), r#"bulkhead "thumbnails" is full"#);
/// let boxed: Box<dyn std::error::Error + Send + Sync> = rejection.into();
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum Rejection {
    /// The bulkhead was full.
    #[error(transparent)]
    BulkheadFull(#[from] BulkheadFull),
    /// The circuit breaker was open.
    #[error(transparent)]
    CircuitOpen(#[from] CircuitOpen),
    /// The call timed out.
    #[error(transparent)]
    Timeout(#[from] CallTimeout),
    /// The rate limiter had no permit.
    #[error(transparent)]
    RateLimited(#[from] RateLimited),
    /// A chaos policy injected a fault.
    #[error(transparent)]
    Injected(#[from] InjectedFault),
    /// The call's deadline left no time.
    #[error(transparent)]
    DeadlineExceeded(#[from] DeadlineExceeded),
}

impl Rejection {
    /// The id of the instance that rejected the call.
    pub const fn instance(&self) -> &'static str {
        match self {
            Rejection::BulkheadFull(r) => r.instance(),
            Rejection::CircuitOpen(r) => r.instance(),
            Rejection::Timeout(r) => r.instance(),
            Rejection::RateLimited(r) => r.instance(),
            Rejection::Injected(r) => r.instance(),
            Rejection::DeadlineExceeded(r) => r.instance(),
        }
    }

    /// Which policy rejected the call.
    pub const fn kind(&self) -> RejectionKind {
        match self {
            Rejection::BulkheadFull(_) => RejectionKind::BulkheadFull,
            Rejection::CircuitOpen(_) => RejectionKind::CircuitOpen,
            Rejection::Timeout(_) => RejectionKind::Timeout,
            Rejection::RateLimited(_) => RejectionKind::RateLimited,
            Rejection::Injected(_) => RejectionKind::Injected,
            Rejection::DeadlineExceeded(_) => RejectionKind::DeadlineExceeded,
        }
    }
}

/// The error of a call made through a pipeline: a policy rejected it, or the
/// call itself failed.
///
/// # Examples
///
/// ```
/// use bulkhead_core::{BulkheadFull, CallError, Rejection};
///
/// let err: CallError<std::io::Error> = Rejection::from(BulkheadFull::new("reports")).into();
/// assert!(err.is_rejected());
/// assert_eq!(err.to_string(), r#"bulkhead "reports" is full"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError<E> {
    /// A policy did not let the call through (or stopped waiting for it).
    Rejected(Rejection),
    /// The call ran and returned this error.
    Inner(E),
}

impl<E> CallError<E> {
    /// The rejection, if a policy refused the call.
    pub fn rejection(&self) -> Option<&Rejection> {
        match self {
            CallError::Rejected(rejection) => Some(rejection),
            CallError::Inner(_) => None,
        }
    }

    /// Whether a policy refused the call.
    pub fn is_rejected(&self) -> bool {
        matches!(self, CallError::Rejected(_))
    }

    /// The call's own error, if it ran and failed.
    pub fn into_inner(self) -> Option<E> {
        match self {
            CallError::Rejected(_) => None,
            CallError::Inner(error) => Some(error),
        }
    }

    /// Converts both sides into one error type, for callers whose error
    /// already converts from [`Rejection`].
    pub fn flatten<F>(self) -> F
    where
        F: From<Rejection> + From<E>,
    {
        match self {
            CallError::Rejected(rejection) => F::from(rejection),
            CallError::Inner(error) => F::from(error),
        }
    }
}

impl<E> From<Rejection> for CallError<E> {
    fn from(rejection: Rejection) -> Self {
        CallError::Rejected(rejection)
    }
}

impl<E: fmt::Display> fmt::Display for CallError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Rejected(rejection) => rejection.fmt(f),
            CallError::Inner(error) => error.fmt(f),
        }
    }
}

/// Transparent: `Display` and `source` are those of the rejection or error
/// inside, so error reports do not print the same message twice.
impl<E: std::error::Error + 'static> std::error::Error for CallError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CallError::Rejected(rejection) => rejection.source(),
            CallError::Inner(error) => error.source(),
        }
    }
}
