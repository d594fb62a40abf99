//! A call through `Policies` (a method or function with more than a
//! bulkhead): [`Via`] adapts the method's result type to what the policies
//! take and give, and [`ErrorPredicateFn`] checks `retry_if` /
//! `record_if`.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;

use bulkhead_core::{CallError, Classifier, ErrorPredicate};

use super::reject::Reject;

/// The result type `R` of a method whose call goes through [`Policies`](bulkhead_core::Policies),
/// as a value to call methods on: generated code calls them as
/// `(&via).method(..)` with [`ViaResult`] and [`ViaOther`] in scope.
///
/// For `R = Result<T, E>` (every method that compiles: [`rejecter`](super::rejecter) asks
/// for it, reporting ATR-004 once otherwise) method resolution picks
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

    /// `predicate`, a `retry_if` / `record_if` function, as a classifier
    /// takes it: judging the method's errors `E`.
    fn predicate<'a, P: ErrorPredicateFn<E>>(&self, predicate: &'a P) -> ErrorPredicate<'a, E>;

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
    fn predicate<'a, P: ErrorPredicateFn<E>>(&self, predicate: &'a P) -> ErrorPredicate<'a, E> {
        predicate
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

/// The error type of [`ViaOther`], which no value has.
#[derive(Debug)]
pub enum Unusable {}

/// See [`Via`]: a method returning anything else, which does not compile
/// (ATR-004); this only keeps the generated code from adding errors.
pub trait ViaOther<R> {
    /// See [`ViaResult::classifier`].
    fn classifier<'a>(&self) -> Classifier<'a, Unusable>;

    /// See [`ViaResult::predicate`].
    fn predicate<'a, P>(&self, predicate: &'a P) -> ErrorPredicate<'a, Unusable>;

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

    fn predicate<'a, P>(&self, _: &'a P) -> ErrorPredicate<'a, Unusable> {
        &|_| true
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

/// A classifier's predicate made of a `retry_if` / `record_if` function,
/// which must judge the method's errors.
#[diagnostic::on_unimplemented(
    message = "ATR-011: `{Self}` cannot judge the method's errors: `retry_if` and `record_if` name a function `fn(&{E}) -> bool` (`Send + Sync`), `{E}` being the method's error type",
    label = "expected a `fn(&{E}) -> bool`"
)]
pub trait ErrorPredicateFn<E>: Fn(&E) -> bool + Send + Sync {}

impl<E, P: Fn(&E) -> bool + Send + Sync> ErrorPredicateFn<E> for P {}
