//! The attempts of a call through `Policies`: what each attempt is given
//! (a clone of every argument with `#[retry]`, `#[hedge]` or `#[fallback]`,
//! [`again_retry`] and the like; the arguments themselves without,
//! [`Once`]; a `&mut` delegate lent to one attempt at a time, [`Lend`])
//! and how a function's body runs as one ([`attempt`]).

use std::future::Future;
use std::sync::{Mutex, PoisonError};

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

/// The delegate of an async method taking `&mut self` with `#[retry]`, lent
/// to one attempt at a time: each attempt's future holds it (not a borrow of
/// the closure that made the future, which it could not outlive) and gives
/// it back when it completes or is dropped, before the next attempt starts.
#[derive(Debug)]
pub struct Lend<'a, T: ?Sized>(Mutex<Option<&'a mut T>>);

impl<'a, T: ?Sized> Lend<'a, T> {
    /// Lends `value` to the attempts.
    #[inline]
    pub fn new(value: &'a mut T) -> Self {
        Lend(Mutex::new(Some(value)))
    }

    /// `value`, for one attempt.
    ///
    /// # Panics
    ///
    /// If another attempt holds it, which never happens: `Policies` drops an
    /// attempt's future before it makes the next.
    #[inline]
    pub fn lend(&self) -> Lent<'_, 'a, T> {
        let value = self.0.lock().unwrap_or_else(PoisonError::into_inner).take();
        match value {
            Some(value) => Lent {
                home: &self.0,
                value: Some(value),
            },
            None => lent_twice(),
        }
    }
}

impl<'a, T: ?Sized> Lend<'a, T> {
    /// The value, once the attempts are over (for the fallback).
    ///
    /// # Panics
    ///
    /// If an attempt still holds it, which never happens: `Policies` has
    /// dropped every attempt's future when it returns.
    #[inline]
    pub fn into_inner(self) -> &'a mut T {
        match self.0.into_inner().unwrap_or_else(PoisonError::into_inner) {
            Some(value) => value,
            None => lent_twice(),
        }
    }
}

/// `&mut T` lent by a [`Lend`] to one attempt, given back on drop.
#[derive(Debug)]
pub struct Lent<'l, 'a, T: ?Sized> {
    home: &'l Mutex<Option<&'a mut T>>,
    value: Option<&'a mut T>,
}

impl<T: ?Sized> std::ops::Deref for Lent<'_, '_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        match &self.value {
            Some(value) => value,
            None => lent_twice(),
        }
    }
}

impl<T: ?Sized> std::ops::DerefMut for Lent<'_, '_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        match &mut self.value {
            Some(value) => value,
            None => lent_twice(),
        }
    }
}

impl<T: ?Sized> Drop for Lent<'_, '_, T> {
    fn drop(&mut self) {
        *self.home.lock().unwrap_or_else(PoisonError::into_inner) = self.value.take();
    }
}

#[cold]
#[inline(never)]
fn lent_twice() -> ! {
    unreachable!("two attempts of one call held the delegate at once")
}
