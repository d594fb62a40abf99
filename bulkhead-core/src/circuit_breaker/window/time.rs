//! # Implementation details
//!
//! A time-based window: the outcomes of the last `size` seconds, on the
//! breaker's clock, in one bucket per second (Resilience4j's
//! `SlidingTimeWindowMetrics`, without its lock).
//!
//! ## Buckets
//!
//! Second `s` (counted from 1 at the breaker's creation) lives in bucket
//! `s % size`. A bucket has three counters, `calls`, `failed` and `slow`,
//! each a 64-bit word holding the second it counts (upper half) and the
//! count (lower half):
//!
//! - recording adds one with `fetch_add`; if the word counted the same
//!   second, that is all;
//! - if it counted an earlier second (expired: `size` seconds ago or more),
//!   the writer replaces it with `(s, 1)` by compare-exchange, so each
//!   counter starts each second afresh without a sweep or a lock;
//! - if it already counts a later second, the call is more than a window
//!   old by now: its increment is taken back and it is not counted.
//!
//! Reading sums the counters whose second lies in `(now - size, now]`, an
//! O(size) scan; it happens only when the thresholds are checked and for
//! [`CircuitBreaker::metrics`](super::super::CircuitBreaker::metrics).
//!
//! ## When to check the thresholds
//!
//! Rates change when calls are recorded and when seconds expire. Checks
//! follow a failure or a slow call; the first call of each second (which
//! sees the seconds that expired since the last one); and, while the last
//! check found a rate over its threshold with fewer than `minimum_calls`
//! calls (`pending`), every call. Other successes only lower the rates.
//! Under concurrency `pending` may be a call late in either direction: the
//! breaker then opens one call late, or checks one call more.
//!
//! ## Costs
//!
//! A clock read and one `fetch_add` per success, one more per failure or
//! slow call; no lock, no allocation. A reset stores zero in every counter
//! (it only happens on transitions).

use super::Counts;
use crate::loom::atomic::{AtomicBool, AtomicU64, Ordering::*};

const COUNT_MASK: u64 = u32::MAX as u64;

#[derive(Debug)]
pub(crate) struct TimeWindow {
    buckets: Box<[Bucket]>,
    /// The last check found a rate over its threshold below `minimum_calls`.
    pending: AtomicBool,
}

#[derive(Debug)]
struct Bucket {
    calls: AtomicU64,
    failed: AtomicU64,
    slow: AtomicU64,
}

impl TimeWindow {
    /// An empty window of `seconds` buckets (at least 1).
    pub(super) fn new(seconds: u32) -> Self {
        let bucket = |_| Bucket {
            calls: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            slow: AtomicU64::new(0),
        };
        TimeWindow {
            buckets: (0..seconds.max(1)).map(bucket).collect(),
            pending: AtomicBool::new(false),
        }
    }

    /// Records an outcome in second `second` (at least 1); returns whether
    /// the thresholds need checking.
    #[inline]
    pub(super) fn record(&self, second: u32, failed: bool, slow: bool) -> bool {
        let bucket = &self.buckets[second as usize % self.buckets.len()];
        let new_second = add(&bucket.calls, second);
        if failed {
            add(&bucket.failed, second);
        }
        if slow {
            add(&bucket.slow, second);
        }
        new_second || failed || slow || self.pending.load(Relaxed)
    }

    /// What the window holds at second `second`.
    pub(super) fn counts(&self, second: u32) -> Counts {
        let size = self.buckets.len() as u64;
        let second = u64::from(second);
        let read = |counter: &AtomicU64| {
            let value = counter.load(Acquire);
            let at = value >> 32;
            let current = at != 0 && at <= second && at + size > second;
            if current { value & COUNT_MASK } else { 0 }
        };
        let (mut calls, mut failed, mut slow) = (0, 0, 0);
        for bucket in self.buckets.iter() {
            calls += read(&bucket.calls);
            failed += read(&bucket.failed);
            slow += read(&bucket.slow);
        }
        let calls = u32::try_from(calls).unwrap_or(u32::MAX);
        // A failure is added after its call: clamp what raced ahead.
        let within = |part: u64| u32::try_from(part).unwrap_or(u32::MAX).min(calls);
        Counts {
            calls,
            failed: within(failed),
            slow: within(slow),
        }
    }

