//! The attempts of a call through `Policies`: what each attempt is given
//! (a clone of every argument with `#[retry]`, `#[hedge]` or `#[fallback]`,
//! [`again_retry`] and the like; the arguments themselves without,
//! [`Once`]; a `&mut` delegate lent to one attempt at a time is core's
//! `Lend`)
//! and how a function's body runs as one ([`attempt`]).

use std::future::Future;

// The clones of an argument an attempt is given, one function for each
// attribute that calls the method more than once and one for several
// (`again_policies`): each asks for `Clone` through a trait of its own, so
// that the type checker's ATR-012 names the attribute written on the
// method. The traits' blanket impls are `do_not_recommend`: for a type
// that is `Clone` only if its parameters are (`Vec<T>`, `Option<T>`,
// tuples), the type checker reports the argument's type with their message
// instead of the parameter's missing `Clone`. Written out rather than made
// by a `macro_rules!`, so that the type checker's notes about these items
// show one line of this file, not the macro and its invocation.

/// An argument of a method or function with `#[retry]`, whose call needs
/// it more than once ([`again_retry`]).
#[diagnostic::on_unimplemented(
    message = "ATR-012: the argument type `{Self}` is not `Clone`: with #[retry], each attempt is given its own clone of every argument",
    label = "an argument of a method or function with #[retry] must be `Clone`",
    note = "pass a reference (`&T` is `Clone`), an `Arc<T>`, or a type that implements `Clone` (add `+ Clone` to an `impl Trait` or a generic parameter)"
)]
pub trait CalledAgainByRetry: Clone {}

#[diagnostic::do_not_recommend]
impl<T: Clone> CalledAgainByRetry for T {}

/// The clone of `argument` an attempt is given.
#[inline(always)]
pub fn again_retry<T: CalledAgainByRetry>(argument: &T) -> T {
    argument.clone()
}

/// An argument of a method or function with `#[hedge]`, whose call needs
/// it more than once ([`again_hedge`]).
#[diagnostic::on_unimplemented(
    message = "ATR-012: the argument type `{Self}` is not `Clone`: with #[hedge], each attempt (the first and every hedge) is given its own clone of every argument",
    label = "an argument of a method or function with #[hedge] must be `Clone`",
    note = "pass a reference (`&T` is `Clone`), an `Arc<T>`, or a type that implements `Clone` (add `+ Clone` to an `impl Trait` or a generic parameter)"
)]
pub trait CalledAgainByHedge: Clone {}

#[diagnostic::do_not_recommend]
impl<T: Clone> CalledAgainByHedge for T {}

/// The clone of `argument` an attempt is given.
#[inline(always)]
pub fn again_hedge<T: CalledAgainByHedge>(argument: &T) -> T {
    argument.clone()
}

/// An argument of a method or function with `#[fallback]`, whose call needs
/// it more than once ([`again_fallback`]).
#[diagnostic::on_unimplemented(
    message = "ATR-012: the argument type `{Self}` is not `Clone`: with #[fallback], the call is given its own clone of every argument, and the fallback method the arguments themselves",
    label = "an argument of a method with #[fallback] must be `Clone`",
    note = "pass a reference (`&T` is `Clone`), an `Arc<T>`, or a type that implements `Clone` (add `+ Clone` to an `impl Trait` or a generic parameter)"
)]
pub trait CalledAgainByFallback: Clone {}

#[diagnostic::do_not_recommend]
impl<T: Clone> CalledAgainByFallback for T {}

/// The clone of `argument` an attempt is given.
#[inline(always)]
pub fn again_fallback<T: CalledAgainByFallback>(argument: &T) -> T {
    argument.clone()
}

/// An argument of a method or function with several of `#[retry]`, `#[hedge]` and `#[fallback]`, whose call needs
/// it more than once ([`again_policies`]).
#[diagnostic::on_unimplemented(
    message = "ATR-012: the argument type `{Self}` is not `Clone`: with these policies, each attempt is given its own clone of every argument (and a fallback the arguments themselves)",
    label = "an argument of a method or function whose policies call it again must be `Clone`",
    note = "pass a reference (`&T` is `Clone`), an `Arc<T>`, or a type that implements `Clone` (add `+ Clone` to an `impl Trait` or a generic parameter)"
)]
pub trait CalledAgainByPolicies: Clone {}

#[diagnostic::do_not_recommend]
impl<T: Clone> CalledAgainByPolicies for T {}

/// The clone of `argument` an attempt is given.
#[inline(always)]
pub fn again_policies<T: CalledAgainByPolicies>(argument: &T) -> T {
    argument.clone()
}

/// Runs one attempt of a function's body, its result type `R` spelled out
/// so that the body's `?` knows what it converts into.
#[inline(always)]
pub fn attempt<R>(attempt: impl FnOnce() -> R) -> R {
    attempt()
}

/// The future of one attempt of an `async fn` body, its output type spelled
/// out (see [`attempt`]).
#[inline(always)]
pub fn attempt_async<R, F: Future<Output = R>>(attempt: F) -> F {
    attempt
}

/// A value taken by the only attempt of a call without `#[retry]`: the
/// receiver and the arguments, or the delegate's future, which the closure
/// `Policies` calls moves out.
#[derive(Debug)]
pub struct Once<T>(Option<T>);

impl<T> Once<T> {
    /// Holds `value` for the attempt.
    #[inline(always)]
    pub fn new(value: T) -> Self {
        Once(Some(value))
    }

    /// The value.
    ///
    /// # Panics
    ///
    /// If taken twice, which `Policies` without a retry never does: it makes
    /// one attempt.
    #[inline(always)]
    pub fn take(&mut self) -> T {
        match self.0.take() {
            Some(value) => value,
            None => taken_twice(),
        }
    }
}

#[cold]
#[inline(never)]
fn taken_twice() -> ! {
    unreachable!("a call without #[retry] made a second attempt")
}
