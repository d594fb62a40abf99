//! How a rejection becomes a generated method's result: the rejecters
//! ([`rejecter_bulkhead`], [`rejecter_retry`], .., [`rejecter_policies`]),
//! the one place generated code asks for `R: CallResult<Error:
//! RejectionInto>` at the method's return type (ATR-004 otherwise, naming
//! the method's attribute). Called by every method and function a policy
//! attribute wraps.

use std::fmt;

use bulkhead_core::{BulkheadFull, BulkheadPermit, CallOutcome, Rejection};

/// The return types of a method under policies: `Result<T, E>`, where `E`
/// must also be [`RejectionInto`].
///
/// Generated code asks for it at the method's return type, so that any
/// alias of `Result` works, and anything else is reported there with a
/// code, through the checks of the rejecter it calls (which name the
/// method's attribute); this message is theirs without the attribute.
#[diagnostic::on_unimplemented(
    message = "ATR-004: `{Self}` cannot carry a rejection: a method or function with policy attributes must return `Result<T, E>` with `E: From<bulkhead::Rejection>`",
    label = "must be `Result<T, E>` with `E: From<bulkhead::Rejection>`"
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

/// The error types of a method under policies: those a [`Rejection`]
/// converts into. A separate trait so that a missing conversion is reported
/// with its own coded message (through the rejecters' checks, see
/// [`CallResult`]).
#[diagnostic::on_unimplemented(
    message = "ATR-004: the error type `{Self}` cannot hold a rejection: implement `From<bulkhead::Rejection>` for it",
    label = "the error type of a method or function with policy attributes must implement `From<bulkhead::Rejection>`"
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

/// How a rejection becomes the result `R` of a method under policies.
///
/// Made by a rejecter ([`rejecter_bulkhead`], ..), the one place generated
/// code asks for `R: CallResult<Error: RejectionInto>` (at the method's
/// return type), so that a return type that cannot carry a rejection is
/// reported once, however many times the method enters its bulkhead.
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
    #[inline(always)]
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
        // Only a timed slot keeps it: the pointer is called only then,
        // where it is a pointer LLVM cannot see through (`enter_then`).
        if permit.keeps_outcome() {
            permit.set_outcome((self.outcome)(output));
        }
    }
}

/// The conversion of a rejection into the method's result `R`, for the
/// rejecters below, whose bounds imply its own.
#[inline]
fn rejecter<R>() -> Reject<R>
where
    R: CallResult<Error: RejectionInto>,
{
    Reject {
        any: rejected::<R>,
        outcome: R::outcome,
    }
}

// The rejecters, one for each attribute a method or function may have
// alone and one for several (`rejecter_policies`): each asks for `R:
// CallResult<Error: RejectionInto>` through two traits of its own, so that
// the type checker's ATR-004 names the attribute written on the method. A
// return type that is not a `Result` fails the first (`ResultFor..<E>`,
// implemented for `Result<T, E>` only); an error type `E` without
// `From<Rejection>` fails the second (`ErrorFor..`), whose message the type
// checker gives with the missing `From<Rejection>` as its help. Written out
// rather than made by a `macro_rules!`, so that the type checker's notes
// about these items show one line of this file, not the macro and its
// invocation.

/// The return types of a method or function with `#[bulkhead]`
/// ([`rejecter_bulkhead`]): `Result<T, E>`.
#[diagnostic::on_unimplemented(
    message = "ATR-004: `{Self}` cannot carry a rejection: a method or function with #[bulkhead] must return `Result<T, E>` with `E: From<bulkhead::Rejection>`",
    label = "must be `Result<T, E>` with `E: From<bulkhead::Rejection>`",
    note = "the return type is read as written: if it is an alias of a future type, write the future type out (`impl Future<Output = ..>`, `Pin<Box<dyn Future<Output = ..>>>`) so that the call is wrapped as a future"
)]
pub trait ResultForBulkhead<E>: CallResult<Error = E> {}

