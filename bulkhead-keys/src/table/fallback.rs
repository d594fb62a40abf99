//! The fallback's keys.

/// The fallback's rows: see [`rows`](crate::rows).
#[doc(hidden)]
#[macro_export]
macro_rules! __fallback_keys {
    ($($callback:tt)*) => { $crate::__rows! { ($($callback)*)
        method => Method, "",
            "the method of the same trait that answers instead, called on the delegate with the same arguments; it must have the same signature";
        /// The rejections that make the fallback answer (every kind by
        /// default; a builder's list replaces the base's); an empty list
        /// leaves only the method's own errors, if `on_error`.
        on: RejectionKinds = RejectionKinds::ALL
            => RejectionKinds, "[BulkheadFull, CircuitOpen, Timeout, RateLimited, Injected, DeadlineExceeded]",
            "the rejections that make the fallback answer";
        /// Whether the method's own errors make the fallback answer too
        /// (`false` by default).
        on_error: bool = false
            => Bool, "false",
            "whether the method's own errors make the fallback answer too";
    } };
}

crate::__fallback_keys!(crate::rows::key_table! { pub(crate) const KEYS });
