//! What the wrapper `#[resilient]` generates calls: its fields hold their
//! policies in [`Unwind`], and its async methods pick with [`Defer`] when
//! the delegate's method is called. (Its `new` declares each method's
//! `PolicySpecs` with `Declarations::policies`.)

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::panic::{RefUnwindSafe, UnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

/// A type that implements the standard library's supertraits a
/// `#[resilient]` trait may have, and nothing else: the wrapper checks
/// with it that a supertrait named `Debug` or `Clone` is the standard
/// library's.
#[derive(Clone, Copy, Debug)]
pub struct SupertraitProbe;

/// A field of the wrapper: a method's `Bulkhead` or `Policies`, unwind
/// safe, so that the wrapper is `UnwindSafe` / `RefUnwindSafe` whenever its
/// delegate is, and a trait with those supertraits can be wrapped.
///
/// The policies keep a consistent state across a panic of the call they
/// run: a slot or permit is given back by its guard's `drop`, their
/// counters are atomics, and a lock they take is never held while the call
/// runs. Only their clock, a `dyn Clock` without these bounds, keeps the
/// compiler from seeing it.
#[derive(Clone)]
pub struct Unwind<T>(pub T);

impl<T> UnwindSafe for Unwind<T> {}

impl<T> RefUnwindSafe for Unwind<T> {}

impl<T: fmt::Debug> fmt::Debug for Unwind<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Picks, in the generic context of a wrapper's method, when the delegate's
/// method is called: inside the wrapper's future if `T` (what that future
/// holds until it has a slot: the bulkhead, the receiver, the arguments) is
/// `Send`, at once otherwise.
///
/// Generated code calls `(&Defer::of(&input)).pick(input, in_future,
/// at_once)` with both traits below in scope. Method resolution tries
/// [`CallInFutureIfSend`], implemented for `Defer<T>` when `T: Send`, before
/// auto-referencing to [`CallAtOnce`], implemented for `&Defer<T>`: the
/// type checker decides, with exactly the bounds the trait gives (`&D` is
/// `Send` only if the trait has a `Sync` supertrait, an argument of a
/// generic type only if it is bounded by `Send`).
pub struct Defer<T>(PhantomData<fn() -> T>);

impl<T> Defer<T> {
    /// The choice for a future that would hold `input`.
    #[inline]
    pub fn of(input: &T) -> Self {
        let _ = input;
        Defer(PhantomData)
    }
}

impl<T> fmt::Debug for Defer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Defer")
    }
}

/// See [`Defer`]: the call in the future, chosen when `T: Send`.
pub trait CallInFutureIfSend<T> {
    /// `in_future(input)`.
    fn pick<L, E, FL, FE>(&self, input: T, in_future: L, at_once: E) -> FL
    where
        L: FnOnce(T) -> FL,
        E: FnOnce(T) -> FE;
}

impl<T: Send> CallInFutureIfSend<T> for Defer<T> {
    #[inline]
    fn pick<L, E, FL, FE>(&self, input: T, in_future: L, _: E) -> FL
    where
        L: FnOnce(T) -> FL,
        E: FnOnce(T) -> FE,
    {
        in_future(input)
    }
}

/// See [`Defer`]: the call at once, chosen otherwise.
pub trait CallAtOnce<T> {
    /// `at_once(input)`.
    fn pick<L, E, FL, FE>(&self, input: T, in_future: L, at_once: E) -> FE
    where
        L: FnOnce(T) -> FL,
        E: FnOnce(T) -> FE;
}

impl<T> CallAtOnce<T> for &Defer<T> {
    #[inline]
    fn pick<L, E, FL, FE>(&self, input: T, _: L, at_once: E) -> FE
    where
        L: FnOnce(T) -> FL,
        E: FnOnce(T) -> FE,
    {
        at_once(input)
    }
}

/// See [`Defer`]: the future of a method with `#[retry]`, `#[hedge]` or
/// `#[fallback]` declared `Send`, chosen when what it holds across its
/// attempts (`T`: the policies, the receiver, the arguments) is `Send`.
///
/// Generated code calls one of the `held_by_..` checks, the one of the
/// attribute that calls the method again (`held_by_policies` for several),
/// so that the error of [`AttemptsHeldNotSend`]'s names it.
pub trait AttemptsHeldSend<T> {
    /// Nothing to check.
    fn held_by_retry(&self) {}

    /// Nothing to check.
    fn held_by_hedge(&self) {}

    /// Nothing to check.
    fn held_by_fallback(&self) {}

    /// Nothing to check.
    fn held_by_policies(&self) {}

    /// `attempts(input)`, the future.
    fn attempts<L, F>(&self, input: T, attempts: L) -> F
    where
        L: FnOnce(T) -> F;
}

impl<T: Send> AttemptsHeldSend<T> for Defer<T> {
    #[inline]
    fn attempts<L, F>(&self, input: T, attempts: L) -> F
    where
        L: FnOnce(T) -> F,
    {
        attempts(input)
    }
}

