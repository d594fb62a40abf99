//! One import point for the synchronisation primitives the policies use, so
//! the same code runs on `std` and, under `--cfg loom`, on loom's model
//! checker (the shape of tokio's `src/loom/mod.rs`).

#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard, atomic};
#[cfg(not(loom))]
pub(crate) use std::thread;

#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard, atomic};
#[cfg(loom)]
pub(crate) use loom::thread;

/// Locks `mutex`, ignoring poisoning.
///
/// No user code runs while one of our locks is held, so a poisoned lock can
/// only come from a bug of ours that already panicked elsewhere; the data it
/// guards is kept consistent by every critical section before anything that
/// could unwind, so carrying on is sound and panicking again would only turn
/// one failure into many.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    match mutex.lock() {
        Ok(guard) => guard,
        Err(poisoned) => poisoned.into_inner(),
    }
}
