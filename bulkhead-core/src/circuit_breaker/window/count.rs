//! # Implementation details
//!
//! A count-based window: the last `size` outcomes, in a ring of slots, with
//! running counters of the outcomes the ring holds.
//!
//! ## Slots
//!
//! ```text
//!  31                      3     2       1      0
//! +-------------------------+---------+------+--------+
//! | epoch                   | WRITTEN | SLOW | FAILED |
//! +-------------------------+---------+------+--------+
//! ```
//!
//! A ring index, tagged with the window's epoch and advanced with a
//! compare-exchange, picks the next slot; the slot is overwritten with the
//! outcome, tagged with the epoch of the closed state that admitted the
//! call. Only slots of the current epoch count, so resetting the window
//! (when the breaker closes again) rewrites the three counters and the
//! index's epoch, and not the slots.
//!
//! ## Counters
//!
//! `calls`, `failed` and `slow` count the slots of the current epoch that are
//! written, failed and slow. Each is a 64-bit word, the epoch it counts in
//! the upper half and the count (read as signed) in the lower one. A writer
//! swaps its slot and applies the difference between what it wrote and what
//! it replaced to each counter, with a compare-exchange that checks the
//! counter's epoch: an update from a writer of another epoch, or one that
//! lands after a reset, changes nothing that the new epoch counts. So the
//! counters always converge on the slots' contents, whatever the
//! interleaving; in between, a counter may briefly lag its slot by the
//! updates still in flight (it is clamped to `0..=size` when read).
//!
//! ## Costs
//!
//! A success while the window holds nothing but successes of the current
//! epoch, the steady state of a healthy dependency, is three loads: the
//! counters say so (`calls` full, `failed` and `slow` zero), and one more
//! success would change no slot, wherever the ring stands, so it is not
//! written and the ring does not move. Nothing is written, so callers on
//! many cores share the window's cache line without contention. Any other
//! outcome takes the next slot with a compare-exchange on the index (which
//! also spares a division: the index wraps in the word); one that replaces
//! the same value costs a load more, one that replaces another value a
//! compare-exchange on the slot and one per counter that changes. No lock,
//! no clock, no allocation.
//!
//! A success skipped while another call's failure is being written (its
//! slot swapped, its counter not yet) is as if it came just before that
//! failure: the ring then holds the failure for as many later outcomes as
//! it would have anyway.
//!
//! ## Late writers
//!
//! An outcome of an older epoch may pass the breaker's state check just
//! before a reset and reach the window after it. It must not take a place
//! of the new epoch's, or the window would count one outcome fewer (a
//! failure among them may be the one lost) until the ring came round. Two
//! checks keep it out, with no lock:
//!
//! - The index word carries the epoch it counts for, and a writer takes an
//!   index only while that is its own epoch (the compare-exchange that
//!   advances the index checks it). A writer that finds another epoch
//!   writes nothing: its outcome counts nowhere anyway. A reset changes the
//!   word's epoch and keeps its index, so an index taken just before the
//!   reset is one the old epoch used up: the new epoch's first `size`
//!   outcomes take the `size` slots after it, that one last.
//! - A writer that took its index in time but writes its slot only after
//!   the new epoch came round to it finds a newer epoch's outcome there,
//!   and leaves it: the slot is written with a compare-exchange that never
//!   replaces a newer epoch's value.
//!
//! So the new epoch holds exactly its last `size` outcomes, late writers or
//! not. Two loom models check it; the first fails without either check:
//! - `a_late_failure_racing_a_reset_takes_no_place_of_the_new_epoch`,
//! - `a_steady_state_success_racing_a_reset_counts_in_no_window`.
//!
//! ## When to check the thresholds
//!
//! Only a failure or a slow call can raise a rate; a success can only lower
//! them. The one other change that can open the breaker is the window
//! reaching `minimum_calls` (with rates already over a threshold): the
//! writer whose update of `calls` reaches it is told so, exactly once per
//! epoch.
//!
//! ## Memory ordering
//!
//! The counters and slot writes are `AcqRel`, so a check that reads the
//! counters after its own update sees every update that came before it on
//! each counter. The index and the slot's first load are `Relaxed`: they
//! pick a slot, and the compare-exchanges that act on them check the values
//! they read. A reset happens before the new epoch is published (`Release`
//! on the state word, `Acquire` when a call is admitted), so writers of the
//! new epoch see it, in the counters and in the index word alike; a writer
//! of an older epoch that reads the index word's old epoch takes an index
//! that the modification order puts before the reset's change of the word.

