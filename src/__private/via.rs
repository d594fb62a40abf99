//! A call through `Policies` (a method or function with more than a
//! bulkhead): [`Via`] adapts the method's result type to what the policies
//! take and give, [`ErrorPredicateFn`] checks `retry_if` / `record_if`,
//! [`PushbackOf`] lets the retry read an error that implements `Pushback`,
//! and [`falls_back`] asks the method's fallback.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;

use bulkhead_core::{CallError, Classifier, ErrorPredicate, Policies, Pushback};

/// Whether the fallback of `policies` answers instead of `outcome` (the
/// wrapper then returns the delegate's fallback method, with the
/// arguments); publishes `Used` if it does. Never without a fallback.
#[inline(always)]
pub fn falls_back<T, E>(policies: &Policies, outcome: &Result<T, CallError<E>>) -> bool {
    match policies.fallback() {
        Some(fallback) => outcome.is_err() && fallback.answers(outcome),
        None => false,
    }
}

use super::keyed::KeyedClassify;
use super::reject::Reject;

/// The result type `R` of a method whose call goes through [`Policies`](bulkhead_core::Policies),
/// as a value to call methods on: generated code calls them as
/// `(&via).method(..)` with [`ViaResult`] and [`ViaOther`] in scope.
///
/// For `R = Result<T, E>` (every method that compiles: its rejecter,
/// [`rejecter_retry`](super::rejecter_retry) or another, asks for it,
/// reporting ATR-004 once otherwise) method resolution picks
/// [`ViaResult`], whose conversions are the identity: the call compiles to
/// what `Policies::call` does, no function pointer, no copy. For any other
/// `R` it falls back to [`ViaOther`], which lets the generated code type
/// check, so that the one ATR-004 is the only error.
pub struct Via<R>(PhantomData<fn() -> R>);

impl<R> Via<R> {
    /// The result type `R`.
    pub const NEW: Via<R> = Via(PhantomData);
}

impl<R> Clone for Via<R> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}

impl<R> Copy for Via<R> {}

impl<R> fmt::Debug for Via<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Via")
    }
}

/// See [`Via`]: a method returning `Result<T, E>`.
pub trait ViaResult<T, E> {
    /// A classifier of the method's errors, retrying and recording every
    /// error until `retry_if` / `record_if` narrow it.
    fn classifier<'a>(&self) -> Classifier<'a, E>;

    /// As [`classifier`](Self::classifier), for a method whose keyed
    /// bulkhead composes with other policies.
    fn keyed_classifier<'a>(&self) -> KeyedClassify<'a, E>;

    /// `predicate`, a `retry_if` / `record_if` function, to be judged
    /// against the method's errors `E` (see [`Judge`]).
    fn judge<'a, P>(&self, predicate: &'a P) -> Judge<'a, E, P>;

    /// An attempt's result, as the policies take it.
    fn split(&self, result: Result<T, E>) -> Result<T, E>;

    /// An attempt's future, as the policies take it.
    fn split_future<F: Future<Output = Result<T, E>>>(&self, future: F) -> F;

    /// The method's result: a rejection through `E: From<Rejection>`.
    fn finish(&self, result: Result<T, CallError<E>>, reject: Reject<Result<T, E>>)
    -> Result<T, E>;
}

impl<T, E> ViaResult<T, E> for Via<Result<T, E>> {
    #[inline(always)]
    fn classifier<'a>(&self) -> Classifier<'a, E> {
        Classifier::new()
    }

    #[inline(always)]
    fn keyed_classifier<'a>(&self) -> KeyedClassify<'a, E> {
        KeyedClassify::new()
    }

    #[inline(always)]
    fn judge<'a, P>(&self, predicate: &'a P) -> Judge<'a, E, P> {
        Judge(predicate, PhantomData)
    }

    #[inline(always)]
    fn split(&self, result: Result<T, E>) -> Result<T, E> {
        result
    }

    #[inline(always)]
    fn split_future<F: Future<Output = Result<T, E>>>(&self, future: F) -> F {
        future
    }

    #[inline(always)]
    fn finish(
        &self,
        result: Result<T, CallError<E>>,
        reject: Reject<Result<T, E>>,
    ) -> Result<T, E> {
        match result {
            Ok(value) => Ok(value),
            Err(CallError::Inner(error)) => Err(error),
            Err(CallError::Rejected(rejection)) => reject.rejected(rejection),
        }
    }
}

