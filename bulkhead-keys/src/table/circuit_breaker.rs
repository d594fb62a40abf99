//! The circuit breaker's keys.

use crate::{Bound, Float, Range};

/// A rate threshold: more than 0 (a breaker that opens with no failure at
/// all is a forced-open one) and at most 100; NaN is refused.
const PERCENT: Range = Range::new(Bound::Excluded(0.0), Bound::Included(100.0));

/// The largest window: a million calls or seconds.
const MAX_SLIDING_WINDOW_SIZE: u32 = 1_000_000;

/// The circuit breaker's rows: see [`rows`](crate::rows).
#[doc(hidden)]
#[macro_export]
macro_rules! __circuit_breaker_keys {
    ($($callback:tt)*) => { $crate::__rows! { ($($callback)*)
        /// The failure rate, in percent, at or above which the breaker
        /// opens: more than 0, at most 100.
        failure_rate_threshold: f32 = Self::DEFAULT_FAILURE_RATE_THRESHOLD
            => Number { range: PERCENT, float: Float::F32 }, "50",
            "the failure rate, in percent, at or above which the breaker opens";
        /// Whether rates are computed over the last calls (the default) or
        /// the last seconds.
        sliding_window: SlidingWindow = Self::DEFAULT_SLIDING_WINDOW
            => Choice { ty: "SlidingWindow", choices: &["count", "time"] }, "\"count\"",
            "whether rates are computed over the last calls (`count`) or the last seconds (`time`)";
        /// The window's size: calls for a count window, seconds for a time
        /// one; 1 to a million.
        sliding_window_size: u32 = Self::DEFAULT_SLIDING_WINDOW_SIZE
            => Count { min: 1, max: MAX_SLIDING_WINDOW_SIZE }, "100",
            "the window's size, in calls or seconds";
        /// How many calls the window must hold before a rate is computed at
        /// all (at least 1).
        ///
        /// A count window smaller than this needs only to be full, as in
        /// Resilience4j.
        minimum_calls: u32 = Self::DEFAULT_MINIMUM_CALLS
            => Count { min: 1, max: u32::MAX }, "100",
            "how many calls the window must hold before a rate counts";
        /// How long an open breaker rejects calls before it lets trial
        /// calls through (longer than zero).
        ///
        /// The wait runs on the breaker's clock from the moment it opened,
        /// and ends like every deadline of a [`Clock`](crate::Clock): a call
        /// made exactly `wait_in_open` after the breaker opened is the
        /// first one let through (it turns the breaker half-open); one made
        /// a nanosecond earlier is rejected. Resilience4j lets the first
        /// trial in only strictly after the wait, one tick of its clock
        /// later.
        wait_in_open: Duration = Self::DEFAULT_WAIT_IN_OPEN
            => Duration { positive: true }, "\"60s\"",
            "how long an open breaker rejects calls; a call exactly this long after it opened is the first let through";
        /// How many trial calls a half-open breaker lets through (at
        /// least 1).
        permitted_calls_in_half_open: u32 = Self::DEFAULT_PERMITTED_CALLS_IN_HALF_OPEN
            => Count { min: 1, max: u32::MAX }, "10",
            "how many trial calls a half-open breaker lets through";
        /// The duration above which a call counts as slow (longer than
        /// zero: a threshold of zero would make every call that takes any
        /// time slow).
        ///
        /// Calls are timed (two clock readings each, shared with the other
        /// policies of a composition); [`Duration::MAX`], which no call
        /// exceeds, turns timing off. A composition times calls on the
        /// clock's [`recent`](crate::Clock::recent) readings, to within its
        /// resolution (5 ms on the `SystemClock`), when the threshold is at
        /// least 20 times that resolution (100 ms), and on precise ones
        /// below.
        slow_call_threshold: Duration = Self::DEFAULT_SLOW_CALL_THRESHOLD
            => Duration { positive: true }, "\"60s\"",
            "the duration above which a call is slow (calls are timed: two clock reads each)";
        /// The slow-call rate, in percent, at or above which the breaker
        /// opens: more than 0, at most 100.
        slow_call_rate_threshold: f32 = Self::DEFAULT_SLOW_CALL_RATE_THRESHOLD
            => Number { range: PERCENT, float: Float::F32 }, "100",
            "the slow-call rate, in percent, at or above which the breaker opens";
        record_if => Predicate, "",
            "which of the method's errors are failures (the others are successes); without it, every error";
        /// The rejection kinds (of inner policies) that count neither as
        /// failures nor as successes (a builder's list replaces the
        /// base's). By default every rejection is a failure.
        ignore_on: RejectionKinds = RejectionKinds::EMPTY
            => RejectionKinds, "[]",
            "the rejection kinds of inner policies that are not recorded at all";
    } };
}

crate::__circuit_breaker_keys!(crate::rows::key_table! { pub(crate) const KEYS });
