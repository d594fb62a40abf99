//! What the wrapper `#[resilient]` generates calls: its fields hold their
//! policies in [`Unwind`], and its async methods pick with [`Defer`] when
//! the delegate's method is called. (Its `new` declares each method's
//! `PolicySpecs` with `Declarations::policies`.)

use std::fmt;
use std::marker::PhantomData;
use std::panic::{RefUnwindSafe, UnwindSafe};

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
