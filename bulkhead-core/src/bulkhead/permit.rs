//! The RAII proof of holding a bulkhead slot.

use std::fmt;

use super::adaptive::CallOutcome;
use super::{Bulkhead, Shared};
use crate::Priority;
use crate::keyed::KeySlot;
use std::ptr::NonNull;

/// A slot in a bulkhead, given back when dropped (also when the holder
/// panics and unwinds).
///
/// A permit from a disabled bulkhead holds nothing and releases nothing.
#[must_use = "the slot is released as soon as the permit is dropped"]
pub struct BulkheadPermit<'a> {
    held: Held<'a>,
}

/// What a permit holds: the bulkhead's shared state (`None` for a disabled
/// bulkhead: nothing held) and one word, [`UNTIMED`](Self::UNTIMED) for a
/// plain slot of a call without a class (an *untagged* slot), else:
///
/// ```text
///  63                        5 4     2 1        0
/// +---------------------------+-------+----------+
/// | stamp (all ones: untimed) | tag   | outcome  |
/// +---------------------------+-------+----------+
/// ```
///
/// the stamp the slot was taken at on the bulkhead's timeline and how the
/// call ended ([`Holding::Timed`]), or all ones and outcome `0b11` for a
/// slot that is not timed; `tag` the class of the call (0 to 3) if it was
/// admitted through the classed path, `0b111` if not.
///
/// Two scalars rather than an enum: a pair of scalars is moved as two
/// words, where an enum with a tag byte is moved as a 24-byte copy whose
/// 16-byte load of narrower stores stalls on store forwarding wherever a
/// permit is moved soon after it was made or its outcome set (an `async`
/// attempt holding it across the call's await).
#[derive(Clone, Copy)]
pub(super) struct Held<'a> {
    shared: Option<&'a Shared>,
    word: u64,
}

