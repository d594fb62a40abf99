//! `retry_if` / `record_if` predicates of a pipeline, kept without the error
//! type they were written for.

use std::any::Any;
use std::sync::Arc;

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
