//! # Implementation details
//!
//! A time-based window: the outcomes of the last `size` seconds, on the
//! breaker's clock, in one bucket per second, with running totals of what
//! the live buckets hold (Resilience4j's `SlidingTimeWindowMetrics`, without
//! its lock).
//!
//! ## Ticks
//!
//! A closed epoch counts its seconds in *ticks*: second `s` (counted from 1
//! at the breaker's creation) is tick `s + base`, where `base` grows by one
//! at every reset. Ticks only grow, and no tick is shared by two epochs (see
//! *Resets*), so a tag that names a tick names an epoch and a second at once.
//! Tick `t` lives in bucket `t % size`.
//!
//! ## Words
//!
//! ```text
//!             63            35 34                        0
//! frame:     +----------------+---------------------------+
//!            | epoch          | base                      |
//! head:      | epoch          | latest tick               |
//! totals:    | epoch          | count (two's complement)  |
//!            +----------------+---------------------------+
//!
//!             63                           29 28          0
//! counters:  +-------------------------------+------------+
//!            | tick                          | count      |
//!            +-------------------------------+------------+
//! ```
//!
//! - `frame` gives a writer of the epoch in force its `base` (a writer of
//!   another epoch stops here);
//! - `head` is the latest tick the window has reached: it holds the ticks
//!   `(head - size, head]`;
//! - a bucket has three counters, `calls`, `failed` and `slow`, each tagged
//!   with the tick it counts;
//! - `calls`, `failed` and `slow` totals are the sums of the live counters.
//!
//! ## Recording
//!
//! A writer of tick `t` first makes sure the head has reached `t`: if it is
//! behind, a compare-exchange moves it (a tick `size` or more behind the
//! head is dropped). Then, per counter, a compare-exchange that checks the
//! tag:
//!
//! - the counter holds `t`: add one;
//! - it holds an earlier tick (one that has left the window): start `t`
//!   with this outcome, taking the old count out of the total;
//! - it holds a later tick: `t` has left the window meanwhile, the outcome
//!   is dropped.
//!
//! A counter that changed then applies the same difference to its total
//! with a compare-exchange that checks the total's epoch. A write meant for
//! a tick or an epoch that is gone therefore changes nothing that counts.
//!
//! ## Expiry
//!
//! The writer that moves the head from `h` to `t` moves the buckets of the
//! ticks that enter the window, `(max(h, t - size), t]`, on to those ticks,
//! with the same compare-exchange (a tag only ever grows), and takes what
//! they held out of the totals: at most `size` buckets, once per second
//! that passes, not per call. Writers that find a bucket the expiry has not
//! reached yet move it on themselves. A total may briefly lag its buckets by
//! the updates still in flight (it is read clamped at zero); once writers
//! stop it is exactly the sum of the live buckets.
//!
//! ## Resets
//!
//! A reset (under the breaker's mutex, before the new closed state is
//! published) moves the head to `(new epoch, latest + 1)` by
//! compare-exchange: from then on no writer of an earlier epoch can move the
//! head, so none holds a tick above the old `latest`. The new `base` maps
//! the old head's second to `latest + 1`, the totals restart at zero for
//! the new epoch, and every counter is tagged with its bucket's first tick
//! from `latest + 1` on, with a count of zero. A late writer's tick is below
//! every tag from then on: it changes no counter, and its total update
//! fails the epoch check.
//!
//! ## When to check the thresholds
//!
//! Rates change when calls are recorded and when seconds expire. Checks
//! follow a failure or a slow call; the call that moves the head (which sees
//! the seconds that expired); and, while the last check found a rate over
//! its threshold with fewer than `minimum_calls` calls (`pending`), every
//! call. Other successes only lower the rates. Under concurrency `pending`
//! may be a call late in either direction: the breaker then opens one call
//! late, or checks one call more.
//!
//! ## Costs
//!
//! A success: a recent clock reading (see `Clock::recent`: a second is
//! counted to within the clock's resolution), two loads (`frame`, `head`) and two
//! compare-exchanges (its counter, its total); a failure or a slow call, two
//! more each. A check reads the three totals: O(1), whatever the window's
//! size. No lock, no allocation. A reset and a jump of the clock by `size`
//! seconds or more touch every bucket.
//!
//! ## Memory ordering
//!
//! Read-modify-writes are `AcqRel` and loads `Acquire`: a writer that finds
//! the head or a counter moved on sees what the mover did before. A reset
//! happens before the new epoch is published (`Release` on the state word,
//! `Acquire` when a call is admitted), so writers of the new epoch see its
//! frame, head, totals and counters. Every later change of a counter is a
//! read-modify-write, so a late writer's compare-exchange that reads one
//! fails on its tag.
//!
//! ## Limits
//!
//! A counter saturates at 2^29 - 1 outcomes in one second (more are not
//! counted), a total wraps past 2^34 outcomes in the window, and ticks stop
//! growing after 2^35 - 1 (136 years of seconds and billions of resets).
//! Epochs wrap at 2^29, as in the count window: a writer that stalls across
//! 2^29 transitions could count in a later epoch.

