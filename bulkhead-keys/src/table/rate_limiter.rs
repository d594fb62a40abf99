//! The rate limiter's keys.

/// The rate limiter's rows: see [`rows`](crate::rows).
#[doc(hidden)]
#[macro_export]
macro_rules! __rate_limiter_keys {
    ($($callback:tt)*) => { $crate::__rows! { ($($callback)*)
        /// How many permits each period brings (at least 1).
        limit_for_period: u32 = Self::DEFAULT_LIMIT_FOR_PERIOD
            => Count { min: 1, max: u32::MAX }, "50",
            "how many permits each period brings";
        /// The length of a period (more than zero); unused permits expire
        /// at its end. Periods are counted from the rate limiter's
        /// creation; periods beyond 584 years count as 584 years.
        refresh_period: Duration = Self::DEFAULT_REFRESH_PERIOD
            => Duration { positive: true }, "\"500ns\"",
            "the length of a period; unused permits expire at its end";
        /// How long a caller may wait for a permit of a later period; zero
        /// rejects at once when the current period has none left.
        max_wait: Duration = Self::DEFAULT_MAX_WAIT
            => Duration { positive: false }, "\"5s\"",
            "how long a caller may wait for a permit; zero refuses at once";
    } };
}

crate::__rate_limiter_keys!(crate::rows::key_table! { pub(crate) const KEYS });