/// See [`Defer`]: chosen when what the future would hold is not `Send`,
/// which the bound of its check reports (ATR-007); the future it returns is
/// never made.
pub trait AttemptsHeldNotSend<T> {
    /// Does not compile: see [`HeldByRetry`].
    fn held_by_retry(&self)
    where
        T: HeldByRetry,
    {
    }

    /// Does not compile: see [`HeldByHedge`].
    fn held_by_hedge(&self)
    where
        T: HeldByHedge,
    {
    }

    /// Does not compile: see [`HeldByFallback`].
    fn held_by_fallback(&self)
    where
        T: HeldByFallback,
    {
    }

    /// Does not compile: see [`HeldByPolicies`].
    fn held_by_policies(&self)
    where
        T: HeldByPolicies,
    {
    }

    /// A future that is never made, standing for the one that cannot be
    /// `Send`, so that the check's error is the only one.
    fn attempts<L, F>(&self, input: T, attempts: L) -> NeverReady<F::Output>
    where
        L: FnOnce(T) -> F,
        F: Future;
}

impl<T> AttemptsHeldNotSend<T> for &Defer<T> {
    fn attempts<L, F>(&self, _: T, _: L) -> NeverReady<F::Output>
    where
        L: FnOnce(T) -> F,
        F: Future,
    {
        NeverReady(PhantomData)
    }
}

/// What a `Send` future of a method with `#[retry]` holds across its
/// attempts, when it is not `Send`: implemented by nothing, so that its
/// message is the error.
#[diagnostic::on_unimplemented(
    message = "ATR-007: #[retry] cannot make this method's `Send` future: each attempt calls the delegate again from inside the future, which holds the receiver and the arguments across attempts, and they are not all `Send` (`{Self}`: the policies, the receiver, the arguments)",
    label = "declared `Send`, but #[retry] holds what is not `Send` in this future",
    note = "for a method taking `&self`, add `Sync` to the trait's supertraits (`trait Service: Sync`); for `&mut self`, add `Send`; bound the generic and associated types of the arguments by `Send`"
)]
pub trait HeldByRetry {}

/// What a `Send` future of a method with `#[hedge]` holds across its
/// attempts, when it is not `Send`: implemented by nothing, so that its
/// message is the error.
#[diagnostic::on_unimplemented(
    message = "ATR-007: #[hedge] cannot make this method's `Send` future: each attempt calls the delegate from inside the future, which holds the receiver and the arguments while attempts run, and they are not all `Send` (`{Self}`: the policies, the receiver, the arguments)",
    label = "declared `Send`, but #[hedge] holds what is not `Send` in this future",
    note = "for a method taking `&self`, add `Sync` to the trait's supertraits (`trait Service: Sync`); for `&mut self`, add `Send`; bound the generic and associated types of the arguments by `Send`"
)]
pub trait HeldByHedge {}

/// What a `Send` future of a method with `#[fallback]` holds across its
/// attempts, when it is not `Send`: implemented by nothing, so that its
/// message is the error.
#[diagnostic::on_unimplemented(
    message = "ATR-007: #[fallback] cannot make this method's `Send` future: the fallback method is called from inside the future, after the call, so the future holds the receiver and the arguments until then, and they are not all `Send` (`{Self}`: the policies, the receiver, the arguments)",
    label = "declared `Send`, but #[fallback] holds what is not `Send` in this future",
    note = "for a method taking `&self`, add `Sync` to the trait's supertraits (`trait Service: Sync`); for `&mut self`, add `Send`; bound the generic and associated types of the arguments by `Send`"
)]
pub trait HeldByFallback {}

/// What a `Send` future of a method with several of `#[retry]`, `#[hedge]` and `#[fallback]` holds across its
/// attempts, when it is not `Send`: implemented by nothing, so that its
/// message is the error.
#[diagnostic::on_unimplemented(
    message = "ATR-007: the policies of this method cannot make its `Send` future: they call the delegate again (or its fallback method) from inside the future, which holds the receiver and the arguments across attempts, and they are not all `Send` (`{Self}`: the policies, the receiver, the arguments)",
    label = "declared `Send`, but the policies hold what is not `Send` in this future",
    note = "for a method taking `&self`, add `Sync` to the trait's supertraits (`trait Service: Sync`); for `&mut self`, add `Send`; bound the generic and associated types of the arguments by `Send`"
)]
pub trait HeldByPolicies {}

/// The future of [`AttemptsHeldNotSend`], in code that does not compile.
pub struct NeverReady<O>(PhantomData<fn() -> O>);

impl<O> Future for NeverReady<O> {
    type Output = O;

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<O> {
        Poll::Pending
    }
}

impl<O> fmt::Debug for NeverReady<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("NeverReady")
    }
}
