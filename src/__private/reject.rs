//! How a rejection becomes a generated method's result: [`rejecter`], the
//! one place generated code asks for `R: CallResult<Error: RejectionInto>`
//! at the method's return type (ATR-004 otherwise). Called by every method
//! and function a policy attribute wraps.

use std::fmt;

use bulkhead_core::{BulkheadFull, BulkheadPermit, CallOutcome, Rejection};

/// The return types of a method with a bulkhead: `Result<T, E>`, where
/// `E` must also be [`RejectionInto`].
///
/// Generated code asks for it at the method's return type, so that any
/// alias of `Result` works, and anything else is reported there with a code.
#[diagnostic::on_unimplemented(
    message = "ATR-004: `{Self}` cannot carry a bulkhead rejection: a method with #[bulkhead] must return `Result<T, E>` with `E: From<bulkhead::Rejection>`",
    label = "must be `Result<T, E>` with `E: From<bulkhead::Rejection>`",
    note = "the return type is read as written: if it is an alias of a future type, write the future type out (`impl Future<Output = ..>`, `Pin<Box<dyn Future<Output = ..>>>`) so that the call is wrapped as a future"
)]
pub trait CallResult: Sized {
    /// The `E` of `Result<T, E>`.
    type Error;

    /// The failed result.
    fn from_error(error: Self::Error) -> Self;

    /// How the call ended, for an adaptive bulkhead.
    fn outcome(&self) -> CallOutcome;
}

impl<T, E> CallResult for Result<T, E> {
    type Error = E;

    #[inline]
    fn from_error(error: E) -> Self {
        Err(error)
    }

    #[inline]
    fn outcome(&self) -> CallOutcome {
        CallOutcome::of(self)
    }
}

/// The error types of a method with a bulkhead: those a [`Rejection`]
/// converts into. A separate trait so that a missing conversion is reported
/// with its own coded message.
#[diagnostic::on_unimplemented(
    message = "ATR-004: the error type `{Self}` cannot hold a bulkhead rejection: implement `From<bulkhead::Rejection>` for it",
    label = "the error type of a method with #[bulkhead] must implement `From<bulkhead::Rejection>`",
    note = "if the error type is an associated type of the trait, add `From<bulkhead::Rejection>` to the associated type's bounds: `type Error: From<bulkhead::Rejection>;`"
)]
pub trait RejectionInto: Sized {
    /// Converts the rejection.
    fn from_rejection(rejection: Rejection) -> Self;
}

impl<E: From<Rejection>> RejectionInto for E {
    #[inline]
    fn from_rejection(rejection: Rejection) -> Self {
        E::from(rejection)
    }
}

/// How a rejection becomes the result `R` of a method with a bulkhead.
///
/// Made by [`rejecter`], the one place generated code asks for `R:
/// CallResult<Error: RejectionInto>` (at the method's return type), so that
/// a return type that cannot carry a rejection is reported once, however
/// many times the method enters its bulkhead.
///
/// Two function pointers, which Rust moves as a pair of scalars: an `async`
/// method's future holds it from the call to the first poll. Three (one
/// more for a bulkhead's own rejection) were written one by one and copied
/// by a 16-byte load, which waits for the stores to reach the cache (a
/// store-forwarding stall: 4 to 5 ns of the async wrapper's rejection;
/// BENCHMARKS.md).
pub struct Reject<R> {
    any: fn(Rejection) -> R,
    outcome: fn(&R) -> CallOutcome,
}

impl<R> Clone for Reject<R> {
    #[inline]
    fn clone(&self) -> Self {
        *self
    }
}

impl<R> Copy for Reject<R> {}

impl<R> fmt::Debug for Reject<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Reject")
    }
}

impl<R> Reject<R> {
    /// The result of a call rejected with `full`.
    #[inline]
    pub fn reject(self, full: BulkheadFull) -> R {
        (self.any)(Rejection::from(full))
    }

    /// The result of a call a policy refused with `rejection`.
    #[inline]
    pub fn rejected(self, rejection: Rejection) -> R {
        (self.any)(rejection)
    }

    /// Gives back the slot of a call that ended with `output`, telling an
    /// adaptive bulkhead how it ended.
    #[inline]
    pub fn release(self, mut permit: BulkheadPermit<'_>, output: &R) {
        permit.set_outcome((self.outcome)(output));
    }
}

/// The conversion of a rejection into the method's result `R`.
#[inline]
pub fn rejecter<R>() -> Reject<R>
where
    R: CallResult<Error: RejectionInto>,
{
    Reject {
        any: rejected::<R>,
        outcome: R::outcome,
    }
}

fn rejected<R>(rejection: Rejection) -> R
where
    R: CallResult<Error: RejectionInto>,
{
    R::from_error(R::Error::from_rejection(rejection))
}
