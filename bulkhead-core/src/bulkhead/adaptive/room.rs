//! [`Room`]: the part of a resource's budget that adaptive bulkheads grow
//! into, shared out max-min fair among those that want it.
//!
//! # Implementation details
//!
//! The counts are one `AtomicU64`: the capacity in the high half, the slots
//! taken in the low half, so that a take checks the capacity and counts
//! its slots in one compare-exchange, and a give back is one subtraction.
//!
//! Beside them, under a mutex, one entry per adaptive bulkhead on the
//! room (its [`Seat`]): the room it asked for at its last window close
//! (its *demand*), the room it held then, and when that was, counted in
//! the room's announcements. Only the closer of a window, the registry's
//! changes of a bulkhead's limits and a bulkhead's joining or leaving
//! touch it (under the bulkhead's controller lock, which is always taken
//! first), never a call. A seat's take happens under the mutex, so that
//! the shares are computed and taken one seat at a time; the give backs
//! and the capacity's changes need only the atomic.
//!
//! # Memory ordering
//!
//! The compare-exchanges and the additions are `AcqRel`: a slot given back
//! after a limit was lowered is seen by the take that raises another limit
//! with it. The mutex orders the seats' entries.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use crate::loom::atomic::{AtomicU64, Ordering::*};
use crate::loom::{Mutex, lock};

/// The room left in a resource's budget for adaptive bulkheads to grow
/// into: the budget less the reservations of the static bulkheads and
/// what the adaptive ones reserve (their `min_concurrent`, or their
/// `reserved` if given and higher) (its *capacity*), and how much of it the
/// adaptive bulkheads hold above what they reserve (*taken*).
///
/// An adaptive bulkhead takes room before it raises its limit and gives it
/// back after it has lowered it, each time with one compare-exchange, so
/// the limits in force on the resource never add up to more than the
/// budget.
///
/// # Fair shares
///
/// The room is shared out max-min fair among the adaptive bulkheads on
/// it. Each one says, when one of its windows closes, how much room its
/// algorithm asks for (its demand: the limit it wants, less what it
/// reserves), and gets its *share* back: the capacity filled like water
/// into the demands, so that a demand below an equal split is met in full
/// and the rest is split equally among the larger ones (a slot that does
/// not split evenly goes to those that joined the room first). It then
/// holds at most its share: one below it takes free room up to it; one
/// above it, while another is below its own, lowers its limit (calls in
/// flight finish) and gives the excess back, for the other to take at its
/// next window close. Room nobody waits for stays with whoever holds it;
/// while the demands fit in the capacity, each share is its demand, and
/// room nobody asks for stays free for the next that does.
///
/// A share moves only when a window closes, and a window closes only when
/// a call ends: a bulkhead whose calls have stopped keeps what it holds.
/// One that has announced nothing while the room counted eight
/// announcements per bulkhead on it is taken to want no more than it
/// holds, so that room it once asked for does not stay idle.
///
/// The registry keeps one per resource with a budget and sets its
/// capacity when the budget or the bulkheads on it change.
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
/// assert_eq!(room.seats(), 0);
/// ```
pub struct Room {
    /// capacity (high half) | taken (low half)
    state: AtomicU64,
    seats: Mutex<Seats>,
}

const TAKEN: u64 = u32::MAX as u64;

/// A seat that has announced nothing while the room counted this many
/// announcements per seat wants no more than it holds.
const STALE: u64 = 8;

/// The seats of a room.
#[derive(Debug, Default)]
struct Seats {
    /// The id of the next seat.
    next: u64,
    /// Demands announced so far, by every seat.
    announcements: u64,
    /// In the order the seats were taken.
    list: Vec<Entry>,
}

/// What a seat announced last.
#[derive(Debug, Clone, Copy)]
struct Entry {
    id: u64,
    /// The room it asked for.
    demand: u32,
    /// The room it held.
    held: u32,
    /// `announcements` then.
    at: u64,
}

impl Seats {
    /// The demand the shares count for `entry`: what it asked for, or what
    /// it held if it asked too long ago.
    fn demand(&self, entry: &Entry) -> u32 {
        let stale_after = STALE.saturating_mul(self.list.len() as u64);
        if self.announcements - entry.at > stale_after {
            entry.held.min(entry.demand)
        } else {
            entry.demand
        }
    }