use super::Counts;
use crate::loom::atomic::{AtomicBool, AtomicU64, Ordering::*};

/// Where the epoch starts in `frame`, `head` and the totals.
const EPOCH_SHIFT: u32 = 35;
/// The low 35 bits of `frame`, `head` and the totals.
const LOW_MASK: u64 = (1 << EPOCH_SHIFT) - 1;
/// The largest tick.
const TICK_MAX: u64 = LOW_MASK;
/// The bits of a counter's count, below its tick.
const COUNT_BITS: u32 = 29;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;

#[derive(Debug)]
pub(crate) struct TimeWindow {
    /// `epoch | base`.
    frame: AtomicU64,
    /// `epoch | latest tick`.
    head: AtomicU64,
    buckets: Box<[Bucket]>,
    /// The totals of the live counters, `epoch | count`.
    calls: AtomicU64,
    failed: AtomicU64,
    slow: AtomicU64,
    /// The last check found a rate over its threshold below `minimum_calls`.
    pending: AtomicBool,
}

#[derive(Debug)]
struct Bucket {
    calls: AtomicU64,
    failed: AtomicU64,
    slow: AtomicU64,
}

/// One of a bucket's counters, and the total of its kind.
#[derive(Clone, Copy)]
enum Counter {
    Calls,
    Failed,
    Slow,
}

impl TimeWindow {
    /// An empty window of `seconds` buckets (at least 1) for epoch 0, whose
    /// first second is 1.
    pub(super) fn new(seconds: u32) -> Self {
        let bucket = |_| Bucket {
            calls: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            slow: AtomicU64::new(0),
        };
        let window = TimeWindow {
            frame: AtomicU64::new(pack(0, 0)),
            head: AtomicU64::new(pack(0, 1)),
            buckets: (0..seconds.max(1)).map(bucket).collect(),
            calls: AtomicU64::new(pack(0, 0)),
            failed: AtomicU64::new(pack(0, 0)),
            slow: AtomicU64::new(pack(0, 0)),
            pending: AtomicBool::new(false),
        };
        window.retag(1);
        window
    }

    /// Records an outcome of epoch `epoch` in second `second` (at least 1);
    /// returns whether the thresholds need checking.
    #[inline]
    pub(super) fn record(&self, epoch: u32, second: u32, failed: bool, slow: bool) -> bool {
        let Some(tick) = self.tick(epoch, second) else {
            return false;
        };
        let Some(advanced) = self.reach(epoch, tick) else {
            return false;
        };
        let counted = self.count(Counter::Calls, epoch, tick, 1);
        if counted && failed {
            self.count(Counter::Failed, epoch, tick, 1);
        }
        if counted && slow {
            self.count(Counter::Slow, epoch, tick, 1);
        }
        advanced || (counted && (failed || slow)) || self.pending.load(Relaxed)
    }

    /// What the window holds for epoch `epoch` at second `second` (nothing
    /// if it was reset for another one).
    pub(super) fn counts(&self, epoch: u32, second: u32) -> Counts {
        let Some(tick) = self.tick(epoch, second) else {
            return Counts::default();
        };
        // Seconds that left the window since the last call leave the totals.
        self.reach(epoch, tick);
        let calls = self.total(Counter::Calls, epoch);
        // A failure is counted after its call: clamp what raced ahead.
        Counts {
            calls,
            failed: self.total(Counter::Failed, epoch).min(calls),
            slow: self.total(Counter::Slow, epoch).min(calls),
        }
    }

