//! The RAII proof of holding a bulkhead slot.

use std::fmt;

use super::Bulkhead;
use super::semaphore::Semaphore;

/// A slot in a bulkhead, given back when dropped (also when the holder
/// panics and unwinds).
///
/// A permit from a disabled bulkhead holds nothing and releases nothing.
#[must_use = "the slot is released as soon as the permit is dropped"]
pub struct BulkheadPermit<'a> {
    semaphore: Option<&'a Semaphore>,
}

impl<'a> BulkheadPermit<'a> {
    #[inline]
    pub(super) fn counted(semaphore: &'a Semaphore) -> Self {
        BulkheadPermit {
            semaphore: Some(semaphore),
        }
    }

    #[inline]
    pub(super) fn uncounted() -> Self {
        BulkheadPermit { semaphore: None }
    }

    /// Whether this permit holds a slot (false for a disabled bulkhead).
    pub fn holds_slot(&self) -> bool {
        self.semaphore.is_some()
    }

    /// Gives up the permit without releasing; returns whether it held a
    /// slot, which the caller now owns.
    pub(super) fn into_slot(self) -> bool {
        let holds_slot = self.holds_slot();
        std::mem::forget(self);
        holds_slot
    }
}

/// A slot in a bulkhead that owns a handle to its bulkhead, so it can be
/// moved into a spawned task or another thread; given back when dropped.
#[must_use = "the slot is released as soon as the permit is dropped"]
pub struct OwnedBulkheadPermit {
    bulkhead: Option<Bulkhead>,
}

impl OwnedBulkheadPermit {
    pub(super) fn new(bulkhead: &Bulkhead, permit: BulkheadPermit<'_>) -> Self {
        OwnedBulkheadPermit {
            bulkhead: permit.into_slot().then(|| bulkhead.clone()),
        }
    }

    /// Whether this permit holds a slot (false for a disabled bulkhead).
    pub fn holds_slot(&self) -> bool {
        self.bulkhead.is_some()
    }
}

impl Drop for OwnedBulkheadPermit {
    fn drop(&mut self) {
        if let Some(bulkhead) = &self.bulkhead {
            bulkhead.shared.semaphore.release();
        }
    }
}

impl fmt::Debug for OwnedBulkheadPermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedBulkheadPermit")
            .field("instance", &self.bulkhead.as_ref().map(Bulkhead::instance))
            .finish()
    }
}

impl Drop for BulkheadPermit<'_> {
    #[inline]
    fn drop(&mut self) {
        if let Some(semaphore) = self.semaphore {
            semaphore.release();
        }
    }
}

impl fmt::Debug for BulkheadPermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BulkheadPermit")
            .field("holds_slot", &self.holds_slot())
            .finish()
    }
}