    /// Each seat with its max-min fair share of `capacity`, in order.
    fn shares(&self, capacity: u32) -> impl Iterator<Item = (&Entry, u32)> {
        let level = Level::of(capacity, self.list.iter().map(|entry| self.demand(entry)));
        let mut rank = 0;
        self.list.iter().map(move |entry| {
            let demand = self.demand(entry);
            let share = level.share(demand, rank);
            if demand > level.level {
                rank += 1;
            }
            (entry, share)
        })
    }
}

/// The water level of a max-min fair division of a capacity among
/// demands: each demand up to `level` is met in full, each larger one gets
/// `level`, and the first `spare` of the larger ones one slot more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Level {
    level: u32,
    spare: u32,
}

impl Level {
    fn of(capacity: u32, demands: impl Iterator<Item = u32> + Clone) -> Level {
        let filled = |level: u32| -> u64 { demands.clone().map(|d| u64::from(d.min(level))).sum() };
        let most = demands.clone().max().unwrap_or(0);
        let capacity64 = u64::from(capacity);
        if filled(most) <= capacity64 {
            return Level {
                level: most,
                spare: 0,
            };
        }
        // filled(low) fits, filled(high) does not.
        let (mut low, mut high) = (0, most);
        while high - low > 1 {
            let mid = low + (high - low) / 2;
            if filled(mid) <= capacity64 {
                low = mid;
            } else {
                high = mid;
            }
        }
        // Fewer than the demands above `low`: filled(low + 1) does not fit.
        let spare = (capacity64 - filled(low)) as u32;
        Level { level: low, spare }
    }

    /// The share of `demand`, the `rank`-th (from 0) of the demands above
    /// the level.
    fn share(self, demand: u32, rank: usize) -> u32 {
        if demand <= self.level {
            demand
        } else {
            self.level + u32::from(rank < self.spare as usize)
        }
    }
}