impl<T, E> ResultForBulkhead<E> for Result<T, E> {}

/// The error types of a method or function with `#[bulkhead]`
/// ([`rejecter_bulkhead`]): those a [`Rejection`] converts into.
#[diagnostic::on_unimplemented(
    message = "ATR-004: the error type `{Self}` cannot hold a rejection: implement `From<bulkhead::Rejection>` for it",
    label = "the error type of a method or function with #[bulkhead] must implement `From<bulkhead::Rejection>`",
    note = "if the error type is an associated type of the trait, add `From<bulkhead::Rejection>` to the associated type's bounds: `type Error: From<bulkhead::Rejection>;`"
)]
pub trait ErrorForBulkhead: RejectionInto {}

impl<E: From<Rejection>> ErrorForBulkhead for E {}

/// The conversion of a rejection into the result `R` of a method or
/// function with `#[bulkhead]`.
#[inline]
pub fn rejecter_bulkhead<R: ResultForBulkhead<E>, E: ErrorForBulkhead>() -> Reject<R> {
    rejecter::<R>()
}

/// The return types of a method or function with `#[retry]`
/// ([`rejecter_retry`]): `Result<T, E>`.
#[diagnostic::on_unimplemented(
    message = "ATR-004: `{Self}` cannot carry a rejection: a method or function with #[retry] must return `Result<T, E>` with `E: From<bulkhead::Rejection>`",
    label = "must be `Result<T, E>` with `E: From<bulkhead::Rejection>`",
    note = "the return type is read as written: if it is an alias of a future type, write the future type out (`impl Future<Output = ..>`, `Pin<Box<dyn Future<Output = ..>>>`) so that the call is wrapped as a future"
)]
pub trait ResultForRetry<E>: CallResult<Error = E> {}

impl<T, E> ResultForRetry<E> for Result<T, E> {}

/// The error types of a method or function with `#[retry]`
/// ([`rejecter_retry`]): those a [`Rejection`] converts into.
#[diagnostic::on_unimplemented(
    message = "ATR-004: the error type `{Self}` cannot hold a rejection: implement `From<bulkhead::Rejection>` for it",
    label = "the error type of a method or function with #[retry] must implement `From<bulkhead::Rejection>`",
    note = "if the error type is an associated type of the trait, add `From<bulkhead::Rejection>` to the associated type's bounds: `type Error: From<bulkhead::Rejection>;`"
)]
pub trait ErrorForRetry: RejectionInto {}

impl<E: From<Rejection>> ErrorForRetry for E {}

/// The conversion of a rejection into the result `R` of a method or
/// function with `#[retry]`.
#[inline]
pub fn rejecter_retry<R: ResultForRetry<E>, E: ErrorForRetry>() -> Reject<R> {
    rejecter::<R>()
}

/// The return types of a method or function with `#[circuit_breaker]`
/// ([`rejecter_circuit_breaker`]): `Result<T, E>`.
#[diagnostic::on_unimplemented(
    message = "ATR-004: `{Self}` cannot carry a rejection: a method or function with #[circuit_breaker] must return `Result<T, E>` with `E: From<bulkhead::Rejection>`",
    label = "must be `Result<T, E>` with `E: From<bulkhead::Rejection>`",
    note = "the return type is read as written: if it is an alias of a future type, write the future type out (`impl Future<Output = ..>`, `Pin<Box<dyn Future<Output = ..>>>`) so that the call is wrapped as a future"
)]
pub trait ResultForCircuitBreaker<E>: CallResult<Error = E> {}

impl<T, E> ResultForCircuitBreaker<E> for Result<T, E> {}

