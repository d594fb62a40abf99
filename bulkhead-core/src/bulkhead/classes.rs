//! The classes of a bulkhead's calls: the shares of its limit each class
//! below `Critical` may take (`shed_at`), its default class (`priority`),
//! and what each class holds and was refused, for its snapshot.
//!
//! Calls admitted on the plain path (no class set, the bulkhead's default
//! class allowed the whole limit) are *untagged*: nothing here counts them,
//! and a snapshot gives them to the default class (the calls in flight
//! less those the classes hold). A call admitted through the semaphore's
//! classed path is *tagged*: its class's `held` counts it from its
//! admission (after the word counted it) to its release (before the word
//! gives its slot back), so `sum(held) <= in flight` at every instant.

use super::Bulkhead;
use crate::loom::atomic::{AtomicU32, AtomicU64, Ordering::*};
use crate::{Priority, ShedAt};

impl Bulkhead {
    /// Puts new shares of the limit per class (`shed_at`) and a new
    /// default class (`priority`, `None`: none) in force at once, as a
    /// registry's reload does. Calls already admitted keep their slots;
    /// [`Occupancy::classes`](super::Occupancy::classes) counts those
    /// beyond their class's new share.
    ///
    /// # Examples
    ///
    /// ```
    /// use bulkhead_core::{Bulkhead, BulkheadConfig, Priority, ShedAt, priority};
    ///
    /// let bulkhead = Bulkhead::new("reports", BulkheadConfig::builder().max_concurrent(4).build()?);
    /// let _held = bulkhead.try_enter()?;
    /// bulkhead.set_priorities(ShedAt::new(0.25, 1.0, 1.0)?, None);
    /// assert_eq!(bulkhead.config().shed_at(), ShedAt::new(0.25, 1.0, 1.0)?);
    /// // One slot of four is Sheddable's share, and it is taken.
    /// assert!(priority::with(Priority::Sheddable, || bulkhead.try_enter()).is_err());
    /// // The bulkhead's own calls are Sheddable now: all of them.
    /// bulkhead.set_priorities(ShedAt::DEFAULT, Some(Priority::Sheddable));
    /// let _second = bulkhead.try_enter()?;
    /// assert!(bulkhead.try_enter().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_priorities(&self, shed_at: ShedAt, priority: Option<Priority>) {
        self.shared.semaphore.set_classes(shed_at, priority);
    }
}

/// No default class set (the key `priority` not given).
const NO_DEFAULT: u64 = 0xF;

/// One class of a bulkhead at one instant, from
/// [`Occupancy::classes`](super::Occupancy::classes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClassOccupancy {
    /// The class.
    pub class: Priority,
    /// The calls in flight at which the class is refused now:
    /// `max(1, floor(limit * shed_at))` of the limit in force (the whole
    /// limit for `Critical`).
    pub threshold: u32,
    /// Calls of the class holding a slot. The calls nobody gave a class
    /// count for the bulkhead's default class (`Normal` unless its key
    /// `priority` says otherwise).
    pub held: u32,
    /// Of `held`, the calls beyond what the class may take now: the calls
    /// of this class and the lower ones past its threshold, at most
    /// `held`, left by a limit (or a share) lowered under them: each was
    /// admitted below the threshold of its time. 0 while neither has moved
    /// since they were admitted, as every admission of a class `c` or
    /// below found fewer than `threshold(c)` calls in flight.
    pub beyond_share: u32,
    /// Calls of the class refused by its share of the limit (shed) since
    /// the bulkhead was made. A call refused because the bulkhead was
    /// full is not counted here.
    pub shed: u64,
}

/// The classes' settings and counts, beside a semaphore's word.
#[derive(Debug)]
pub(crate) struct Classes {
    /// Tagged calls holding a slot, per class.
    held: [AtomicU32; 4],
    /// Calls refused by their class's share, per class.
    shed: [AtomicU64; 4],
    /// The shares in force and the default class: see [`pack`].
    settings: AtomicU64,
}

/// The shares (`ShedAt::to_bits`, 60 bits) and the default class (its
/// index, or `NO_DEFAULT`, in the top 4 bits) in one word, so that a call
/// reads both in one load.
fn pack(shed_at: ShedAt, default: Option<Priority>) -> u64 {
    let default = default.map_or(NO_DEFAULT, |class| class.index() as u64);
    shed_at.to_bits() | default << 60
}

fn unpack(word: u64) -> (ShedAt, Option<Priority>) {
    let shed_at = ShedAt::from_bits(word & ((1 << 60) - 1));
    (shed_at, Priority::from_index((word >> 60) as usize))
}

impl Classes {
    pub(crate) fn new(shed_at: ShedAt, default: Option<Priority>) -> Self {
        Classes {
            held: Default::default(),
            shed: Default::default(),
            settings: AtomicU64::new(pack(shed_at, default)),
        }
    }

    /// The shares and the default class in force (configuration: `Relaxed`).
    #[inline]
    pub(crate) fn settings(&self) -> (ShedAt, Option<Priority>) {
        unpack(self.settings.load(Relaxed))
    }

    /// Puts new shares and a new default class in force.
    pub(crate) fn set(&self, shed_at: ShedAt, default: Option<Priority>) {
        self.settings.store(pack(shed_at, default), Relaxed);
    }

    /// Whether calls nobody gave a class must take the classed path: their
    /// class (the default, else `Normal`) may not use the whole limit.
    pub(crate) fn untagged_detour(shed_at: ShedAt, default: Option<Priority>) -> bool {
        !shed_at.is_whole(default.unwrap_or_default())
    }

    /// Counts a tagged call of `class` admitted (after the word counted
    /// it).
    #[inline]
    pub(crate) fn admit(&self, class: Priority) {
        self.held[class.index()].fetch_add(1, Relaxed);
    }

    /// Counts a tagged call of `class` gone (before the word gives its
    /// slot back).
    #[inline]
    pub(crate) fn release(&self, class: Priority) {
        self.held[class.index()].fetch_sub(1, Relaxed);
    }

    /// Counts a call of `class` refused by its share.
    pub(crate) fn shed(&self, class: Priority) {
        self.shed[class.index()].fetch_add(1, Relaxed);
    }

    /// Each class as it stands with `in_flight` calls in flight under
    /// `limit`, the limit in force.
    pub(crate) fn reading(&self, in_flight: u32, limit: u32) -> [ClassOccupancy; 4] {
        let (shed_at, default) = self.settings();
        let held = self.held.each_ref().map(|held| held.load(Relaxed));
        let tagged: u32 = held.iter().fold(0, |sum, n| sum.saturating_add(*n));
        let untagged = in_flight.saturating_sub(tagged);
        let default = default.unwrap_or_default();
        let held = Priority::ALL.map(|class| {
            let held = held[class.index()];
            if class == default {
                held.saturating_add(untagged)
            } else {
                held
            }
        });
        let mut up_to = 0u32;
        Priority::ALL.map(|class| {
            let held = held[class.index()];
            up_to = up_to.saturating_add(held);
            let threshold = shed_at.threshold(class, limit);
            ClassOccupancy {
                class,
                threshold,
                held,
                beyond_share: held.min(up_to.saturating_sub(threshold)),
                shed: self.shed[class.index()].load(Relaxed),
            }
        })
    }
}