impl Room {
    /// Room for `capacity` slots above what the adaptive bulkheads reserve, none
    /// taken.
    pub fn new(capacity: u32) -> Self {
        Room {
            state: AtomicU64::new(u64::from(capacity) << 32),
            seats: Mutex::new(Seats::default()),
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

    /// How many adaptive bulkheads share the room now.
    pub fn seats(&self) -> usize {
        lock(&self.seats).list.len()
    }

    /// Sets the capacity. Lowering it below what is taken stops every
    /// growth until the bulkheads give back the difference (the registry
    /// asks them to at once); lowering it below their demands lowers their
    /// shares, and each gives back what it holds above its share at its
    /// next window close.
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

    /// A seat at `room` for one more bulkhead, which asks for nothing yet.
    pub(crate) fn join(room: Arc<Room>) -> Seat {
        let id = {
            let mut seats = lock(&room.seats);
            let id = seats.next;
            seats.next += 1;
            let at = seats.announcements;
            seats.list.push(Entry {
                id,
                demand: 0,
                held: 0,
                at,
            });
            id
        };
        Seat { room, id, share: 0 }
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
            .field("seats", &self.seats())
            .finish()
    }
}

/// One adaptive bulkhead's place at a [`Room`]: it announces its demand
/// through it and holds at most its fair share. Dropping it leaves the
/// room (give back what it holds first); it reads as the room it is at.
#[derive(Debug)]
pub(crate) struct Seat {
    room: Arc<Room>,
    id: u64,
    /// The share its last announcement got.
    share: u32,
}

impl Seat {
    /// Whether it is a seat at `room`.
    pub(crate) fn is_at(&self, room: &Arc<Room>) -> bool {
        Arc::ptr_eq(&self.room, room)
    }

    /// The share its last announcement got.
    pub(crate) fn share(&self) -> u32 {
        self.share
    }

    /// Announces that it asks for `demand` slots of room and holds `held`;
    /// returns how many it may hold from now on: up to the smaller of its
    /// demand and its fair share, taking free room to get there, or less
    /// than `held` (it gives the difference back once its limit is
    /// lowered).
    pub(crate) fn settle(&mut self, demand: u32, held: u32) -> u32 {
        let room = &*self.room;
        let mut seats = lock(&room.seats);
        seats.announcements += 1;
        let at = seats.announcements;
        // A seat is on its room's list until it is dropped; were it not,
        // it keeps what it holds and takes nothing (no panic under the
        // lock every seat of the room shares).
        let Some(index) = seats.list.iter().position(|entry| entry.id == self.id) else {
            return held;
        };
        seats.list[index].demand = demand;
        seats.list[index].at = at;
        let (mut share, mut deprived) = (0, false);
        for (i, (entry, fair)) in seats.shares(room.capacity()).enumerate() {
            if i == index {
                share = fair;
            } else if entry.held < fair {
                deprived = true;
            }
        }
        let keep = if share > held {
            held + room.take(share - held)
        } else if deprived {
            share
        } else {
            // Nobody waits for what it holds above its share.
            held.min(demand)
        };
        seats.list[index].held = keep;
        self.share = share;
        keep
    }
}

impl Deref for Seat {
    type Target = Room;

    fn deref(&self) -> &Room {
        &self.room
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        lock(&self.room.seats)
            .list
            .retain(|entry| entry.id != self.id);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The shares of `capacity` for fresh `demands`, in the order the
    /// seats were taken.
    fn shares(capacity: u32, demands: &[u32]) -> Vec<u32> {
        let list = (0..)
            .zip(demands)
            .map(|(id, &demand)| Entry {
                id,
                demand,
                held: 0,
                at: 1,
            })
            .collect();
        let seats = Seats {
            next: demands.len() as u64,
            announcements: 1,
            list,
        };
        seats.shares(capacity).map(|(_, share)| share).collect()
    }

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

    #[test]
    fn a_lone_bulkhead_gets_its_demand_up_to_the_capacity() {
        assert_eq!(shares(38, &[12]), [12]);
        assert_eq!(shares(38, &[100]), [38]);
        assert_eq!(shares(38, &[0]), [0]);
        assert_eq!(shares(38, &[]), [0u32; 0]);
    }

    #[test]
    fn no_capacity_is_no_share_for_anyone() {
        assert_eq!(shares(0, &[5, 0, 100]), [0, 0, 0]);
    }

    #[test]
    fn demands_that_fit_are_met_in_full() {
        assert_eq!(shares(38, &[3, 30, 5]), [3, 30, 5]);
        assert_eq!(shares(38, &[8, 30]), [8, 30]);
    }

    #[test]
    fn a_demand_below_an_equal_split_is_met_and_the_rest_split_equally() {
        // Equal split 10: 2 keeps 2; the 28 left split 14 each: 10 keeps
        // 10; the last gets the 18 left.
        assert_eq!(shares(30, &[2, 10, 30]), [2, 10, 18]);
        assert_eq!(shares(30, &[40, 2, 40]), [14, 2, 14]);
        assert_eq!(shares(38, &[50, 50]), [19, 19]);
    }

    #[test]
    fn a_slot_that_does_not_split_goes_to_the_first_seated() {
        assert_eq!(shares(39, &[50, 50]), [20, 19]);
        assert_eq!(shares(10, &[1, 9, 9, 9]), [1, 3, 3, 3]);
        assert_eq!(shares(11, &[1, 9, 9, 9]), [1, 4, 3, 3]);
        assert_eq!(shares(11, &[9, 1, 9, 9]), [4, 1, 3, 3]);
    }

    #[test]
    fn the_shares_never_exceed_the_capacity_nor_a_demand() {
        let mut seed = 7u64;
        let mut next = move |below: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) % below) as u32
        };
        for _ in 0..2000 {
            let n = next(6) as usize;
            let capacity = next(60);
            let demands: Vec<u32> = (0..n).map(|_| next(40)).collect();
            let got = shares(capacity, &demands);
            let total: u32 = got.iter().sum();
            let wanted: u32 = demands.iter().sum();
            assert_eq!(
                total,
                capacity.min(wanted),
                "{capacity} {demands:?} {got:?}"
            );
            for (&share, &demand) in got.iter().zip(&demands) {
                assert!(share <= demand, "{capacity} {demands:?} {got:?}");
                // Max-min: one that got less than it asked for got at
                // least as much as every other (less one spare slot).
                if share < demand {
                    assert!(got.iter().all(|&other| other <= share + 1));
                }
            }
        }
    }

