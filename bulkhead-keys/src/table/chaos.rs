//! The chaos policy's keys.

use crate::{Bound, Float, Range};

/// A rate of calls: from 0 (none) to 1 (every call); NaN is refused.
const RATE: Range = Range::new(Bound::Included(0.0), Bound::Included(1.0));

/// The chaos policy's rows: see [`rows`](crate::rows).
#[doc(hidden)]
#[macro_export]
macro_rules! __chaos_keys {
    ($($callback:tt)*) => { $crate::__rows! { ($($callback)*)
        /// Whether anything is injected; disabled (the default), a call
        /// costs one load. Reloadable live, as every key of the policy.
        enabled: bool = false
            => Bool, "false",
            "whether anything is injected; disabled, a call costs one load";
        /// The share of calls that fail with an injected fault (see
        /// `fault`), from 0 to 1.
        fault_rate: f64 = 0.0
            => Number { range: RATE, float: Float::F64 }, "0.0",
            "the share of calls, from 0 to 1, that fail with an injected fault";
        /// The share of calls that are delayed by `latency` before they
        /// run, from 0 to 1; the delay holds the call's bulkhead slot and
        /// counts towards its timeout.
        latency_rate: f64 = 0.0
            => Number { range: RATE, float: Float::F64 }, "0.0",
            "the share of calls, from 0 to 1, delayed by `latency` (holding their bulkhead slot)";
        /// The latency injected: a duration, or a range of durations in
        /// which each delay is drawn uniformly (`100ms..500ms`).
        @set(into)
        latency: ChaosLatency = ChaosLatency::fixed(Self::DEFAULT_LATENCY)
            => Latency, "\"1s\"",
            "the latency injected: a duration (`\"200ms\"`) or a range drawn uniformly (`\"100ms..500ms\"`)";
        /// What an injected fault is: the rejection `Injected` (the
        /// default), which reaches a method's error through
        /// `From<Rejection>`, or a panic naming the instance.
        fault: ChaosFault = ChaosFault::Error
            => Choice { ty: "ChaosFault", choices: &["error", "panic"] }, "\"error\"",
            "what an injected fault is: the rejection `Injected` (`error`) or a panic (`panic`)";
        /// The seed of the draws: the same seed gives the same injections
        /// to the same sequence of calls. Without one, a seed is drawn
        /// from the system's entropy when the policy is made.
        @set(some u64)
        @shown_if(seed)
        seed: Option<u64> = None
            => Seed, "",
            "the seed of the draws: the same seed gives the same injections to the same calls; without it, one drawn at random";
    } };
}

crate::__chaos_keys!(crate::rows::key_table! { pub(crate) const KEYS });
