//! The timeout's keys.

/// The timeout's rows: see [`rows`](crate::rows).
#[doc(hidden)]
#[macro_export]
macro_rules! __timeout_keys {
    ($($callback:tt)*) => { $crate::__rows! { ($($callback)*)
        /// How long a call may take (more than zero), its wait for a
        /// bulkhead slot included (a wait for a rate-limiter permit comes
        /// before the timeout and is not).
        duration: Duration = Self::DEFAULT_DURATION
            => Duration { positive: true }, "\"1s\"",
            "how long a call may take, its wait for a bulkhead slot included";
    } };
}

crate::__timeout_keys!(crate::rows::key_table! { pub(crate) const KEYS });