    #[test]
    fn a_seat_above_its_share_keeps_only_its_share_and_one_below_takes_up_to_it() {
        let room = Arc::new(Room::new(38));
        let (mut a, mut b) = (Room::join(Arc::clone(&room)), Room::join(Arc::clone(&room)));
        assert_eq!(room.seats(), 2);
        // a alone asks: all of it.
        assert_eq!(a.settle(100, 0), 38);
        // b asks for 10 of a full room: its share, nothing free yet.
        assert_eq!((b.settle(10, 0), b.share()), (0, 10));
        // a's next close: it keeps 28 and gives back 10 ...
        assert_eq!((a.settle(100, 38), a.share()), (28, 28));
        room.give(10);
        // ... which b takes at its next.
        assert_eq!(b.settle(10, 0), 10);
        // Both ask for more than an equal split: 19 each.
        assert_eq!(b.settle(100, 10), 10);
        assert_eq!(a.settle(100, 28), 19);
        room.give(9);
        assert_eq!(b.settle(100, 10), 19);
        assert_eq!(room.taken(), 38);
    }

    #[test]
    fn a_shrinking_capacity_is_shared_out_again_as_the_windows_close() {
        let room = Arc::new(Room::new(20));
        let (mut a, mut b) = (Room::join(Arc::clone(&room)), Room::join(Arc::clone(&room)));
        assert_eq!(a.settle(50, 0), 20);
        assert_eq!(b.settle(50, 0), 0);
        assert_eq!(a.settle(50, 20), 10);
        room.give(10);
        assert_eq!(b.settle(50, 0), 10);
        room.set_capacity(8);
        // The registry has them give back the excess (12) at once: a all
        // it holds, b the rest.
        assert_eq!(a.settle(0, 10), 0);
        room.give(10);
        assert_eq!(b.settle(8, 10), 8);
        room.give(2);
        assert_eq!((room.taken(), room.excess()), (8, 0));
        // Then their windows share the 8 out fairly.
        assert_eq!((a.settle(50, 0), a.share()), (0, 4));
        assert_eq!(b.settle(50, 8), 4);
        room.give(4);
        assert_eq!(a.settle(50, 0), 4);
        assert_eq!(room.taken(), 8);
    }

    #[test]
    fn a_seat_above_its_share_keeps_what_nobody_waits_for() {
        let room = Arc::new(Room::new(10));
        let (mut a, _b) = (Room::join(Arc::clone(&room)), Room::join(Arc::clone(&room)));
        assert_eq!(a.settle(10, 0), 10);
        // A lower capacity shrinks its share, but nobody waits: it keeps
        // what it holds (the registry reclaims the excess).
        room.set_capacity(4);
        assert_eq!((a.settle(10, 10), a.share()), (10, 4));
        assert_eq!(a.settle(6, 10), 6, "its demand is still met");
    }

    #[test]
    fn a_seat_that_left_no_longer_counts() {
        let room = Arc::new(Room::new(30));
        let (mut a, mut b) = (Room::join(Arc::clone(&room)), Room::join(Arc::clone(&room)));
        assert_eq!(b.settle(30, 0), 30);
        assert_eq!(a.settle(30, 0), 0);
        assert_eq!(b.settle(30, 30), 15);
        room.give(15);
        assert_eq!(a.settle(30, 0), 15);
        // b gives back what it holds and leaves.
        room.give(15);
        drop(b);
        assert_eq!(room.seats(), 1);
        assert_eq!(a.settle(30, 15), 30);
    }

    #[test]
    fn a_seat_silent_for_long_wants_no_more_than_it_holds() {
        let room = Arc::new(Room::new(30));
        let (mut a, mut b) = (Room::join(Arc::clone(&room)), Room::join(Arc::clone(&room)));
        // b asked for 20 and got 5; then its calls stopped.
        assert_eq!(a.settle(25, 0), 25);
        assert_eq!(b.settle(20, 0), 5);
        assert_eq!(a.settle(30, 25), 15);
        room.give(10);
        // While b is recent, a keeps to its share...
        for _ in 0..2 * STALE - 1 {
            assert_eq!(a.settle(30, 15), 15);
        }
        // ...then b counts for what it holds, and a grows around it.
        assert_eq!(a.settle(30, 15), 25);
        assert_eq!(room.taken(), 30);
        // b's next announcement counts again: a is above its share.
        assert_eq!((b.settle(20, 5), b.share()), (5, 15));
        assert_eq!(a.settle(30, 25), 15);
    }
}
