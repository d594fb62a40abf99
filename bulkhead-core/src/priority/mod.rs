//! The class of the calls a piece of code makes: [`scope`] for a future,
//! [`with`] for a closure, [`current`] to read it.
//!
//! A bulkhead that fills up refuses the lower classes first (its key
//! `shed_at`) and serves its waiters by class. A call's class comes from,
//! first to last: the innermost [`scope`] or [`with`] around it; the
//! bulkhead's own key `priority` (as an attribute writes it,
//! `#[bulkhead(priority = "critical")]`); a tower layer's; else
//! [`Priority::Normal`].
//!
//! # Examples
//!
//! ```
//! use bulkhead_core::{Bulkhead, BulkheadConfig, Priority, ShedAt, priority};
//!
//! // Sheddable calls are refused once half the slots are taken.
//! let config = BulkheadConfig::builder().max_concurrent(4).shed_at(ShedAt::DEFAULT).build()?;
//! let bulkhead = Bulkhead::new("search", config);
//! let held = [bulkhead.try_enter()?, bulkhead.try_enter()?];
//! priority::with(Priority::Sheddable, || {
//!     assert_eq!(priority::current(), Some(Priority::Sheddable));
//!     assert!(bulkhead.try_enter().is_err());
//! });
//! // A call without a class still gets one of the two free slots.
//! assert!(bulkhead.try_enter().is_ok());
//! # drop(held);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Implementation details
//!
//! One thread-local byte: 0 when no class is set, else a strength in its
//! top two bits (a scope's, or a tower layer's, which a scope beats) and
//! the class in its low two. A bulkhead's free-slot path reads it once,
//! after its word showed a free slot, and takes its usual path when it is
//! 0. The async form swaps the byte in around each poll of the future it
//! wraps and restores it after (also when the poll panics), as tokio's
//! task-locals do, so that it needs no runtime and follows the future
//! from thread to thread. A spawned task does not inherit it.

mod future;

pub use future::Prioritized;

use std::cell::Cell;
use std::future::Future;

use crate::Priority;

/// A class set by [`scope`] or [`with`].
pub(crate) const STRONG: u8 = 0b11 << 6;
/// A class set by a tower layer ([`scope_weak`]): a scope beats it, and
/// so does a bulkhead's own `priority`.
pub(crate) const WEAK: u8 = 0b01 << 6;
const STRENGTH: u8 = 0b11 << 6;
const CLASS: u8 = 0b11;

#[cfg(not(loom))]
std::thread_local! {
    static BYTE: Cell<u8> = const { Cell::new(0) };
}
#[cfg(loom)]
loom::thread_local! {
    static BYTE: Cell<u8> = Cell::new(0);
}

/// The thread's class byte: 0 when no class is set.
#[inline(always)]
pub(crate) fn raw() -> u8 {
    BYTE.with(Cell::get)
}

/// The byte of `class` set with `strength`.
const fn byte(class: Priority, strength: u8) -> u8 {
    strength | class as u8
}

/// The class of a call whose thread byte is `raw` through a bulkhead
/// whose key `priority` is `default`: a scope's class, else the
/// bulkhead's, else a tower layer's, else `Normal`.
#[inline]
pub(crate) fn resolve(raw: u8, default: Option<Priority>) -> Priority {
    let set = Priority::from_index(usize::from(raw & CLASS)).unwrap_or_default();
    match (raw & STRENGTH, default) {
        (STRONG, _) => set,
        (_, Some(default)) => default,
        (0, None) => Priority::Normal,
        (_, None) => set,
    }
}

/// Puts `new` in the thread's byte unless it holds a stronger one; gives
/// the byte back as it was when dropped (also on unwind).
struct Restore(u8);

impl Restore {
    fn set(new: u8) -> Restore {
        Restore(BYTE.with(|b| {
            let old = b.get();
            if new & STRENGTH >= old & STRENGTH {
                b.set(new);
            }
            old
        }))
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        // `try_with`: a scope dropped while the thread's locals are being
        // destroyed has nothing left to restore (and must not panic).
        let _ = BYTE.try_with(|b| b.set(self.0));
    }
}

/// Runs `future` with its calls of class `class`: each poll sees it, as do
/// the calls it makes on the thread that polls it, unless a scope inside
/// sets another. Nests: the innermost scope wins.
///
/// A task spawned inside does not inherit the class: wrap the spawned
/// future in its own scope.
///
/// # Examples
///
/// ```
/// use bulkhead_core::{Bulkhead, BulkheadConfig, Priority, priority};
/// # fn block_on<F: std::future::Future>(future: F) -> F::Output {
/// #     let mut future = std::pin::pin!(future);
/// #     let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
/// #     loop {
/// #         if let std::task::Poll::Ready(out) = future.as_mut().poll(&mut cx) {
/// #             return out;
/// #         }
/// #     }
/// # }
///
/// let bulkhead = Bulkhead::new("payments", BulkheadConfig::default());
/// let permit = block_on(priority::scope(Priority::Critical, async {
///     assert_eq!(priority::current(), Some(Priority::Critical));
///     bulkhead.enter_async().await
/// }))?;
/// assert_eq!(priority::current(), None);
/// # drop(permit);
/// # Ok::<(), bulkhead_core::BulkheadFull>(())
/// ```
///
/// To carry the class into a spawned task:
///
/// ```
/// # use bulkhead_core::{Priority, priority};
/// # fn spawn<F: std::future::Future + Send + 'static>(_: F) {}
/// spawn(priority::scope(Priority::High, async {
///     // calls here are High
/// }));
/// ```
pub fn scope<F: Future>(class: Priority, future: F) -> Prioritized<F> {
    Prioritized::new(byte(class, STRONG), future)
}

/// As [`scope`] with a tower layer's strength: a scope around or inside
/// it, and a bulkhead's own `priority`, beat it. For the tower layers.
#[doc(hidden)]
pub fn scope_weak<F: Future>(class: Priority, future: F) -> Prioritized<F> {
    Prioritized::new(byte(class, WEAK), future)
}

/// Runs `f` with its calls of class `class` (on this thread), and returns
/// what it returns. Nests: the innermost wins.
///
/// # Examples
///
/// ```
/// use bulkhead_core::{Priority, priority};
///
/// let seen = priority::with(Priority::High, || {
///     priority::with(Priority::Sheddable, priority::current)
/// });
/// assert_eq!(seen, Some(Priority::Sheddable));
/// assert_eq!(priority::current(), None);
/// ```
pub fn with<R>(class: Priority, f: impl FnOnce() -> R) -> R {
    let _restore = Restore::set(byte(class, STRONG));
    f()
}

/// The class a scope (or a tower layer) set for the calls made here, if
/// any; `None` when none is set (such calls take their bulkhead's
/// `priority`, else `Normal`).
///
/// # Examples
///
/// ```
/// use bulkhead_core::{Priority, priority};
///
/// assert_eq!(priority::current(), None);
/// assert_eq!(priority::with(Priority::Critical, priority::current), Some(Priority::Critical));
/// ```
pub fn current() -> Option<Priority> {
    match raw() {
        0 => None,
        raw => Priority::from_index(usize::from(raw & CLASS)),
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