    /// Empties the window for epoch `epoch`.
    pub(super) fn reset(&self, epoch: u32) {
        // The head first: once it names the new epoch no earlier writer can
        // move it, so every late tick is at most `latest`.
        let mut head = self.head.load(Acquire);
        let floor = loop {
            let floor = ((head & LOW_MASK) + 1).min(TICK_MAX);
            match self
                .head
                .compare_exchange_weak(head, pack(epoch, floor), AcqRel, Acquire)
            {
                Ok(_) => break floor,
                Err(actual) => head = actual,
            }
        };
        // The head's second is tick `floor` from now on. Swaps, not stores,
        // for loom: see `machine.rs`.
        let base = self.frame.load(Acquire) & LOW_MASK;
        self.frame
            .swap(pack(epoch, (base + 1).min(TICK_MAX)), Release);
        for which in [Counter::Calls, Counter::Failed, Counter::Slow] {
            self.totals(which).swap(pack(epoch, 0), Release);
        }
        self.retag(floor);
        self.pending.store(false, Relaxed);
    }

    pub(super) fn set_pending(&self, pending: bool) {
        if self.pending.load(Relaxed) != pending {
            self.pending.store(pending, Relaxed);
        }
    }

    fn size(&self) -> u64 {
        self.buckets.len() as u64
    }

    /// The tick of `second` for a writer of `epoch`, if that epoch is the
    /// window's.
    #[inline]
    fn tick(&self, epoch: u32, second: u32) -> Option<u64> {
        let frame = self.frame.load(Acquire);
        (epoch_of(frame) == epoch).then(|| (u64::from(second) + (frame & LOW_MASK)).min(TICK_MAX))
    }

    /// Moves the head on to `tick` if it is behind, expiring what leaves
    /// the window. `Some(moved)` if `tick` is in the window, `None` if it
    /// left it or the window was reset for another epoch.
    #[inline]
    fn reach(&self, epoch: u32, tick: u64) -> Option<bool> {
        let mut head = self.head.load(Acquire);
        loop {
            if epoch_of(head) != epoch {
                return None;
            }
            let latest = head & LOW_MASK;
            if tick <= latest {
                return (tick + self.size() > latest).then_some(false);
            }
            match self
                .head
                .compare_exchange_weak(head, pack(epoch, tick), AcqRel, Acquire)
            {
                Ok(_) => {
                    self.expire(epoch, latest, tick);
                    return Some(true);
                }
                Err(actual) => head = actual,
            }
        }
    }

    /// Moves the buckets of the ticks entering the window as the head moves
    /// from `from` to `to` on to those ticks, which expires the ones they
    /// held.
    #[inline(never)]
    fn expire(&self, epoch: u32, from: u64, to: u64) {
        let first = from.max(to.saturating_sub(self.size())) + 1;
        for tick in first..=to {
            for which in [Counter::Calls, Counter::Failed, Counter::Slow] {
                self.count(which, epoch, tick, 0);
            }
        }
    }

    /// Adds `n` (0 or 1) to the `which` counter of `tick`'s bucket, moving
    /// the bucket on to `tick` first if it holds an earlier one, and applies
    /// the change to the total of `epoch`. Returns whether the counter holds
    /// `tick` (with the outcome, if `n` is 1).
    fn count(&self, which: Counter, epoch: u32, tick: u64, n: u64) -> bool {
        let counter = self.counter(which, tick);
        let mut current = counter.load(Acquire);
        loop {
            let (at, count) = (current >> COUNT_BITS, current & COUNT_MASK);
            let (next, delta) = if at == tick {
                if n == 0 || count == COUNT_MASK {
                    // Nothing to add, or saturated: no change.
                    return n == 0;
                }
                (current + n, 1)
            } else if at < tick {
                // `at` has left the window: `tick` starts afresh.
                (tick << COUNT_BITS | n, n as i64 - count as i64)
            } else {
                // `tick` has left the window.
                return false;
            };
            match counter.compare_exchange_weak(current, next, AcqRel, Acquire) {
                Ok(_) => {
                    add(self.totals(which), epoch, delta);
                    return true;
                }
                Err(actual) => current = actual,
            }
        }
    }

