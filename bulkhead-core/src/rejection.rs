//! Why a call was not let through: [`Rejection`] and its kinds, and
//! [`CallError`], the error of a call made through a pipeline.
//!
//! All of these are small `Copy` values naming their instance by a
//! `&'static str`: building one allocates nothing and captures no backtrace,
//! so a rejection is cheap enough to be a normal outcome.

use std::fmt;

use crate::config::ConfigError;

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
}

/// The kind of a [`Rejection`], without its instance: what `abort_on` and
/// `ignore_on` lists name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RejectionKind {
    /// [`Rejection::BulkheadFull`].
    BulkheadFull,
    /// [`Rejection::CircuitOpen`].
    CircuitOpen,
    /// [`Rejection::Timeout`].
    Timeout,
    /// [`Rejection::RateLimited`].
    RateLimited,
}

impl RejectionKind {
    /// Every kind, in declaration order.
    pub const ALL: [RejectionKind; 4] = [
        RejectionKind::BulkheadFull,
        RejectionKind::CircuitOpen,
        RejectionKind::Timeout,
        RejectionKind::RateLimited,
    ];

    /// The kind's name as written in `abort_on` / `ignore_on` lists.
    pub const fn name(self) -> &'static str {
        match self {
            RejectionKind::BulkheadFull => "BulkheadFull",
            RejectionKind::CircuitOpen => "CircuitOpen",
            RejectionKind::Timeout => "Timeout",
            RejectionKind::RateLimited => "RateLimited",
        }
    }

    /// Parses a kind as written for `key`: its name alone (`Timeout`), or
    /// as a path, `RejectionKind::Timeout` (with any path before
    /// `RejectionKind`, such as `bulkhead::RejectionKind::Timeout`), as an
    /// attribute may write it.
    ///
    /// # Errors
    ///
    /// ATR-009 if `name` is not a kind's name.
    ///
    /// # Examples
    ///
    /// ```
    /// use bulkhead_core::RejectionKind;
    ///
    /// let timeout = RejectionKind::Timeout;
    /// assert_eq!(RejectionKind::parse("abort_on", "Timeout"), Ok(timeout));
    /// assert_eq!(RejectionKind::parse("abort_on", "RejectionKind::Timeout"), Ok(timeout));
    /// let err = RejectionKind::parse("abort_on", "Foo::Timeout").unwrap_err();
    /// assert_eq!(err.code(), "ATR-009");
    /// ```
    pub fn parse(key: &str, name: &str) -> Result<Self, ConfigError> {
        let written = name.trim();
        let bare = match written.rsplit_once("::") {
            Some((path, bare)) if path == "RejectionKind" || path.ends_with("::RejectionKind") => {
                bare
            }
            _ => written,
        };
        RejectionKind::ALL
            .into_iter()
            .find(|kind| kind.name() == bare)
            .ok_or_else(|| ConfigError::UnknownRejectionKind {
                key: key.to_owned(),
                value: written.to_owned(),
            })
    }

    const fn bit(self) -> u8 {
        1 << self as u8
    }
}

impl fmt::Display for RejectionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of [`RejectionKind`]s, as an `abort_on` or `ignore_on` list holds.
///
/// # Examples
///
/// ```
/// use bulkhead_core::{RejectionKind, RejectionKinds};
///
/// let kinds = RejectionKinds::EMPTY.with(RejectionKind::BulkheadFull);
/// assert!(kinds.contains(RejectionKind::BulkheadFull));
/// assert!(!kinds.contains(RejectionKind::Timeout));
/// assert_eq!(kinds.to_string(), "[BulkheadFull]");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct RejectionKinds(u8);

impl RejectionKinds {
    /// No kind.
    pub const EMPTY: RejectionKinds = RejectionKinds(0);
    /// Every kind.
    pub const ALL: RejectionKinds = RejectionKinds::EMPTY
        .with(RejectionKind::BulkheadFull)
        .with(RejectionKind::CircuitOpen)
        .with(RejectionKind::Timeout)
        .with(RejectionKind::RateLimited);

    /// This set and `kind`.
    #[must_use]
    pub const fn with(self, kind: RejectionKind) -> Self {
        RejectionKinds(self.0 | kind.bit())
    }

    /// Whether `kind` is in the set.
    #[inline]
    pub const fn contains(self, kind: RejectionKind) -> bool {
        self.0 & kind.bit() != 0
    }

    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The kinds in the set, in declaration order.
    pub fn iter(self) -> impl Iterator<Item = RejectionKind> {
        RejectionKind::ALL
            .into_iter()
            .filter(move |k| self.contains(*k))
    }
}

impl FromIterator<RejectionKind> for RejectionKinds {
    fn from_iter<I: IntoIterator<Item = RejectionKind>>(iter: I) -> Self {
        iter.into_iter()
            .fold(RejectionKinds::EMPTY, RejectionKinds::with)
    }
}

impl fmt::Display for RejectionKinds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, kind) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(kind.name())?;
        }
        f.write_str("]")
    }
}

impl Rejection {
    /// The id of the instance that rejected the call.
    pub const fn instance(&self) -> &'static str {
        match self {
            Rejection::BulkheadFull(r) => r.instance(),
            Rejection::CircuitOpen(r) => r.instance(),
            Rejection::Timeout(r) => r.instance(),
            Rejection::RateLimited(r) => r.instance(),
        }
    }

    /// Which policy rejected the call.
    pub const fn kind(&self) -> RejectionKind {
        match self {
            Rejection::BulkheadFull(_) => RejectionKind::BulkheadFull,
            Rejection::CircuitOpen(_) => RejectionKind::CircuitOpen,
            Rejection::Timeout(_) => RejectionKind::Timeout,
            Rejection::RateLimited(_) => RejectionKind::RateLimited,
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