/// The error types of a method or function with `#[circuit_breaker]`
/// ([`rejecter_circuit_breaker`]): those a [`Rejection`] converts into.
#[diagnostic::on_unimplemented(
    message = "ATR-004: the error type `{Self}` cannot hold a rejection: implement `From<bulkhead::Rejection>` for it",
    label = "the error type of a method or function with #[circuit_breaker] must implement `From<bulkhead::Rejection>`",
    note = "if the error type is an associated type of the trait, add `From<bulkhead::Rejection>` to the associated type's bounds: `type Error: From<bulkhead::Rejection>;`"
)]
pub trait ErrorForCircuitBreaker: RejectionInto {}

impl<E: From<Rejection>> ErrorForCircuitBreaker for E {}

/// The conversion of a rejection into the result `R` of a method or
/// function with `#[circuit_breaker]`.
#[inline]
pub fn rejecter_circuit_breaker<R: ResultForCircuitBreaker<E>, E: ErrorForCircuitBreaker>()
-> Reject<R> {
    rejecter::<R>()
}

/// The return types of a method or function with `#[timeout]`
/// ([`rejecter_timeout`]): `Result<T, E>`.
#[diagnostic::on_unimplemented(
    message = "ATR-004: `{Self}` cannot carry a rejection: a method or function with #[timeout] must return `Result<T, E>` with `E: From<bulkhead::Rejection>`",
    label = "must be `Result<T, E>` with `E: From<bulkhead::Rejection>`",
    note = "the return type is read as written: if it is an alias of a future type, write the future type out (`impl Future<Output = ..>`, `Pin<Box<dyn Future<Output = ..>>>`) so that the call is wrapped as a future"
)]
pub trait ResultForTimeout<E>: CallResult<Error = E> {}

impl<T, E> ResultForTimeout<E> for Result<T, E> {}

/// The error types of a method or function with `#[timeout]`
/// ([`rejecter_timeout`]): those a [`Rejection`] converts into.
#[diagnostic::on_unimplemented(
    message = "ATR-004: the error type `{Self}` cannot hold a rejection: implement `From<bulkhead::Rejection>` for it",
    label = "the error type of a method or function with #[timeout] must implement `From<bulkhead::Rejection>`",
    note = "if the error type is an associated type of the trait, add `From<bulkhead::Rejection>` to the associated type's bounds: `type Error: From<bulkhead::Rejection>;`"
)]
pub trait ErrorForTimeout: RejectionInto {}

impl<E: From<Rejection>> ErrorForTimeout for E {}

/// The conversion of a rejection into the result `R` of a method or
/// function with `#[timeout]`.
#[inline]
pub fn rejecter_timeout<R: ResultForTimeout<E>, E: ErrorForTimeout>() -> Reject<R> {
    rejecter::<R>()
}

/// The return types of a method or function with `#[chaos]`
/// ([`rejecter_chaos`]): `Result<T, E>`.
#[diagnostic::on_unimplemented(
    message = "ATR-004: `{Self}` cannot carry a rejection: a method or function with #[chaos] must return `Result<T, E>` with `E: From<bulkhead::Rejection>`",
    label = "must be `Result<T, E>` with `E: From<bulkhead::Rejection>`",
    note = "the return type is read as written: if it is an alias of a future type, write the future type out (`impl Future<Output = ..>`, `Pin<Box<dyn Future<Output = ..>>>`) so that the call is wrapped as a future"
)]
pub trait ResultForChaos<E>: CallResult<Error = E> {}

impl<T, E> ResultForChaos<E> for Result<T, E> {}

/// The error types of a method or function with `#[chaos]`
/// ([`rejecter_chaos`]): those a [`Rejection`] converts into (an injected
/// fault is `Rejection::Injected`).
#[diagnostic::on_unimplemented(
    message = "ATR-004: the error type `{Self}` cannot hold a rejection: implement `From<bulkhead::Rejection>` for it",
    label = "the error type of a method or function with #[chaos] must implement `From<bulkhead::Rejection>`",
    note = "if the error type is an associated type of the trait, add `From<bulkhead::Rejection>` to the associated type's bounds: `type Error: From<bulkhead::Rejection>;`"
)]
pub trait ErrorForChaos: RejectionInto {}

