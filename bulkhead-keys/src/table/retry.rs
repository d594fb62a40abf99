//! The retry policy's keys.

use crate::{Bound, Float, Range};

/// At least 1 and finite (which also refuses NaN).
const AT_LEAST_ONE: Range = Range::new(Bound::Included(1.0), Bound::Unbounded);
/// At least 0 and below 1. As in Resilience4j, whose `randomizationFactor`
/// must be below 1: a jitter of 1 would draw waits down to zero, retrying
/// at once however long `wait` is (a caller who wants that says
/// `wait = 0`).
const FRACTION: Range = Range::new(Bound::Included(0.0), Bound::Excluded(1.0));
/// At least 0 and finite.
const AT_LEAST_ZERO: Range = Range::new(Bound::Included(0.0), Bound::Unbounded);

/// The retry policy's rows: see [`rows`](crate::rows).
#[doc(hidden)]
#[macro_export]
macro_rules! __retry_keys {
    ($($callback:tt)*) => { $crate::__rows! { ($($callback)*)
        /// How many attempts a call gets, the first one included (at
        /// least 1; 1 means no retry).
        max_attempts: u32 = Self::DEFAULT_MAX_ATTEMPTS
            => Count { min: 1, max: u32::MAX }, "3",
            "how many attempts a call gets, the first one included";
        /// The wait after the first failed attempt (zero retries at once).
        wait: Duration = Self::DEFAULT_WAIT
            => Duration { positive: false }, "\"500ms\"",
            "the wait after the first failed attempt";
        /// The factor each further wait grows by: the wait after the n-th
        /// failed attempt is `wait * backoff_multiplier^(n - 1)`. At least
        /// 1 (which keeps the wait fixed), and finite.
        backoff_multiplier: f64 = Self::DEFAULT_BACKOFF_MULTIPLIER
            => Number { range: AT_LEAST_ONE, float: Float::F64 }, "1",
            "the factor each further wait grows by";
        /// The longest any wait may be, jitter included (longer than zero);
        /// `None` for no cap (in the builder, `None` removes a cap the base
        /// configuration set).
        ///
        /// A true upper bound: a wait whose jitter range would reach past
        /// the cap is drawn from that range cut at the cap, and once the
        /// backoff itself reaches the cap `c`, waits are drawn uniformly
        /// from `c * (1 - jitter)` to `c`, so that callers at the cap still
        /// spread out. (Resilience4j also never waits longer than the cap,
        /// but caps the randomized wait, which puts every draw above the
        /// cap at exactly the cap.)
        @set(into)
        max_wait_interval: Option<Duration> = None
            => Duration { positive: true }, "",
            "the longest any wait may be, jitter included: waits at the cap are drawn from `max_wait_interval * (1 - jitter)` to `max_wait_interval`";
        /// The randomization factor, at least 0 (the default: exact waits)
        /// and less than 1: each wait `d` is drawn uniformly from
        /// `d * (1 - jitter)` to `d * (1 + jitter)`, as far as
        /// `max_wait_interval` allows. Below 1, as in Resilience4j (whose
        /// `randomizationFactor` must be below 1), so that no wait is zero
        /// unless `wait` is.
        jitter: f64 = Self::DEFAULT_JITTER
            => Number { range: FRACTION, float: Float::F64 }, "0",
            "the randomization factor: each wait `d` is drawn from `d * (1 ± jitter)`, cut at `max_wait_interval`";
        retry_if => Predicate, "",
            "which of the method's errors are retried; without it, every error";
        /// The rejection kinds that end a call at once instead of being
        /// retried (a builder's list replaces the base's). By default every
        /// kind is retried.
        abort_on: RejectionKinds = RejectionKinds::EMPTY
            => RejectionKinds, "[]",
            "the rejection kinds that end a call at once instead of being retried";
        /// The least time an attempt needs: under a deadline
        /// (`bulkhead::deadline`), an attempt does not start with this
        /// much time left or less (zero by default: an attempt starts
        /// while any time is left). The first attempt is then refused with
        /// `DeadlineExceeded`; a retry is not made (the call ends with its
        /// last failure, publishing `GaveUp`); a hedge is not started.
        @shown_if(min_attempt_time)
        min_attempt_time: Duration = Self::DEFAULT_MIN_ATTEMPT_TIME
            => Duration { positive: false }, "\"0\"",
            "under a deadline, no attempt starts with this much time left or less";
        /// The retry budget's ratio, if the instance has a budget: over
        /// `budget_window`, its retries and hedges stay within
        /// `budget_ratio` times its first attempts plus
        /// `budget_min_per_second` times the window's seconds (at least 0,
        /// and finite). `None` (the default, as in Resilience4j): no
        /// budget, retries are bounded by `max_attempts` alone; in the
        /// builder, `None` removes a budget the base configuration set. A
        /// retry the budget refuses ends the call with its last failure and
        /// publishes `BudgetExhausted`.
        @set(into)
        @shown_if(budget_ratio | budget_min_per_second | budget_window)
        budget_ratio: Option<f64> = None
            => Number { range: AT_LEAST_ZERO, float: Float::F64 }, "",
            "the retry budget: over `budget_window`, the instance's retries and hedges stay within this many times its first attempts, plus the minimum; without it, no budget";
        /// The retries per second of the window a budget allows whatever
        /// the first attempts (10 by default; 0 for none), so that a quiet
        /// instance can still retry; unused without a `budget_ratio`.
        @shown_if(budget_ratio | budget_min_per_second | budget_window)
        budget_min_per_second: u32 = Self::DEFAULT_BUDGET_MIN_PER_SECOND
            => Count { min: 0, max: u32::MAX }, "10",
            "with a `budget_ratio`: the retries and hedges per second of the window the budget allows whatever the first attempts";
        /// The sliding window over which a budget counts (10 s by default;
        /// longer than zero), moving in tenths; unused without a
        /// `budget_ratio`.
        @shown_if(budget_ratio | budget_min_per_second | budget_window)
        budget_window: Duration = Self::DEFAULT_BUDGET_WINDOW
            => Duration { positive: true }, "\"10s\"",
            "with a `budget_ratio`: the sliding window over which the budget counts, in tenths";
    } };
}

crate::__retry_keys!(crate::rows::key_table! { pub(crate) const KEYS });