    /// Empties every bucket.
    pub(super) fn reset(&self) {
        for bucket in self.buckets.iter() {
            for counter in [&bucket.calls, &bucket.failed, &bucket.slow] {
                // A swap, not a store, for loom: see `machine.rs`.
                counter.swap(0, Release);
            }
        }
        self.pending.store(false, Relaxed);
    }

    pub(super) fn set_pending(&self, pending: bool) {
        if self.pending.load(Relaxed) != pending {
            self.pending.store(pending, Relaxed);
        }
    }
}

/// Adds one to `counter` for `second`; returns whether this call started
/// the second's count (the counter held an earlier second).
#[inline]
fn add(counter: &AtomicU64, second: u32) -> bool {
    let before = counter.fetch_add(1, AcqRel);
    let counted = (before >> 32) as u32;
    counted != second && roll(counter, second, counted)
}

/// The slow path of [`add`]: our increment went to the count of second
/// `polluted`, not `second`.
#[cold]
fn roll(counter: &AtomicU64, second: u32, polluted: u32) -> bool {
    let mut current = counter.load(Acquire);
    loop {
        let counted = (current >> 32) as u32;
        let (next, started) = if counted < second {
            // Expired (with our stray increment, if it is still there):
            // start this second with our call.
            ((u64::from(second) << 32) | 1, true)
        } else if counted == second {
            // Someone started this second after our increment went to the
            // expired count they replaced: count the call again.
            (current + 1, false)
        } else if counted == polluted && current & COUNT_MASK != 0 {
            // A later second, which has our increment: our call is older
            // than the window by now. Take it back.
            (current - 1, false)
        } else {
            // A later second that never had our increment.
            return false;
        };
        match counter.compare_exchange_weak(current, next, AcqRel, Acquire) {
            Ok(_) => return started,
            Err(actual) => current = actual,
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
        window.record(1, true, false);
        window.record(1, false, false);
        window.record(2, false, true);
        assert_eq!(window.counts(2), counts(3, 1, 1));
        assert_eq!(window.counts(3), counts(3, 1, 1));
        // Second 1 is out of a 3-second window at second 4.
        assert_eq!(window.counts(4), counts(1, 0, 1));
        assert_eq!(window.counts(5), counts(0, 0, 0));
        // Second 4 reuses second 1's bucket and starts it afresh.
        window.record(4, false, false);
        assert_eq!(window.counts(4), counts(2, 0, 1));
    }

    #[test]
    fn the_first_call_of_a_second_asks_for_a_check() {
        let window = TimeWindow::new(2);
        assert!(window.record(1, false, false), "first call of second 1");
        assert!(!window.record(1, false, false));
        assert!(window.record(1, true, false), "a failure");
        assert!(window.record(2, false, false), "first call of second 2");
        assert!(window.record(3, false, false), "second 3 replaces second 1");
        assert!(!window.record(3, false, false));
        window.set_pending(true);
        assert!(window.record(3, false, false), "pending");
    }

    #[test]
    fn a_call_older_than_the_window_is_not_counted() {
        let window = TimeWindow::new(2);
        window.record(5, false, false);
        // A writer that read the clock at second 3, late: bucket 1 now holds
        // second 5.
        assert!(!window.record(3, false, false));
        assert_eq!(window.counts(5), counts(1, 0, 0));
    }

    #[test]
    fn a_reset_empties_every_bucket() {
        let window = TimeWindow::new(2);
        window.record(1, true, true);
        window.record(2, true, false);
        window.set_pending(true);
        window.reset();
        assert_eq!(window.counts(2), counts(0, 0, 0));
        assert!(window.record(2, false, false), "second 2 starts afresh");
        assert!(!window.record(2, false, false), "no longer pending");
    }
}