impl<E: From<Rejection>> ErrorForChaos for E {}

/// The conversion of a rejection into the result `R` of a method or
/// function with `#[chaos]`.
#[inline]
pub fn rejecter_chaos<R: ResultForChaos<E>, E: ErrorForChaos>() -> Reject<R> {
    rejecter::<R>()
}

/// The return types of a method or function with `#[rate_limiter]`
/// ([`rejecter_rate_limiter`]): `Result<T, E>`.
#[diagnostic::on_unimplemented(
    message = "ATR-004: `{Self}` cannot carry a rejection: a method or function with #[rate_limiter] must return `Result<T, E>` with `E: From<bulkhead::Rejection>`",
    label = "must be `Result<T, E>` with `E: From<bulkhead::Rejection>`",
    note = "the return type is read as written: if it is an alias of a future type, write the future type out (`impl Future<Output = ..>`, `Pin<Box<dyn Future<Output = ..>>>`) so that the call is wrapped as a future"
)]
pub trait ResultForRateLimiter<E>: CallResult<Error = E> {}

impl<T, E> ResultForRateLimiter<E> for Result<T, E> {}

/// The error types of a method or function with `#[rate_limiter]`
/// ([`rejecter_rate_limiter`]): those a [`Rejection`] converts into.
#[diagnostic::on_unimplemented(
    message = "ATR-004: the error type `{Self}` cannot hold a rejection: implement `From<bulkhead::Rejection>` for it",
    label = "the error type of a method or function with #[rate_limiter] must implement `From<bulkhead::Rejection>`",
    note = "if the error type is an associated type of the trait, add `From<bulkhead::Rejection>` to the associated type's bounds: `type Error: From<bulkhead::Rejection>;`"
)]
pub trait ErrorForRateLimiter: RejectionInto {}

impl<E: From<Rejection>> ErrorForRateLimiter for E {}

/// The conversion of a rejection into the result `R` of a method or
/// function with `#[rate_limiter]`.
#[inline]
pub fn rejecter_rate_limiter<R: ResultForRateLimiter<E>, E: ErrorForRateLimiter>() -> Reject<R> {
    rejecter::<R>()
}

/// The return types of a method or function with `#[hedge]`
/// ([`rejecter_hedge`]): `Result<T, E>`.
#[diagnostic::on_unimplemented(
    message = "ATR-004: `{Self}` cannot carry a rejection: a method or function with #[hedge] must return `Result<T, E>` with `E: From<bulkhead::Rejection>`",
    label = "must be `Result<T, E>` with `E: From<bulkhead::Rejection>`",
    note = "the return type is read as written: if it is an alias of a future type, write the future type out (`impl Future<Output = ..>`, `Pin<Box<dyn Future<Output = ..>>>`) so that the call is wrapped as a future"
)]
pub trait ResultForHedge<E>: CallResult<Error = E> {}

impl<T, E> ResultForHedge<E> for Result<T, E> {}

/// The error types of a method or function with `#[hedge]`
/// ([`rejecter_hedge`]): those a [`Rejection`] converts into.
#[diagnostic::on_unimplemented(
    message = "ATR-004: the error type `{Self}` cannot hold a rejection: implement `From<bulkhead::Rejection>` for it",
    label = "the error type of a method or function with #[hedge] must implement `From<bulkhead::Rejection>`",
    note = "if the error type is an associated type of the trait, add `From<bulkhead::Rejection>` to the associated type's bounds: `type Error: From<bulkhead::Rejection>;`"
)]
pub trait ErrorForHedge: RejectionInto {}

impl<E: From<Rejection>> ErrorForHedge for E {}

/// The conversion of a rejection into the result `R` of a method or
/// function with `#[hedge]`.
#[inline]
pub fn rejecter_hedge<R: ResultForHedge<E>, E: ErrorForHedge>() -> Reject<R> {
    rejecter::<R>()
}

