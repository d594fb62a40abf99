//! The RAII proof of holding a bulkhead slot.

use std::fmt;

use super::adaptive::CallOutcome;
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
    /// A slot taken at this stamp of the bulkhead's timeline, on a bulkhead
    /// that tracks sizing or adapts its limit, and how the call ended.
    Timed(&'a Shared, u64, CallOutcome),
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
            Held::Timed(shared, started, outcome) => shared.release_timed(started, outcome),
        }
    }

    fn set_outcome(&mut self, outcome: CallOutcome) {
        if let Held::Timed(_, _, held) = self {
            *held = outcome;
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

    /// Tells an adaptive bulkhead how the call that holds this permit
    /// ended, for when the permit is dropped: [`CallOutcome::of`] its
    /// result, or [`CallOutcome::Dropped`] while a future that may be
    /// dropped before it completes holds it. Without it a permit counts as
    /// a success (an error if dropped while its thread panics). Costs a
    /// store; nothing on a bulkhead that does not adapt.
    ///
    /// # Examples
    ///
    /// ```
    /// use bulkhead_core::{Bulkhead, BulkheadConfig, CallOutcome};
    ///
    /// let bulkhead = Bulkhead::new("db", BulkheadConfig::default());
    /// let mut permit = bulkhead.try_enter()?;
    /// let result: Result<u32, &str> = Err("no such row");
    /// permit.set_outcome(CallOutcome::of(&result));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
    pub fn set_outcome(&mut self, outcome: CallOutcome) {
        self.held.set_outcome(outcome);
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
    /// The bulkhead, and when the slot was taken and how the call ended if
    /// it is timed; `None` for a disabled bulkhead.
    bulkhead: Option<(Bulkhead, Option<(u64, CallOutcome)>)>,
}

impl OwnedBulkheadPermit {
    #[inline]
    pub(super) fn new(bulkhead: &Bulkhead, permit: BulkheadPermit<'_>) -> Self {
        let bulkhead = match permit.into_held() {
            Held::Nothing => None,
            Held::Slot(_) => Some((bulkhead.clone(), None)),
            Held::Timed(_, started, outcome) => Some((bulkhead.clone(), Some((started, outcome)))),
        };
        OwnedBulkheadPermit { bulkhead }
    }

    /// As [`BulkheadPermit::set_outcome`].
    #[inline]
    pub fn set_outcome(&mut self, outcome: CallOutcome) {
        if let Some((_, Some((_, held)))) = &mut self.bulkhead {
            *held = outcome;
        }
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
                Some((started, outcome)) => Held::Timed(shared, *started, *outcome).release(),
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
