//! Every word of the attributes the macros read, as one const (serde_derive's
//! `internals/symbol.rs`): the policy attributes, and the words the macros
//! look for among the user's attributes and paths. (`#[resilient]` is only
//! ever found by the compiler, through its entry point in `lib.rs`.)
//!
//! The keys of each policy attribute are written once, as the fields of its
//! receiver in `policies.rs`: darling reads the keys by those names, and the
//! config builders are called by the same names.

use std::fmt;

use syn::{Ident, Path};

/// A word of an attribute.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Symbol(&'static str);

/// `#[bulkhead(...)]`.
pub(crate) const BULKHEAD: Symbol = Symbol("bulkhead");
/// `#[retry(...)]`.
pub(crate) const RETRY: Symbol = Symbol("retry");
/// `#[circuit_breaker(...)]`.
pub(crate) const CIRCUIT_BREAKER: Symbol = Symbol("circuit_breaker");
/// `#[timeout(...)]`.
pub(crate) const TIMEOUT: Symbol = Symbol("timeout");
/// `#[rate_limiter(...)]`.
pub(crate) const RATE_LIMITER: Symbol = Symbol("rate_limiter");

/// The crate whose attributes these are, as the first segment of a path
/// such as `bulkhead::retry`.
pub(crate) const CRATE: Symbol = Symbol("bulkhead");

/// `#[cfg(..)]`.
pub(crate) const CFG: Symbol = Symbol("cfg");
/// `#[cfg_attr(predicate, ..)]`.
pub(crate) const CFG_ATTR: Symbol = Symbol("cfg_attr");

/// The argument of a policy attribute that another one on the same function
/// already applied: `#[retry(__bulkhead_applied)]` expands to the function
/// unchanged (see `ast::Func::applied`).
pub(crate) const APPLIED: Symbol = Symbol("__bulkhead_applied");

impl Symbol {
    /// The word.
    pub(crate) const fn as_str(self) -> &'static str {
        self.0
    }
}

impl PartialEq<Symbol> for Ident {
    fn eq(&self, word: &Symbol) -> bool {
        self == word.0
    }
}

impl PartialEq<Symbol> for &Ident {
    fn eq(&self, word: &Symbol) -> bool {
        *self == word.0
    }
}

impl PartialEq<Symbol> for Path {
    fn eq(&self, word: &Symbol) -> bool {
        self.is_ident(word.0)
    }
}

impl PartialEq<Symbol> for &Path {
    fn eq(&self, word: &Symbol) -> bool {
        self.is_ident(word.0)
    }
}

impl PartialEq<Symbol> for str {
    fn eq(&self, word: &Symbol) -> bool {
        self == word.0
    }
}

impl fmt::Display for Symbol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}
