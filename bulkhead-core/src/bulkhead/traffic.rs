//! What a bulkhead counts when the registry tracks sizing: the inputs of
//! Little's law (arrivals, admissions, how long admitted calls hold their
//! slot).
//!
//! Counting is off by default: it costs two recent clock readings
//! ([`Clock::recent`](crate::Clock::recent): hold times are to within the
//! clock's resolution, 5 ms on the system clock) and two atomic additions
//! per admitted call, and one addition per rejection, which the untracked
//! fast paths do not pay.

use std::time::Duration;

use crate::loom::atomic::{AtomicU64, Ordering::Relaxed};

/// A bulkhead's traffic since it was created, when sizing is tracked
/// (`Registry::builder().track_sizing(true)`).
///
/// Arrivals are `admitted + rejected + abandoned`. Over an interval, the difference of
/// two readings gives the arrival rate λ and the mean hold time W =
/// `total_hold / completed`; Little's law gives the concurrency the traffic
/// needs, λ × W.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Traffic {
    /// Calls that got a slot.
    pub admitted: u64,
    /// Calls that were rejected.
    pub rejected: u64,
    /// Calls that stopped waiting for a slot before they got one: a wait
    /// cut short by an outer deadline (a timeout), or an async call dropped
    /// while it waited.
    pub abandoned: u64,
    /// Admitted calls that gave their slot back.
    pub completed: u64,
    /// How long the completed calls held their slots, in total.
    pub total_hold: Duration,
}

impl Traffic {
    /// Calls that arrived: admitted, rejected or abandoned while waiting.
    pub fn arrivals(&self) -> u64 {
        self.admitted + self.rejected + self.abandoned
    }

    /// The mean time a completed call held its slot, if any completed.
    pub fn mean_hold(&self) -> Option<Duration> {
        (self.completed > 0).then(|| {
            let nanos = self.total_hold.as_nanos() / u128::from(self.completed);
            Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
        })
    }

    /// What happened between `earlier` and this reading.
    #[must_use]
    pub fn since(&self, earlier: &Traffic) -> Traffic {
        Traffic {
            admitted: self.admitted.saturating_sub(earlier.admitted),
            rejected: self.rejected.saturating_sub(earlier.rejected),
            abandoned: self.abandoned.saturating_sub(earlier.abandoned),
            completed: self.completed.saturating_sub(earlier.completed),
            total_hold: self.total_hold.saturating_sub(earlier.total_hold),
        }
    }
}

/// The counters behind [`Traffic`].
#[derive(Debug, Default)]
pub(super) struct Counters {
    admitted: AtomicU64,
    rejected: AtomicU64,
    abandoned: AtomicU64,
    completed: AtomicU64,
    hold_nanos: AtomicU64,
}

impl Counters {
    pub(super) fn admitted(&self) {
        self.admitted.fetch_add(1, Relaxed);
    }

    pub(super) fn rejected(&self) {
        self.rejected.fetch_add(1, Relaxed);
    }

    pub(super) fn abandoned(&self) {
        self.abandoned.fetch_add(1, Relaxed);
    }

    /// A call gave its slot back after holding it `held` nanoseconds.
    pub(super) fn completed(&self, held: u64) {
        self.hold_nanos.fetch_add(held, Relaxed);
        self.completed.fetch_add(1, Relaxed);
    }

    pub(super) fn read(&self) -> Traffic {
        Traffic {
            admitted: self.admitted.load(Relaxed),
            rejected: self.rejected.load(Relaxed),
            abandoned: self.abandoned.load(Relaxed),
            completed: self.completed.load(Relaxed),
            total_hold: Duration::from_nanos(self.hold_nanos.load(Relaxed)),
        }
    }
}