/// What a [`Held`] holds, taken apart.
pub(super) enum Holding<'a> {
    /// Nothing: the bulkhead is disabled.
    Nothing,
    /// A slot.
    Slot(&'a Shared),
    /// A slot of a call of this class, admitted through the classed path.
    Classed(&'a Shared, Priority),
    /// A slot taken at this stamp of the bulkhead's timeline, on a bulkhead
    /// that tracks sizing or adapts its limit, how the call ended, and the
    /// class it was admitted as, if through the classed path.
    Timed(&'a Shared, u64, CallOutcome, Option<Priority>),
    /// A slot of a keyed bulkhead's key (the shared state its anchor's).
    Keyed(&'a Shared, NonNull<KeySlot>),
}

impl<'a> Held<'a> {
    /// The word of an untagged slot that is not timed: no timed word has
    /// both low bits set (an outcome is 0, 1 or 2).
    const UNTIMED: u64 = u64::MAX;
    const OUTCOME: u64 = 0b11;
    const TAG_SHIFT: u32 = 2;
    const TAG: u64 = 0b111 << Self::TAG_SHIFT;
    const STAMP_SHIFT: u32 = 5;

    /// Nothing: the bulkhead is disabled.
    pub(super) const NOTHING: Held<'static> = Held {
        shared: None,
        word: 0,
    };

    /// A slot.
    #[inline]
    pub(super) fn slot(shared: &'a Shared) -> Self {
        Held {
            shared: Some(shared),
            word: Self::UNTIMED,
        }
    }

    /// A slot of a call of `class`, not timed.
    #[inline]
    pub(super) fn classed(shared: &'a Shared, class: Priority) -> Self {
        Held {
            shared: Some(shared),
            word: Self::UNTIMED & !Self::TAG | Self::tag(Some(class)),
        }
    }

    /// A slot of a keyed bulkhead's key: the key's slot's address as the
    /// stamp, no class and no outcome (an address is never all ones).
    #[inline]
    pub(super) fn keyed(shared: &'a Shared, slot: NonNull<KeySlot>) -> Self {
        Held {
            shared: Some(shared),
            word: (slot.as_ptr().expose_provenance() as u64) << Self::STAMP_SHIFT
                | Self::TAG
                | Self::OUTCOME,
        }
    }

    fn tag(class: Option<Priority>) -> u64 {
        class.map_or(Self::TAG, |class| (class.index() as u64) << Self::TAG_SHIFT)
    }

    /// A slot taken at `started`, a stamp in nanoseconds (its top five bits
    /// are dropped: a timeline would have to run 18 years to use them),
    /// by a call that ended with `outcome`.
    #[inline]
    pub(super) fn timed(shared: &'a Shared, started: u64, outcome: CallOutcome) -> Self {
        Held {
            shared: Some(shared),
            word: started << Self::STAMP_SHIFT | Self::TAG | outcome as u64,
        }
    }

    /// [`timed`](Self::timed), for a call admitted as `class` through the
    /// classed path.
    pub(super) fn timed_as(
        shared: &'a Shared,
        started: u64,
        outcome: CallOutcome,
        class: Priority,
    ) -> Self {
        Held {
            shared: Some(shared),
            word: started << Self::STAMP_SHIFT | Self::tag(Some(class)) | outcome as u64,
        }
    }

    /// What it holds.
    #[inline]
    pub(super) fn holding(self) -> Holding<'a> {
        match self.shared {
            None => Holding::Nothing,
            Some(shared) if self.word == Self::UNTIMED => Holding::Slot(shared),
            Some(shared) => {
                let class =
                    Priority::from_index(((self.word & Self::TAG) >> Self::TAG_SHIFT) as usize);
                let outcome = match self.word & Self::OUTCOME {
                    0 => CallOutcome::Success,
                    1 => CallOutcome::Error,
                    2 => CallOutcome::Dropped,
                    _ => {
                        return match class {
                            Some(class) => Holding::Classed(shared, class),
                            None => match NonNull::new(std::ptr::with_exposed_provenance_mut::<
                                KeySlot,
                            >(
                                (self.word >> Self::STAMP_SHIFT) as usize
                            )) {
                                Some(slot) if self.word != Self::UNTIMED => {
                                    Holding::Keyed(shared, slot)
                                }
                                _ => Holding::Slot(shared),
                            },
                        };
                    }
                };
                Holding::Timed(shared, self.word >> Self::STAMP_SHIFT, outcome, class)
            }
        }
    }

    /// Gives the slot back. An untagged slot (timed or not) is released
    /// inline, as before classes existed; a slot of the classed path goes
    /// out of line ([`release_tagged`](Self::release_tagged)), so that the
    /// untagged release stays small enough to be inlined into its holder.
    #[inline]
    fn release(self) {
        let Some(shared) = self.shared else {
            return;
        };
        if self.word == Self::UNTIMED {
            shared.semaphore.release(shared.context.clock());
            return;
        }
        if self.word & Self::TAG == Self::TAG && self.word & Self::OUTCOME != Self::OUTCOME {
            let outcome = match self.word & Self::OUTCOME {
                0 => CallOutcome::Success,
                1 => CallOutcome::Error,
                _ => CallOutcome::Dropped,
            };
            shared.release_timed(self.word >> Self::STAMP_SHIFT, outcome, None);
            return;
        }
        self.release_tagged();
    }

    /// [`release`](Self::release) of a slot admitted through the classed
    /// path (timed or not).
    #[inline(never)]
    fn release_tagged(self) {
        match self.holding() {
            Holding::Nothing => {}
            Holding::Slot(shared) => {
                shared.semaphore.release(shared.context.clock());
            }
            Holding::Classed(shared, class) => {
                shared
                    .semaphore
                    .release_classed(class, shared.context.clock());
            }
            Holding::Timed(shared, started, outcome, class) => {
                shared.release_timed(started, outcome, class);
            }
            Holding::Keyed(shared, slot) => {
                if let Some(keyed) = &shared.keyed {
                    keyed.release(slot);
                }
            }
        }
    }

    /// Whether it keeps an outcome: a timed slot.
    #[inline]
    fn keeps_outcome(&self) -> bool {
        self.shared.is_some() && self.word & Self::OUTCOME != Self::OUTCOME
    }

    #[inline]
    fn set_outcome(&mut self, outcome: CallOutcome) {
        if self.keeps_outcome() {
            self.word = self.word & !Self::OUTCOME | outcome as u64;
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
        self.held.shared.is_some()
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

    /// Whether [`set_outcome`](Self::set_outcome) has anything to do: the
    /// slot is timed (its bulkhead tracks sizing or adapts its limit). For
    /// callers that would compute the outcome out of line.
    #[doc(hidden)]
    #[inline]
    pub fn keeps_outcome(&self) -> bool {
        self.held.keeps_outcome()
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
    /// The bulkhead, `None` for a disabled one.
    bulkhead: Option<Bulkhead>,
    /// What its slot is, as [`Held`]'s word says.
    word: u64,
}

impl OwnedBulkheadPermit {
    #[inline]
    pub(super) fn new(bulkhead: &Bulkhead, permit: BulkheadPermit<'_>) -> Self {
        let held = permit.into_held();
        OwnedBulkheadPermit {
            bulkhead: held.shared.map(|_| bulkhead.clone()),
            word: held.word,
        }
    }

    /// As [`BulkheadPermit::set_outcome`].
    #[inline]
    pub fn set_outcome(&mut self, outcome: CallOutcome) {
        if let Some(bulkhead) = &self.bulkhead {
            let mut held = Held {
                shared: Some(&bulkhead.shared),
                word: self.word,
            };
            held.set_outcome(outcome);
            self.word = held.word;
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
        if let Some(bulkhead) = &self.bulkhead {
            Held {
                shared: Some(&bulkhead.shared),
                word: self.word,
            }
            .release();
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::bulkhead::BulkheadConfig;

    fn timed(held: Held<'_>) -> Option<(u64, CallOutcome)> {
        match held.holding() {
            Holding::Timed(_, started, outcome, None) => Some((started, outcome)),
            _ => None,
        }
    }

    #[test]
    fn the_two_words_say_what_was_held() {
        let bulkhead = Bulkhead::new("held", BulkheadConfig::default());
        let shared = &*bulkhead.shared;
        assert!(matches!(Held::NOTHING.holding(), Holding::Nothing));
        assert!(matches!(Held::slot(shared).holding(), Holding::Slot(_)));
        let outcomes = [
            CallOutcome::Success,
            CallOutcome::Error,
            CallOutcome::Dropped,
        ];
        for started in [0, 1, 5_000_000, (1 << 59) - 1] {
            for outcome in outcomes {
                let mut held = Held::timed(shared, started, outcome);
                assert_eq!(timed(held), Some((started, outcome)));
                for then in outcomes {
                    held.set_outcome(then);
                    assert_eq!(timed(held), Some((started, then)));
                }
            }
        }
        // A stamp's top five bits are dropped, never read as another kind.
        let held = Held::timed(shared, u64::MAX, CallOutcome::Dropped);
        assert_eq!(timed(held), Some(((1 << 59) - 1, CallOutcome::Dropped)));
        // A class is kept beside the stamp, and beside no stamp.
        for class in Priority::ALL {
            let mut held = Held::timed_as(shared, (1 << 59) - 1, CallOutcome::Error, class);
            held.set_outcome(CallOutcome::Dropped);
            assert!(matches!(
                held.holding(),
                Holding::Timed(_, s, CallOutcome::Dropped, Some(c)) if s == (1 << 59) - 1 && c == class
            ));
            let mut plain = Held::classed(shared, class);
            assert!(!plain.keeps_outcome());
            plain.set_outcome(CallOutcome::Error);
            assert!(matches!(plain.holding(), Holding::Classed(_, c) if c == class));
        }
        // Setting an outcome changes neither a plain slot nor nothing.
        let mut slot = Held::slot(shared);
        slot.set_outcome(CallOutcome::Dropped);
        assert!(matches!(slot.holding(), Holding::Slot(_)));
        let mut nothing = Held::NOTHING;
        nothing.set_outcome(CallOutcome::Error);
        assert!(matches!(nothing.holding(), Holding::Nothing));
    }
}
