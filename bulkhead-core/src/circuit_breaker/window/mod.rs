//! # Implementation details
//!
//! The sliding windows a closed breaker computes its failure and slow-call
//! rates over: the last N outcomes ([`count`]) or the outcomes of the last N
//! seconds ([`time`]). Both record without a lock or an allocation, and tell
//! the caller when the thresholds need checking: after a failure or a slow
//! call, and after the changes that can raise a rate or reach
//! `minimum_calls` without one (each module says which). A success that
//! changes neither is never followed by a check.

mod count;
mod time;

use count::CountWindow;
use time::TimeWindow;

use super::config::{CircuitBreakerConfig, SlidingWindow};

/// What a window (or a half-open breaker's trials) holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Counts {
    /// Outcomes recorded.
    pub(super) calls: u32,
    /// Of which failures (at most `calls`).
    pub(super) failed: u32,
    /// Of which slow calls (at most `calls`).
    pub(super) slow: u32,
}

impl Counts {
    /// Adds one outcome.
    pub(super) fn record(&mut self, failed: bool, slow: bool) {
        self.calls = self.calls.saturating_add(1);
        self.failed = self.failed.saturating_add(u32::from(failed));
        self.slow = self.slow.saturating_add(u32::from(slow));
    }

    /// The percentage of failures; NaN without calls.
    pub(super) fn failure_rate(self) -> f32 {
        percent(self.failed, self.calls)
    }

    /// The percentage of slow calls; NaN without calls.
    pub(super) fn slow_call_rate(self) -> f32 {
        percent(self.slow, self.calls)
    }
}

fn percent(part: u32, whole: u32) -> f32 {
    // As Resilience4j computes it, in f32: `part * 100 / whole`.
    part as f32 * 100.0 / whole as f32
}

/// The closed state's window.
#[derive(Debug)]
pub(super) enum Window {
    Count(CountWindow),
    Time(TimeWindow),
}

impl Window {
    pub(super) fn new(config: &CircuitBreakerConfig) -> Window {
        let size = config.sliding_window_size();
        match config.sliding_window() {
            SlidingWindow::Count => Window::Count(CountWindow::new(size, config.closed_minimum())),
            SlidingWindow::Time => Window::Time(TimeWindow::new(size)),
        }
    }

    /// Records an outcome of epoch `epoch` (an outcome of an epoch the
    /// window was not reset for counts nowhere); returns whether the
    /// thresholds need checking. `second` gives the current second (1 for
    /// the breaker's first); a count window never calls it.
    #[inline]
    pub(super) fn record(
        &self,
        epoch: u32,
        failed: bool,
        slow: bool,
        second: &mut impl FnMut() -> u32,
    ) -> bool {
        match self {
            Window::Count(window) => window.record(epoch, failed, slow),
            Window::Time(window) => window.record(epoch, second(), failed, slow),
        }
    }

    /// Whether one more success of epoch `epoch` would change nothing: a
    /// count window that holds only successes of that epoch (a time
    /// window's seconds move, so it always records).
    #[inline]
    pub(super) fn holds_only_successes(&self, epoch: u32) -> bool {
        match self {
            Window::Count(window) => window.all_successes(epoch),
            Window::Time(_) => false,
        }
    }

    /// What the window holds for epoch `epoch`, now.
    pub(super) fn counts(&self, epoch: u32, second: &mut impl FnMut() -> u32) -> Counts {
        match self {
            Window::Count(window) => window.counts(epoch),
            Window::Time(window) => window.counts(epoch, second()),
        }
    }

    /// Empties the window for the closed state of epoch `epoch`. Call before
    /// that state is published.
    pub(super) fn reset(&self, epoch: u32) {
        match self {
            Window::Count(window) => window.reset(epoch),
            Window::Time(window) => window.reset(epoch),
        }
    }

    /// Remembers the last check's finding that a rate is over its threshold
    /// with too few calls (`pending`), or not.
    pub(super) fn set_pending(&self, pending: bool) {
        match self {
            // A count window reports the call that reaches the minimum.
            Window::Count(_) => {}
            Window::Time(window) => window.set_pending(pending),
        }
    }
}

#[cfg(test)]
mod consistency {
    use super::*;

    impl Window {
        /// Checks that the counters agree with what the window holds, once
        /// no writer is left.
        pub(in crate::circuit_breaker) fn assert_consistent(&self) {
            match self {
                Window::Count(window) => window.assert_consistent(),
                Window::Time(window) => window.assert_consistent(),
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Both kinds of window, of `size` calls or seconds.
    fn windows(size: u32) -> [Window; 2] {
        [SlidingWindow::Count, SlidingWindow::Time].map(|kind| {
            let config = CircuitBreakerConfig::builder()
                .sliding_window(kind)
                .sliding_window_size(size)
                .minimum_calls(1)
                .build()
                .unwrap();
            Window::new(&config)
        })
    }

    #[test]
    fn a_late_outcome_of_an_epoch_gone_counts_in_no_window() {
        for window in windows(2) {
            let mut second = || 1;
            window.record(0, true, false, &mut second);
            window.reset(3);
            // A writer of epoch 0 that passed the breaker's state check
            // before the reset records after it.
            window.record(0, true, true, &mut second);
            let empty = Counts::default();
            assert_eq!(window.counts(3, &mut second), empty, "{window:?}");
            window.record(3, false, false, &mut second);
            let one = Counts {
                calls: 1,
                failed: 0,
                slow: 0,
            };
            assert_eq!(window.counts(3, &mut second), one, "{window:?}");
            window.assert_consistent();
        }
    }
}