use super::Counts;
use crate::loom::atomic::{AtomicU32, AtomicU64, Ordering::*};

const FAILED: u32 = 1;
const SLOW: u32 = 1 << 1;
const WRITTEN: u32 = 1 << 2;
const TAG_SHIFT: u32 = 3;
const COUNT_MASK: u64 = u32::MAX as u64;

#[derive(Debug)]
pub(crate) struct CountWindow {
    slots: Box<[AtomicU32]>,
    /// The next slot to write, in the lower half, for the epoch in the
    /// upper half: advanced by each outcome written (a success skipped in
    /// the steady state is not), wrapping at the ring's size.
    next: AtomicU64,
    calls: AtomicU64,
    failed: AtomicU64,
    slow: AtomicU64,
    /// `calls` at which the thresholds start to count.
    minimum: u32,
}

impl CountWindow {
    /// An empty window of `size` slots (at least 1) for epoch 0.
    pub(super) fn new(size: u32, minimum: u32) -> Self {
        CountWindow {
            slots: (0..size.max(1)).map(|_| AtomicU32::new(0)).collect(),
            next: AtomicU64::new(0),
            calls: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            slow: AtomicU64::new(0),
            minimum,
        }
    }

    /// Records an outcome of epoch `epoch`; returns whether the thresholds
    /// need checking.
    #[inline]
    pub(super) fn record(&self, epoch: u32, failed: bool, slow: bool) -> bool {
        // The breaker makes the same test inline before it comes here
        // (`Shared::record`); it is repeated for every other caller, and
        // for a window that has just become all successes since.
        if !failed && !slow && self.all_successes(epoch) {
            // Every slot holds a success of this epoch: one more success
            // changes nothing, wherever it would go.
            return false;
        }
        let Some(index) = self.take_index(epoch) else {
            // A late writer: its epoch is gone, its outcome counts nowhere.
            return false;
        };
        self.write(index, epoch, failed, slow)
    }

    /// Writes an outcome of `epoch` into slot `index`, taken with
    /// [`take_index`](Self::take_index), unless a newer epoch's outcome is
    /// there; returns whether the thresholds need checking.
    #[inline]
    fn write(&self, index: usize, epoch: u32, failed: bool, slow: bool) -> bool {
        let slot = &self.slots[index];
        let outcome = slot_value(epoch, failed, slow);
        let mut replaced = slot.load(Relaxed);
        loop {
            if replaced == outcome {
                // The same outcome of the same epoch: nothing changes.
                return failed || slow;
            }
            if is_newer(replaced, epoch) {
                // A late writer whose slot a newer epoch has taken since.
                return false;
            }
            match slot.compare_exchange_weak(replaced, outcome, AcqRel, Relaxed) {
                Ok(_) => break,
                Err(actual) => replaced = actual,
            }
        }
        self.replaced(replaced, outcome) || failed || slow
    }

    /// Takes the next slot's index for a writer of `epoch`, if the window
    /// still counts that epoch.
    #[inline]
    fn take_index(&self, epoch: u32) -> Option<usize> {
        let mut word = self.next.load(Relaxed);
        loop {
            if (word >> 32) as u32 != epoch {
                return None;
            }
            let index = word as u32;
            let following = match index + 1 {
                // The ring has at most u32::MAX slots: no overflow.
                next if next as usize >= self.slots.len() => 0,
                next => next,
            };
            let advanced = word & !COUNT_MASK | u64::from(following);
            match self
                .next
                .compare_exchange_weak(word, advanced, Relaxed, Relaxed)
            {
                Ok(_) => return Some(index as usize),
                Err(actual) => word = actual,
            }
        }
    }