    /// The total of `which` for `epoch`, clamped to `0..=u32::MAX`.
    fn total(&self, which: Counter, epoch: u32) -> u32 {
        let value = self.totals(which).load(Acquire);
        if epoch_of(value) != epoch {
            return 0;
        }
        // Sign-extend the 35-bit count: below zero while a decrement
        // overtook its increment.
        let count = ((value << (64 - EPOCH_SHIFT)) as i64) >> (64 - EPOCH_SHIFT);
        u32::try_from(count.max(0)).unwrap_or(u32::MAX)
    }

    /// Tags every counter with its bucket's first tick from `floor` on, and
    /// a count of zero.
    fn retag(&self, floor: u64) {
        let size = self.size();
        for (index, bucket) in self.buckets.iter().enumerate() {
            let tick = floor + (index as u64 + size - floor % size) % size;
            for counter in [&bucket.calls, &bucket.failed, &bucket.slow] {
                counter.swap(tick << COUNT_BITS, Release);
            }
        }
    }

    fn counter(&self, which: Counter, tick: u64) -> &AtomicU64 {
        let bucket = &self.buckets[(tick % self.size()) as usize];
        match which {
            Counter::Calls => &bucket.calls,
            Counter::Failed => &bucket.failed,
            Counter::Slow => &bucket.slow,
        }
    }

    fn totals(&self, which: Counter) -> &AtomicU64 {
        match which {
            Counter::Calls => &self.calls,
            Counter::Failed => &self.failed,
            Counter::Slow => &self.slow,
        }
    }
}

fn pack(epoch: u32, low: u64) -> u64 {
    u64::from(epoch) << EPOCH_SHIFT | low
}

fn epoch_of(word: u64) -> u32 {
    (word >> EPOCH_SHIFT) as u32
}

/// Adds `delta` to the total `total` if it counts for `epoch`.
fn add(total: &AtomicU64, epoch: u32, delta: i64) {
    if delta == 0 {
        return;
    }
    let mut current = total.load(Acquire);
    while epoch_of(current) == epoch {
        let count = current.wrapping_add(delta as u64) & LOW_MASK;
        match total.compare_exchange_weak(current, current & !LOW_MASK | count, AcqRel, Acquire) {
            Ok(_) => return,
            Err(actual) => current = actual,
        }
    }
}

#[cfg(test)]
mod consistency {
    use super::*;

