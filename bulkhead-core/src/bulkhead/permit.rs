//! The RAII proof of holding a bulkhead slot.

use std::fmt;
use std::time::Instant;

use super::{Bulkhead, Shared};

/// A slot in a bulkhead, given back when dropped (also when the holder
/// panics and unwinds).
///
/// A permit from a disabled bulkhead holds nothing and releases nothing.
#[must_use = "the slot is released as soon as the permit is dropped"]
pub struct BulkheadPermit<'a> {
    held: Held<'a>,
}

/// What a permit holds.
#[derive(Clone, Copy)]
pub(super) enum Held<'a> {
    /// Nothing: the bulkhead is disabled.
    Nothing,
    /// A slot.
    Slot(&'a Shared),
    /// A slot taken at this time, on a bulkhead that tracks sizing.
    Timed(&'a Shared, Instant),
}

impl Held<'_> {
    /// Gives the slot back.
    #[inline]
    fn release(self) {
        match self {
            Held::Nothing => {}
            Held::Slot(shared) => {
                shared.semaphore.release(shared.context.clock());
            }
            Held::Timed(shared, started) => shared.release_timed(started),
        }
    }
}

impl<'a> BulkheadPermit<'a> {
    #[inline]
    pub(super) fn new(held: Held<'a>) -> Self {
        BulkheadPermit { held }
    }

    /// Whether this permit holds a slot (false for a disabled bulkhead).
    pub fn holds_slot(&self) -> bool {
        !matches!(self.held, Held::Nothing)
    }

    /// Gives up the permit without releasing; the caller now owns what it
    /// held.
    pub(super) fn into_held(self) -> Held<'a> {
        let held = self.held;
        std::mem::forget(self);
        held
    }
}

/// A slot in a bulkhead that owns a handle to its bulkhead, so it can be
/// moved into a spawned task or another thread; given back when dropped.
#[must_use = "the slot is released as soon as the permit is dropped"]
pub struct OwnedBulkheadPermit {
    /// The bulkhead, and when the slot was taken if sizing is tracked;
    /// `None` for a disabled bulkhead.
    bulkhead: Option<(Bulkhead, Option<Instant>)>,
}

impl OwnedBulkheadPermit {
    #[inline]
    pub(super) fn new(bulkhead: &Bulkhead, permit: BulkheadPermit<'_>) -> Self {
        let bulkhead = match permit.into_held() {
            Held::Nothing => None,
            Held::Slot(_) => Some((bulkhead.clone(), None)),
            Held::Timed(_, started) => Some((bulkhead.clone(), Some(started))),
        };
        OwnedBulkheadPermit { bulkhead }
    }

    /// Whether this permit holds a slot (false for a disabled bulkhead).
    pub fn holds_slot(&self) -> bool {
        self.bulkhead.is_some()
    }
}

impl Drop for OwnedBulkheadPermit {
    #[inline]
    fn drop(&mut self) {
        if let Some((bulkhead, started)) = &self.bulkhead {
            let shared = &*bulkhead.shared;
            match started {
                None => Held::Slot(shared).release(),
                Some(started) => Held::Timed(shared, *started).release(),
            }
        }
    }
}

impl fmt::Debug for OwnedBulkheadPermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedBulkheadPermit")
            .field(
                "instance",
                &self.bulkhead.as_ref().map(|(b, _)| b.instance()),
            )
            .finish()
    }
}

impl Drop for BulkheadPermit<'_> {
    #[inline]
    fn drop(&mut self) {
        self.held.release();
    }
}

impl fmt::Debug for BulkheadPermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BulkheadPermit")
            .field("holds_slot", &self.holds_slot())
            .finish()
    }
}
