//! `retry_if` / `record_if` predicates of a pipeline, and the error type
//! whose `Pushback` it reads, kept without the error type they were
//! written for.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use bulkhead_core::Pushback;

/// A predicate over any error: `None` if the error is not of the type it was
/// written for.
type AnyPredicate = dyn Fn(&dyn Any) -> Option<bool> + Send + Sync;

/// A predicate over one error type, checked against the type at run time.
#[derive(Clone)]
pub(super) struct Predicate(Arc<AnyPredicate>);

impl Predicate {
    pub(super) fn new<E: 'static>(predicate: impl Fn(&E) -> bool + Send + Sync + 'static) -> Self {
        Predicate(Arc::new(move |error: &dyn Any| {
            error.downcast_ref::<E>().map(&predicate)
        }))
    }

    /// `predicate(error)` if there is a predicate for `E`'s type, else
    /// `true` (the default of both `retry_if` and `record_if`).
    pub(super) fn test<E: 'static>(predicate: Option<&Predicate>, error: &E) -> bool {
        predicate.and_then(|p| (p.0)(error)).unwrap_or(true)
    }
}

/// [`Pushback::retry_after`] of one error type `P`, as a
/// `fn(&P) -> Option<Duration>` kept without its type: a call whose error
/// type is `P` gets the function back (a classifier takes a function
/// pointer), any other gets nothing.
#[derive(Clone)]
pub(super) struct RetryAfter(Arc<dyn Any + Send + Sync>);

impl RetryAfter {
    pub(super) fn of<P: Pushback + 'static>() -> Self {
        let read: fn(&P) -> Option<Duration> = P::retry_after;
        RetryAfter(Arc::new(read))
    }

    /// The function, if `E` is the error type it reads.
    pub(super) fn of_type<E: 'static>(&self) -> Option<fn(&E) -> Option<Duration>> {
        self.0.downcast_ref::<fn(&E) -> Option<Duration>>().copied()
    }
}