    /// Whether the counters say that every slot holds a success of
    /// `epoch`: all written, none failed or slow. Three loads of words that
    /// nobody writes while it stays true.
    #[inline]
    pub(super) fn all_successes(&self, epoch: u32) -> bool {
        let tag = u64::from(epoch) << 32;
        self.failed.load(Relaxed) == tag
            && self.slow.load(Relaxed) == tag
            && self.calls.load(Relaxed) == tag | self.slots.len() as u64
    }

    /// Applies to the counters a slot's change from `replaced` to
    /// `outcome`; returns whether `calls` just reached the minimum.
    fn replaced(&self, replaced: u32, outcome: u32) -> bool {
        let calls = adjust(&self.calls, replaced, outcome, WRITTEN);
        adjust(&self.failed, replaced, outcome, FAILED);
        adjust(&self.slow, replaced, outcome, SLOW);
        calls == Some(self.minimum)
    }

    /// What the window holds for epoch `epoch` (nothing if it was reset for
    /// another one).
    pub(super) fn counts(&self, epoch: u32) -> Counts {
        let size = u32::try_from(self.slots.len()).unwrap_or(u32::MAX);
        let calls = read(&self.calls, epoch, size);
        Counts {
            calls,
            failed: read(&self.failed, epoch, calls),
            slow: read(&self.slow, epoch, calls),
        }
    }

    /// Empties the window for epoch `epoch`.
    pub(super) fn reset(&self, epoch: u32) {
        // Closed epochs grow (modulo 2^29), so every slot is tagged with an
        // epoch no later than the previous closed one. A new closed epoch
        // that is not later than it means the epochs wrapped since: a slot
        // written 2^29 transitions ago could look current, so all are
        // cleared. (The wrap may land on any state, not only on a closed
        // epoch 0. Clearing races only with writers of a state that long
        // gone, whose outcomes are dropped anyway.)
        let previous = (self.calls.load(Acquire) >> 32) as u32;
        if epoch <= previous {
            for slot in self.slots.iter() {
                slot.swap(0, Relaxed);
            }
        }
        // Swaps, not stores, for loom: see `machine.rs`.
        let empty = u64::from(epoch) << 32;
        for counter in [&self.calls, &self.failed, &self.slow] {
            counter.swap(empty, Release);
        }
        // Late writers of older epochs take no index from here on; the
        // index stays where it is (see "Late writers").
        let mut word = self.next.load(Relaxed);
        while let Err(actual) =
            self.next
                .compare_exchange_weak(word, word & COUNT_MASK | empty, Release, Relaxed)
        {
            word = actual;
        }
    }
}

fn slot_value(epoch: u32, failed: bool, slow: bool) -> u32 {
    epoch << TAG_SHIFT | WRITTEN | u32::from(slow) << 1 | u32::from(failed)
}

/// Whether the slot value `slot` is an outcome of an epoch later than
/// `epoch` (epochs wrap at 2^29: later means less than half the circle on).
fn is_newer(slot: u32, epoch: u32) -> bool {
    const EPOCHS: u32 = (1 << (32 - TAG_SHIFT)) - 1;
    let ahead = (slot >> TAG_SHIFT).wrapping_sub(epoch) & EPOCHS;
    slot & WRITTEN != 0 && ahead != 0 && ahead <= EPOCHS / 2
}

/// Whether the slot value `slot` is an outcome of `epoch` with `flag` set.
fn counts_in(slot: u32, epoch: u32, flag: u32) -> bool {
    slot & WRITTEN != 0 && slot >> TAG_SHIFT == epoch && slot & flag != 0
}

/// Applies to `counter` the change of one slot from `old` to `new`, as far
/// as the counter's epoch and `flag` are concerned. Returns the new count if
/// it changed.
fn adjust(counter: &AtomicU64, old: u32, new: u32, flag: u32) -> Option<u32> {
    let mut current = counter.load(Acquire);
    loop {
        let epoch = (current >> 32) as u32;
        let delta = i32::from(counts_in(new, epoch, flag)) - i32::from(counts_in(old, epoch, flag));
        if delta == 0 {
            return None;
        }
        let count = (current as u32).wrapping_add_signed(delta);
        let next = current & !COUNT_MASK | u64::from(count);
        match counter.compare_exchange_weak(current, next, AcqRel, Acquire) {
            Ok(_) => return Some(count),
            Err(actual) => current = actual,
        }
    }
}

