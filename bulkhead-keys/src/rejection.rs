//! What `abort_on`, `ignore_on` and `on` lists name: [`RejectionKind`] and
//! [`RejectionKinds`], a set of them.

use std::fmt;

use crate::config::ConfigError;

/// The kind of a rejection (a call a policy refused to run), without its
/// instance: what `abort_on`, `ignore_on` and `on` lists name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RejectionKind {
    /// A full bulkhead (`Rejection::BulkheadFull`).
    BulkheadFull,
    /// An open circuit breaker (`Rejection::CircuitOpen`).
    CircuitOpen,
    /// A timeout (`Rejection::Timeout`).
    Timeout,
    /// No rate-limiter permit (`Rejection::RateLimited`).
    RateLimited,
    /// A fault a chaos policy injected (`Rejection::Injected`).
    Injected,
    /// No time left before the call's deadline
    /// (`Rejection::DeadlineExceeded`): never retried, whatever `abort_on`
    /// says.
    DeadlineExceeded,
}

impl RejectionKind {
    /// Every kind, in declaration order.
    pub const ALL: [RejectionKind; 6] = [
        RejectionKind::BulkheadFull,
        RejectionKind::CircuitOpen,
        RejectionKind::Timeout,
        RejectionKind::RateLimited,
        RejectionKind::Injected,
        RejectionKind::DeadlineExceeded,
    ];

    /// The kind's name as written in `abort_on` / `ignore_on` lists.
    pub const fn name(self) -> &'static str {
        match self {
            RejectionKind::BulkheadFull => "BulkheadFull",
            RejectionKind::CircuitOpen => "CircuitOpen",
            RejectionKind::Timeout => "Timeout",
            RejectionKind::RateLimited => "RateLimited",
            RejectionKind::Injected => "Injected",
            RejectionKind::DeadlineExceeded => "DeadlineExceeded",
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
    /// use bulkhead_keys::RejectionKind;
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
/// use bulkhead_keys::{RejectionKind, RejectionKinds};
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
        .with(RejectionKind::RateLimited)
        .with(RejectionKind::Injected)
        .with(RejectionKind::DeadlineExceeded);

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