/// Whether the method's error type `E` says when to try again: generated
/// code calls `(&via).pushback(classifier)` with [`PushbackOf`] and
/// [`NoPushback`] in scope, where `E` is the method's own (concrete) error
/// type. Method resolution picks [`PushbackOf`] (on `Via<Result<T, E>>`,
/// found without autoref) when `E: Pushback`, whose classifier then reads
/// [`Pushback::retry_after`]; otherwise it falls back to [`NoPushback`]
/// (on `&Via<R>`, found with autoref), which leaves the classifier as it
/// is. No specialization: the choice is the method lookup's, made where
/// the error type is known.
pub trait PushbackOf<'a, E> {
    /// `classifier`, reading the errors' [`Pushback::retry_after`].
    fn pushback(&self, classifier: Classifier<'a, E>) -> Classifier<'a, E>;

    /// As [`pushback`](Self::pushback), for a call whose keyed bulkhead
    /// composes with other policies.
    fn keyed_pushback(&self, classify: KeyedClassify<'a, E>) -> KeyedClassify<'a, E>;
}

impl<'a, T, E: Pushback> PushbackOf<'a, E> for Via<Result<T, E>> {
    #[inline(always)]
    fn pushback(&self, classifier: Classifier<'a, E>) -> Classifier<'a, E> {
        classifier.pushback()
    }

    #[inline(always)]
    fn keyed_pushback(&self, classify: KeyedClassify<'a, E>) -> KeyedClassify<'a, E> {
        classify.pushback()
    }
}

/// See [`PushbackOf`]: an error type that does not implement `Pushback`
/// (or a method whose result is not a `Result`).
pub trait NoPushback<'a, E> {
    /// `classifier`, unchanged.
    fn pushback(&self, classifier: Classifier<'a, E>) -> Classifier<'a, E>;

    /// `classify`, unchanged.
    fn keyed_pushback(&self, classify: KeyedClassify<'a, E>) -> KeyedClassify<'a, E>;
}

impl<'a, R, E> NoPushback<'a, E> for &Via<R> {
    #[inline(always)]
    fn pushback(&self, classifier: Classifier<'a, E>) -> Classifier<'a, E> {
        classifier
    }

    #[inline(always)]
    fn keyed_pushback(&self, classify: KeyedClassify<'a, E>) -> KeyedClassify<'a, E> {
        classify
    }
}

/// The error type of [`ViaOther`], which no value has.
#[derive(Debug)]
pub enum Unusable {}

/// See [`Via`]: a method returning anything else, which does not compile
/// (ATR-004); this only keeps the generated code from adding errors.
pub trait ViaOther<R> {
    /// See [`ViaResult::classifier`].
    fn classifier<'a>(&self) -> Classifier<'a, Unusable>;

    /// See [`ViaResult::keyed_classifier`].
    fn keyed_classifier<'a>(&self) -> KeyedClassify<'a, Unusable>;

    /// See [`ViaResult::judge`].
    fn judge<P>(&self, predicate: &P) -> Unjudged;

    /// See [`ViaResult::split`].
    fn split(&self, result: R) -> Result<R, Unusable>;

    /// See [`ViaResult::split_future`].
    fn split_future<F: Future<Output = R>>(
        &self,
        future: F,
    ) -> impl Future<Output = Result<R, Unusable>>;

    /// See [`ViaResult::finish`].
    fn finish(&self, result: Result<R, CallError<Unusable>>, reject: Reject<R>) -> R;
}

impl<R> ViaOther<R> for &Via<R> {
    fn classifier<'a>(&self) -> Classifier<'a, Unusable> {
        Classifier::new()
    }

    fn keyed_classifier<'a>(&self) -> KeyedClassify<'a, Unusable> {
        KeyedClassify::new()
    }

    fn judge<P>(&self, _: &P) -> Unjudged {
        Unjudged
    }

    fn split(&self, result: R) -> Result<R, Unusable> {
        Ok(result)
    }

    async fn split_future<F: Future<Output = R>>(&self, future: F) -> Result<R, Unusable> {
        Ok(future.await)
    }

    fn finish(&self, result: Result<R, CallError<Unusable>>, reject: Reject<R>) -> R {
        match result {
            Ok(value) => value,
            Err(CallError::Inner(never)) => match never {},
            Err(CallError::Rejected(rejection)) => reject.rejected(rejection),
        }
    }
}

/// A `retry_if` / `record_if` function `P`, to be judged against the
/// method's errors `E`: generated code calls `(&judge).fits()` with
/// [`JudgeFits`] and [`JudgeMisfits`] in scope. Method resolution picks
/// [`JudgeFits`] for a `P: Fn(&E) -> bool + Send + Sync`, and falls back to
/// [`JudgeMisfits`] otherwise, whose bound [`ErrorPredicateFn`] never holds:
/// so that a function of the wrong arity, argument or return type is
/// ATR-011 over its path, never the type checker's E0593 or E0271.
pub struct Judge<'a, E, P>(&'a P, PhantomData<fn(&E)>);

impl<E, P> fmt::Debug for Judge<'_, E, P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Judge")
    }
}

/// See [`Judge`]: a function that judges the method's errors.
pub trait JudgeFits<'a, E> {
    /// The function, as a classifier takes it.
    fn fits(&self) -> ErrorPredicate<'a, E>;
}

impl<'a, E, P: Fn(&E) -> bool + Send + Sync> JudgeFits<'a, E> for Judge<'a, E, P> {
    #[inline(always)]
    fn fits(&self) -> ErrorPredicate<'a, E> {
        self.0
    }
}

/// See [`Judge`]: anything else, reported as ATR-011.
///
/// The bound is on the method, not on the implementation, so that method
/// resolution picks this one and then reports the bound.
pub trait JudgeMisfits<'a, E, P> {
    /// Never compiles: see [`ErrorPredicateFn`].
    fn fits(&self) -> ErrorPredicate<'a, E>
    where
        P: ErrorPredicateFn<E>;
}

impl<'a, E, P> JudgeMisfits<'a, E, P> for &Judge<'a, E, P> {
    fn fits(&self) -> ErrorPredicate<'a, E>
    where
        P: ErrorPredicateFn<E>,
    {
        unreachable!("ErrorPredicateFn has no implementation")
    }
}

/// The predicate of a method that does not return a `Result` (ATR-004,
/// reported once elsewhere): judges nothing, and adds no error.
#[derive(Debug)]
pub struct Unjudged;

impl Unjudged {
    /// A predicate that is never called.
    pub fn fits<'a>(&self) -> ErrorPredicate<'a, Unusable> {
        &|_| true
    }
}

/// What a `retry_if` / `record_if` function that does not fit is missing
/// (see [`Judge`]): implemented by nothing, so that its message is the
/// error.
#[diagnostic::on_unimplemented(
    message = "ATR-011: `{Self}` cannot judge the method's errors: `retry_if` and `record_if` name a function `fn(&{E}) -> bool` (`Send + Sync`), `{E}` being the method's error type",
    label = "expected a `fn(&{E}) -> bool`"
)]
pub trait ErrorPredicateFn<E> {}
