//! [`Room`]: the part of a resource's budget that adaptive bulkheads grow
//! into.

use std::fmt;

use crate::loom::atomic::{AtomicU64, Ordering::*};

/// The room left in a resource's budget for adaptive bulkheads to grow
/// into: the budget less the reservations of the static bulkheads and
/// what the adaptive ones reserve (their `min_concurrent`, or their
/// `reserved` if given and higher) (its *capacity*), and how much of it the
/// adaptive bulkheads hold above what they reserve (*taken*).
///
/// An adaptive bulkhead takes room before it raises its limit and gives it
/// back after it has lowered it, each time with one compare-exchange, so
/// the limits in force on the resource never add up to more than the
/// budget. Growth is first come, first served: a bulkhead that finds no
/// room stays where it is until another one shrinks (see the adaptive
/// guide on starvation). The registry keeps one per resource with a
/// budget and sets its capacity when the budget or the bulkheads on it
/// change.
///
/// # Examples
///
/// ```
/// use bulkhead_core::adaptive::Room;
///
/// let room = Room::new(10);
/// assert_eq!((room.capacity(), room.taken(), room.free()), (10, 0, 10));
/// room.set_capacity(4);
/// assert_eq!(room.free(), 4);
/// ```
pub struct Room {
    /// capacity (high half) | taken (low half)
    state: AtomicU64,
}

const TAKEN: u64 = u32::MAX as u64;

impl Room {
    /// Room for `capacity` slots above what the adaptive bulkheads reserve, none
    /// taken.
    pub fn new(capacity: u32) -> Self {
        Room {
            state: AtomicU64::new(u64::from(capacity) << 32),
        }
    }

    /// The slots the adaptive bulkheads may hold above what they reserve
    /// together.
    pub fn capacity(&self) -> u32 {
        (self.state.load(Acquire) >> 32) as u32
    }

    /// The slots they hold above what they reserve now.
    pub fn taken(&self) -> u32 {
        (self.state.load(Acquire) & TAKEN) as u32
    }

    /// The slots left to take (0 while more is taken than the capacity,
    /// after the capacity was lowered).
    pub fn free(&self) -> u32 {
        let state = self.state.load(Acquire);
        ((state >> 32) as u32).saturating_sub((state & TAKEN) as u32)
    }

    /// Sets the capacity. Lowering it below what is taken stops every
    /// growth until the bulkheads give back the difference (the registry
    /// asks them to at once).
    pub fn set_capacity(&self, capacity: u32) {
        let mut state = self.state.load(Acquire);
        loop {
            let next = (u64::from(capacity) << 32) | (state & TAKEN);
            match self
                .state
                .compare_exchange_weak(state, next, AcqRel, Acquire)
            {
                Ok(_) => return,
                Err(actual) => state = actual,
            }
        }
    }

    /// Takes up to `wanted` slots; returns how many it got.
    pub(crate) fn take(&self, wanted: u32) -> u32 {
        let mut state = self.state.load(Acquire);
        loop {
            let (capacity, taken) = ((state >> 32) as u32, (state & TAKEN) as u32);
            let granted = wanted.min(capacity.saturating_sub(taken));
            if granted == 0 {
                return 0;
            }
            match self.state.compare_exchange_weak(
                state,
                state + u64::from(granted),
                AcqRel,
                Acquire,
            ) {
                Ok(_) => return granted,
                Err(actual) => state = actual,
            }
        }
    }

    /// Counts `slots` more as taken whatever the capacity (a bulkhead whose
    /// own share of the budget shrank by as much, which the registry adds
    /// to the capacity next).
    pub(crate) fn force(&self, slots: u32) {
        if slots > 0 {
            self.state.fetch_add(u64::from(slots), AcqRel);
        }
    }

    /// Gives back `slots` taken earlier.
    pub(crate) fn give(&self, slots: u32) {
        if slots > 0 {
            self.state.fetch_sub(u64::from(slots), AcqRel);
        }
    }

    /// How much more is taken than the capacity allows.
    pub(crate) fn excess(&self) -> u32 {
        let state = self.state.load(Acquire);
        ((state & TAKEN) as u32).saturating_sub((state >> 32) as u32)
    }
}

impl fmt::Debug for Room {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Room")
            .field("capacity", &self.capacity())
            .field("taken", &self.taken())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn takes_what_is_free_and_no_more() {
        let room = Room::new(5);
        assert_eq!(room.take(3), 3);
        assert_eq!(room.take(3), 2);
        assert_eq!(room.take(1), 0);
        room.give(4);
        assert_eq!((room.taken(), room.free()), (1, 4));
    }

    #[test]
    fn a_lowered_capacity_stops_growth_until_the_excess_is_given_back() {
        let room = Room::new(5);
        assert_eq!(room.take(5), 5);
        room.set_capacity(2);
        assert_eq!((room.excess(), room.free(), room.take(1)), (3, 0, 0));
        room.give(3);
        assert_eq!((room.excess(), room.free()), (0, 0));
    }
}
