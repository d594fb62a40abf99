//! [`Occupancy`]: one consistent reading of a bulkhead's slots.

use super::ClassOccupancy;
use super::adaptive::AdaptiveSnapshot;
use super::semaphore::Reading;

/// A bulkhead's slots as they stood at one instant, from
/// [`Bulkhead::occupancy`](super::Bulkhead::occupancy).
///
/// Every field was read at the same instant, so they agree with each
/// other whatever changes the limits at the time (a reload, a fleet
/// share, an adaptive algorithm, a move to another resource):
///
/// - `available <= max_concurrent` and `reserved <= max_concurrent`;
/// - `concurrent_calls + available <= max_concurrent`, unless `available`
///   is 0 (a lowered limit lets the calls already in flight finish, so
///   `concurrent_calls` may exceed it);
/// - `borrowed` is the part of `concurrent_calls` beyond `reserved` on a
///   resource's pool, 0 off one.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Occupancy {
    /// Calls holding a slot (0 when disabled).
    pub concurrent_calls: u32,
    /// Callers waiting for a slot.
    pub waiting_calls: u32,
    /// The limit in force: the configured `max_concurrent` (an adaptive
    /// bulkhead's current limit), or less under a cap (a fleet share).
    pub max_concurrent: u32,
    /// Slots a call could take without waiting: below the limit and, on a
    /// pool, beyond `reserved` only as far as the pool's unreserved slots
    /// are free and nobody queues for them; 0 while callers queue here.
    pub available: u32,
    /// The slots of its resource's budget kept for it (its `reserved` as
    /// far as the pool had room for it); off a resource, `max_concurrent`.
    pub reserved: u32,
    /// Calls in flight on borrowed slots: beyond `reserved`, on the pool's
    /// unreserved slots (0 off a resource).
    pub borrowed: u32,
    /// An adaptive bulkhead's algorithm at the same instant (its `limit`
    /// is the limit in force but for a cap); `None` if it does not adapt.
    pub adaptive: Option<AdaptiveSnapshot>,
    /// Each class, lowest first (`Sheddable`, `Normal`, `High`,
    /// `Critical`): its threshold under `max_concurrent`, the calls it
    /// holds (those nobody gave a class counted for the bulkhead's
    /// default class), those beyond its share, and those it had shed.
    pub classes: [ClassOccupancy; 4],
}

impl Occupancy {
    pub(super) fn new(reading: Reading, adaptive: Option<AdaptiveSnapshot>) -> Self {
        Occupancy {
            concurrent_calls: reading.in_flight,
            waiting_calls: reading.waiting,
            max_concurrent: reading.limit,
            available: reading.available,
            reserved: reading.reserved,
            borrowed: reading.borrowed,
            adaptive,
            classes: reading.classes,
        }
    }
}