    impl TimeWindow {
        /// The totals are exactly the sums of the live counters, and no counter
        /// outside the window holds anything.
        pub(in crate::circuit_breaker::window) fn assert_consistent(&self) {
            let head = self.head.load(Acquire);
            let (epoch, latest) = (epoch_of(head), head & LOW_MASK);
            assert_eq!(epoch_of(self.frame.load(Acquire)), epoch, "frame");
            for which in [Counter::Calls, Counter::Failed, Counter::Slow] {
                let mut live = 0;
                for first in 0..self.size() {
                    let value = self.counter(which, first).load(Acquire);
                    let (at, count) = (value >> COUNT_BITS, value & COUNT_MASK);
                    if at <= latest && at + self.size() > latest {
                        live += count;
                    } else {
                        assert_eq!(count, 0, "a count outside the window, at tick {at}");
                    }
                }
                let total = self.totals(which).load(Acquire);
                assert_eq!(epoch_of(total), epoch, "totals of one epoch");
                assert_eq!(total & LOW_MASK, live, "totals are the live counts");
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn counts(calls: u32, failed: u32, slow: u32) -> Counts {
        Counts {
            calls,
            failed,
            slow,
        }
    }

    #[test]
    fn old_seconds_expire_as_time_moves() {
        let window = TimeWindow::new(3);
        window.record(0, 1, true, false);
        window.record(0, 1, false, false);
        window.record(0, 2, false, true);
        assert_eq!(window.counts(0, 2), counts(3, 1, 1));
        assert_eq!(window.counts(0, 3), counts(3, 1, 1));
        // Second 1 is out of a 3-second window at second 4.
        assert_eq!(window.counts(0, 4), counts(1, 0, 1));
        assert_eq!(window.counts(0, 5), counts(0, 0, 0));
        // Second 5 reuses second 2's bucket and starts it afresh.
        window.record(0, 5, false, false);
        assert_eq!(window.counts(0, 5), counts(1, 0, 0));
        window.assert_consistent();
    }

    #[test]
    fn the_call_that_moves_the_window_asks_for_a_check() {
        let window = TimeWindow::new(2);
        assert!(!window.record(0, 1, false, false), "second 1 is the first");
        assert!(window.record(0, 1, true, false), "a failure");
        assert!(window.record(0, 2, false, false), "first call of second 2");
        assert!(!window.record(0, 2, false, false));
        assert!(
            window.record(0, 3, false, false),
            "second 3 replaces second 1"
        );
        assert!(!window.record(0, 3, false, false));
        window.set_pending(true);
        assert!(window.record(0, 3, false, false), "pending");
    }

    #[test]
    fn a_call_older_than_the_window_is_not_counted() {
        let window = TimeWindow::new(2);
        window.record(0, 5, false, false);
        // A writer that read the clock at second 3, late: bucket 1 now holds
        // second 5.
        assert!(!window.record(0, 3, true, false));
        // One at second 4 is still in the window.
        window.record(0, 4, true, false);
        assert_eq!(window.counts(0, 5), counts(2, 1, 0));
        window.assert_consistent();
    }

    #[test]
    fn a_reset_empties_every_bucket() {
        let window = TimeWindow::new(2);
        window.record(0, 1, true, true);
        window.record(0, 2, true, false);
        window.set_pending(true);
        window.reset(3);
        assert_eq!(window.counts(3, 2), counts(0, 0, 0));
        assert_eq!(window.counts(0, 2), counts(0, 0, 0), "epoch 0 is gone");
        window.record(3, 2, false, false);
        assert!(!window.record(3, 2, false, false), "no longer pending");
        assert_eq!(window.counts(3, 2), counts(2, 0, 0));
        window.assert_consistent();
    }

    #[test]
    fn a_late_writer_of_an_epoch_gone_counts_nowhere() {
        let window = TimeWindow::new(2);
        window.record(0, 1, true, false);
        window.reset(3);
        // Writers of epoch 0 that passed the breaker's state check before
        // the reset, at the reset's second and at a later one.
        assert!(!window.record(0, 1, true, true));
        assert!(!window.record(0, 2, true, false));
        assert_eq!(window.counts(3, 2), counts(0, 0, 0));
        window.record(3, 2, false, false);
        assert_eq!(window.counts(3, 2), counts(1, 0, 0));
        window.assert_consistent();
    }

    #[test]
    fn the_totals_follow_the_live_buckets_through_jumps_of_the_clock() {
        let window = TimeWindow::new(4);
        for second in 1..=6 {
            window.record(0, second, second % 2 == 0, false);
        }
        // Seconds 3 to 6: four calls, two failures (4 and 6).
        assert_eq!(window.counts(0, 6), counts(4, 2, 0));
        window.assert_consistent();
        // A jump of more than the window empties it.
        assert_eq!(window.counts(0, 100), counts(0, 0, 0));
        window.record(0, 100, true, false);
        assert_eq!(window.counts(0, 103), counts(1, 1, 0));
        assert_eq!(window.counts(0, 104), counts(0, 0, 0));
        window.assert_consistent();
        // A million-second window reads its totals, not its buckets.
        let wide = TimeWindow::new(1_000_000);
        wide.record(0, 1, true, false);
        wide.record(0, 999_999, false, false);
        assert_eq!(wide.counts(0, 1_000_000), counts(2, 1, 0));
        assert_eq!(wide.counts(0, 1_000_001), counts(1, 0, 0));
    }

    #[test]
    fn a_reset_while_the_window_lagged_the_clock_drops_nothing_new() {
        let window = TimeWindow::new(2);
        window.record(0, 1, true, false);
        // No call for a long time, then the breaker is reset at second 50.
        window.reset(3);
        window.record(3, 50, true, false);
        window.record(3, 51, false, false);
        assert_eq!(window.counts(3, 51), counts(2, 1, 0));
        window.assert_consistent();
    }
}