/// The return types of a method or function with `#[fallback]`
/// ([`rejecter_fallback`]): `Result<T, E>`.
#[diagnostic::on_unimplemented(
    message = "ATR-004: `{Self}` cannot carry a rejection: a method with #[fallback] must return `Result<T, E>` with `E: From<bulkhead::Rejection>`",
    label = "must be `Result<T, E>` with `E: From<bulkhead::Rejection>`",
    note = "the return type is read as written: if it is an alias of a future type, write the future type out (`impl Future<Output = ..>`, `Pin<Box<dyn Future<Output = ..>>>`) so that the call is wrapped as a future"
)]
pub trait ResultForFallback<E>: CallResult<Error = E> {}

impl<T, E> ResultForFallback<E> for Result<T, E> {}

/// The error types of a method or function with `#[fallback]`
/// ([`rejecter_fallback`]): those a [`Rejection`] converts into.
#[diagnostic::on_unimplemented(
    message = "ATR-004: the error type `{Self}` cannot hold a rejection: implement `From<bulkhead::Rejection>` for it",
    label = "the error type of a method with #[fallback] must implement `From<bulkhead::Rejection>`",
    note = "if the error type is an associated type of the trait, add `From<bulkhead::Rejection>` to the associated type's bounds: `type Error: From<bulkhead::Rejection>;`"
)]
pub trait ErrorForFallback: RejectionInto {}

impl<E: From<Rejection>> ErrorForFallback for E {}

/// The conversion of a rejection into the result `R` of a method or
/// function with `#[fallback]`.
#[inline]
pub fn rejecter_fallback<R: ResultForFallback<E>, E: ErrorForFallback>() -> Reject<R> {
    rejecter::<R>()
}

/// The return types of a method or function with several policy attributes
/// ([`rejecter_policies`]): `Result<T, E>`.
#[diagnostic::on_unimplemented(
    message = "ATR-004: `{Self}` cannot carry a rejection: a method or function with policy attributes must return `Result<T, E>` with `E: From<bulkhead::Rejection>`",
    label = "must be `Result<T, E>` with `E: From<bulkhead::Rejection>`",
    note = "the return type is read as written: if it is an alias of a future type, write the future type out (`impl Future<Output = ..>`, `Pin<Box<dyn Future<Output = ..>>>`) so that the call is wrapped as a future"
)]
pub trait ResultForPolicies<E>: CallResult<Error = E> {}

impl<T, E> ResultForPolicies<E> for Result<T, E> {}

/// The error types of a method or function with several policy attributes
/// ([`rejecter_policies`]): those a [`Rejection`] converts into.
#[diagnostic::on_unimplemented(
    message = "ATR-004: the error type `{Self}` cannot hold a rejection: implement `From<bulkhead::Rejection>` for it",
    label = "the error type of a method or function with policy attributes must implement `From<bulkhead::Rejection>`",
    note = "if the error type is an associated type of the trait, add `From<bulkhead::Rejection>` to the associated type's bounds: `type Error: From<bulkhead::Rejection>;`"
)]
pub trait ErrorForPolicies: RejectionInto {}

impl<E: From<Rejection>> ErrorForPolicies for E {}

/// The conversion of a rejection into the result `R` of a method or
/// function with several policy attributes.
#[inline]
pub fn rejecter_policies<R: ResultForPolicies<E>, E: ErrorForPolicies>() -> Reject<R> {
    rejecter::<R>()
}

/// Always inlined: called through [`Reject`]'s pointer where the pointer
/// is known (a wrapper's call inlined into its caller), it then builds the
/// method's error in registers; out of line, its 24-byte argument was
/// written field by field and read back by a wider load, a
/// store-forwarding stall (≈ 5 ns of a rejected call, issue 33).
#[inline(always)]
fn rejected<R>(rejection: Rejection) -> R
where
    R: CallResult<Error: RejectionInto>,
{
    R::from_error(R::Error::from_rejection(rejection))
}
