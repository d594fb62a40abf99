//! # Implementation details
//!
//! A composition's readings of its clock as *stamps*: nanoseconds since a
//! fixed instant (the epoch), so that the policies of one call subtract and
//! compare integers rather than `Instant`s (whose arithmetic is out of line
//! in `std`, a call per operation). On a clock with a [`RecentTime`] a
//! recent stamp is one atomic load; on any other it is `recent()` less the
//! epoch.
//!
//! Stamps saturate at zero: a reading before the epoch (which on a clock
//! without a `RecentTime` is the clock's time when the composition was
//! built) is the epoch itself. That is never later than a precise reading
//! taken after it, so a stamp keeps what `Clock::recent` promises.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Clock, RecentTime};

/// One clock's readings as nanoseconds since an epoch.
#[derive(Debug, Clone)]
pub(crate) struct Timeline {
    clock: Arc<dyn Clock>,
    fast: Option<RecentTime>,
    epoch: Instant,
}

impl Timeline {
    pub(crate) fn new(clock: Arc<dyn Clock>) -> Self {
        let fast = clock.recent_time();
        let epoch = match fast {
            Some(fast) => fast.epoch(),
            None => clock.now(),
        };
        Timeline { clock, fast, epoch }
    }

    /// The clock.
    pub(crate) fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// A recent reading ([`Clock::recent`]).
    #[inline]
    pub(crate) fn recent(&self) -> u64 {
        match self.fast {
            Some(fast) => fast.nanos(),
            None => self.recent_slow(),
        }
    }

    /// A recent reading of a clock without a [`RecentTime`]: a call through
    /// the clock and `Instant` arithmetic, kept out of the callers that
    /// inline [`recent`](Self::recent).
    #[inline(never)]
    fn recent_slow(&self) -> u64 {
        self.stamp(self.clock.recent())
    }

    /// A precise reading ([`Clock::now`]).
    pub(crate) fn now(&self) -> u64 {
        self.stamp(self.clock.now())
    }

    /// `at` as a stamp (zero before the epoch).
    pub(crate) fn stamp(&self, at: Instant) -> u64 {
        nanos(at.saturating_duration_since(self.epoch))
    }

    /// How far `at` is from the epoch, in nanoseconds, negative before it.
    pub(crate) fn offset(&self, at: Instant) -> i64 {
        match at.checked_duration_since(self.epoch) {
            Some(after) => i64::try_from(after.as_nanos()).unwrap_or(i64::MAX),
            None => i64::try_from(self.epoch.duration_since(at).as_nanos())
                .map_or(i64::MIN, |before| -before),
        }
    }

    /// The instant of a stamp.
    pub(crate) fn instant(&self, stamp: u64) -> Instant {
        let at = Duration::from_nanos(stamp);
        self.epoch.checked_add(at).unwrap_or(self.epoch)
    }
}

/// Nanoseconds from `offset` (see [`Timeline::offset`]) to `stamp`, zero if
/// `stamp` is earlier.
#[inline]
pub(crate) fn since(stamp: u64, offset: i64) -> u64 {
    // `stamp` < 2^63 for 292 years after the epoch.
    (stamp as i64).saturating_sub(offset).max(0) as u64
}

/// A duration in nanoseconds, saturating at `u64::MAX` (584 years).
#[inline]
pub(crate) fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::clock::{ManualClock, SystemClock};

    #[test]
    fn stamps_on_a_manual_clock_are_exact_nanoseconds_since_it_was_built() {
        let clock = ManualClock::new();
        let before = clock.now();
        clock.advance(Duration::from_secs(3));
        let timeline = Timeline::new(Arc::new(clock.clone()));
        assert_eq!(timeline.recent(), 0);
        clock.advance(Duration::from_millis(1500));
        assert_eq!(timeline.recent(), 1_500_000_000);
        assert_eq!(timeline.now(), 1_500_000_000);
        assert_eq!(timeline.stamp(before), 0, "before the epoch");
        assert_eq!(timeline.offset(before), -3_000_000_000);
        assert_eq!(
            since(timeline.recent(), timeline.offset(before)),
            4_500_000_000
        );
        assert_eq!(since(5, 10), 0);
        assert_eq!(timeline.instant(1_500_000_000), clock.now());
    }

    #[test]
    fn stamps_on_the_system_clock_are_never_ahead_of_it() {
        let timeline = Timeline::new(Arc::new(SystemClock));
        for _ in 0..1000 {
            let recent = timeline.recent();
            assert!(recent <= timeline.now());
            assert!(timeline.instant(recent) <= Instant::now());
        }
    }
}
