//! Every word of the attributes the macros read, as one const (serde_derive's
//! `internals/symbol.rs`): the words the macros look for among the user's
//! attributes and paths, and the policy attributes, each named by its
//! policy ([`policy`]). (`#[resilient]` is only ever found by the compiler,
//! through its entry point in `lib.rs`.)
//!
//! The policies' names and the keys of their attributes are
//! `bulkhead-keys`' tables: the attribute of a policy is its
//! name, a key is read by its name in the table, and the config builders
//! are called by the same names.

use std::fmt;

use bulkhead_keys::PolicyKind;
use syn::{Ident, Path};

/// A word of an attribute.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Symbol(&'static str);

/// The attribute of a policy: `#[circuit_breaker(...)]`.
pub(crate) const fn policy(kind: PolicyKind) -> Symbol {
    Symbol(kind.name())
}

/// The crate whose attributes these are, as the first segment of a path
/// such as `bulkhead::retry`.
pub(crate) const CRATE: Symbol = Symbol("bulkhead");

/// `#[resilient]`, found on a trait it already expands: given twice.
pub(crate) const RESILIENT: Symbol = Symbol("resilient");

/// `#[async_trait]` (the async-trait crate's, or a re-export of it such as
/// `tonic::async_trait`), and the lifetime it bounds its futures by,
/// `'async_trait`.
pub(crate) const ASYNC_TRAIT: Symbol = Symbol("async_trait");

/// The trait-variant crate, whose `#[trait_variant::make(..)]` ([`MAKE`])
/// makes a variant of a trait with `Send` futures.
pub(crate) const TRAIT_VARIANT: Symbol = Symbol("trait_variant");
/// See [`TRAIT_VARIANT`].
pub(crate) const MAKE: Symbol = Symbol("make");

/// The static a wrapped function keeps its policies in: a function whose
/// body names it was wrapped by a policy attribute (see [`APPLIED`]).
pub(crate) const POLICY_STATIC: Symbol = Symbol("__BULKHEAD_POLICY");

/// `#[cfg(..)]`.
pub(crate) const CFG: Symbol = Symbol("cfg");
/// `#[cfg_attr(predicate, ..)]`.
pub(crate) const CFG_ATTR: Symbol = Symbol("cfg_attr");

/// The argument of a policy attribute that another one on the same function
/// already applied: `#[retry(__bulkhead_applied)]` expands to the function
/// unchanged (see `ast::Func::applied`), if the function was wrapped (its
/// body names [`POLICY_STATIC`]) or reported (its body holds the errors);
/// anywhere else it is an unknown key.
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