/// A counter's count for `epoch`, within `0..=max`.
fn read(counter: &AtomicU64, epoch: u32, max: u32) -> u32 {
    let value = counter.load(Acquire);
    if (value >> 32) as u32 != epoch {
        return 0;
    }
    // Below zero while a decrement overtook its increment: read 0.
    u32::try_from(value as u32 as i32).map_or(0, |count| count.min(max))
}

#[cfg(test)]
mod consistency {
    use super::*;

    impl CountWindow {
        /// The counters are exactly the written, failed and slow slots of
        /// their epoch.
        pub(in crate::circuit_breaker::window) fn assert_consistent(&self) {
            let epoch = (self.calls.load(Acquire) >> 32) as u32;
            let recount = |flag| {
                let n = self.slots.iter();
                n.filter(|slot| counts_in(slot.load(Acquire), epoch, flag))
                    .count() as u64
            };
            for (counter, flag) in [
                (&self.calls, WRITTEN),
                (&self.failed, FAILED),
                (&self.slow, SLOW),
            ] {
                let value = counter.load(Acquire);
                assert_eq!(value >> 32, u64::from(epoch), "counters of one epoch");
                assert_eq!(value & COUNT_MASK, recount(flag), "flag {flag}");
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn record_all(window: &CountWindow, epoch: u32, outcomes: &str) -> Vec<bool> {
        outcomes
            .chars()
            .map(|c| window.record(epoch, c == 'F' || c == 'B', c == 'S' || c == 'B'))
            .collect()
    }

    fn counts(calls: u32, failed: u32, slow: u32) -> Counts {
        Counts {
            calls,
            failed,
            slow,
        }
    }

    #[test]
    fn a_success_in_a_window_of_successes_writes_nothing() {
        let window = CountWindow::new(3, 3);
        record_all(&window, 0, "..");
        assert_eq!(window.next.load(Relaxed), 2, "not full yet: written");
        record_all(&window, 0, ".");
        assert_eq!(record_all(&window, 0, "...."), [false; 4]);
        assert_eq!(window.next.load(Relaxed), 0, "round once, then still");
        // A failure still goes in, and leaves after three more outcomes.
        record_all(&window, 0, "F");
        assert_eq!(window.counts(0), counts(3, 1, 0));
        record_all(&window, 0, "..");
        assert_eq!(window.counts(0), counts(3, 1, 0));
        record_all(&window, 0, ".");
        assert_eq!(window.counts(0), counts(3, 0, 0));
        // A slow success is written.
        record_all(&window, 0, "S");
        assert_eq!(window.counts(0), counts(3, 0, 1));
        window.assert_consistent();
        // The successes of an older epoch are not this one's: written.
        window.reset(1);
        record_all(&window, 1, "...");
        assert_eq!(window.counts(1), counts(3, 0, 0));
        window.assert_consistent();
    }

    #[test]
    fn it_holds_exactly_the_last_n_outcomes() {
        let window = CountWindow::new(4, 4);
        record_all(&window, 0, "FF");
        assert_eq!(window.counts(0), counts(2, 2, 0));
        record_all(&window, 0, "..S");
        // F F . . | S: the first failure fell out.
        assert_eq!(window.counts(0), counts(4, 1, 1));
        record_all(&window, 0, "....");
        assert_eq!(window.counts(0), counts(4, 0, 0));
        record_all(&window, 0, "B");
        assert_eq!(window.counts(0), counts(4, 1, 1));
    }

    #[test]
    fn only_failures_slow_calls_and_reaching_the_minimum_ask_for_a_check() {
        let window = CountWindow::new(5, 3);
        assert_eq!(record_all(&window, 0, ".."), [false, false]);
        assert_eq!(
            record_all(&window, 0, "."),
            [true],
            "the third call reaches the minimum"
        );
        assert_eq!(
            record_all(&window, 0, "..F.S..."),
            [false, false, true, false, true, false, false, false]
        );
    }

    #[test]
    fn a_reset_forgets_the_old_epoch_and_its_late_writers() {
        let window = CountWindow::new(3, 3);
        record_all(&window, 0, "FFF");
        window.reset(1);
        assert_eq!(window.counts(1), counts(0, 0, 0));
        assert_eq!(window.counts(0), counts(0, 0, 0));
        // A late outcome of epoch 0 does not count in epoch 1 ...
        record_all(&window, 0, "F");
        assert_eq!(window.counts(1), counts(0, 0, 0));
        // ... and epoch 1 overwrites old slots as if they were empty.
        record_all(&window, 1, ".F.");
        assert_eq!(window.counts(1), counts(3, 1, 0));
        record_all(&window, 1, "...");
        assert_eq!(window.counts(1), counts(3, 0, 0));
    }

    #[test]
    fn a_late_writer_takes_no_place_of_the_new_epoch() {
        let window = CountWindow::new(2, 2);
        window.reset(5);
        record_all(&window, 5, "F");
        // An outcome of epoch 4 after the reset: no index, no slot.
        assert_eq!(record_all(&window, 4, "."), [false]);
        record_all(&window, 5, ".");
        assert_eq!(window.counts(5), counts(2, 1, 0));
        record_all(&window, 5, "..");
        assert_eq!(window.counts(5), counts(2, 0, 0), "exactly the last two");
        window.assert_consistent();
    }

    #[test]
    fn a_late_writer_that_took_its_index_in_time_leaves_a_newer_slot_alone() {
        let window = CountWindow::new(2, 2);
        window.reset(4);
        // Epoch 4's writer took index 0, then the reset, and epoch 5 came
        // round to that slot before the writer wrote its failure.
        let index = window.take_index(4).unwrap();
        window.reset(5);
        record_all(&window, 5, "F..");
        assert_eq!(window.counts(5), counts(2, 0, 0));
        assert!(!window.write(index, 4, true, false), "nothing to check");
        assert_eq!(window.counts(5), counts(2, 0, 0), "the slot kept");
        window.assert_consistent();
        // Had it written before epoch 5 came round, the slot would have
        // been the old epoch's, and epoch 5 would still hold its last two.
        let window = CountWindow::new(2, 2);
        window.reset(4);
        let index = window.take_index(4).unwrap();
        window.reset(5);
        record_all(&window, 5, "F");
        window.write(index, 4, true, false);
        assert_eq!(window.counts(5), counts(1, 1, 0));
        record_all(&window, 5, ".");
        assert_eq!(window.counts(5), counts(2, 1, 0));
        window.assert_consistent();
    }

    #[test]
    fn newer_is_read_round_the_epoch_circle() {
        let wrapped = (1 << 29) - 1;
        assert!(is_newer(slot_value(6, false, false), 5));
        assert!(!is_newer(slot_value(5, true, false), 5));
        assert!(!is_newer(slot_value(4, false, false), 5));
        assert!(is_newer(slot_value(0, false, false), wrapped));
        assert!(!is_newer(slot_value(wrapped, false, false), 0));
        assert!(!is_newer(0, 5), "an empty slot is no epoch's");
    }

    #[test]
    fn the_epoch_wrap_clears_the_slots() {
        let window = CountWindow::new(2, 2);
        record_all(&window, 0, "FF");
        window.reset(0);
        record_all(&window, 0, ".");
        assert_eq!(window.counts(0), counts(1, 0, 0));
    }

    #[test]
    fn a_wrap_that_lands_on_another_state_clears_the_slots_too() {
        // Closed at epoch 1 with three failures, then closed again at 5;
        // 2^29 transitions later (the wrap fell on an open or half-open
        // state) the breaker closes at epoch 1 again.
        let window = CountWindow::new(4, 4);
        window.reset(1);
        record_all(&window, 1, "FFF");
        window.reset(5);
        record_all(&window, 5, ".");
        window.reset(1);
        assert_eq!(
            window.counts(1),
            counts(0, 0, 0),
            "nothing of the old epoch 1"
        );
        record_all(&window, 1, "....");
        assert_eq!(window.counts(1), counts(4, 0, 0));
        window.assert_consistent();
    }
}
