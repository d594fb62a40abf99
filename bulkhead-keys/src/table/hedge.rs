//! The hedge's keys.

/// The most hedges a call may start: 10, as in Polly.
const MAX_HEDGED: u32 = 10;

/// The hedge's rows: see [`rows`](crate::rows).
#[doc(hidden)]
#[macro_export]
macro_rules! __hedge_keys {
    ($($callback:tt)*) => { $crate::__rows! { ($($callback)*)
        /// How many extra attempts a call may start while earlier ones are
        /// still running (from 1 to
        /// [`HedgeConfig::MAX_HEDGED`](crate::HedgeConfig::MAX_HEDGED)).
        max_hedged: u32 = Self::DEFAULT_MAX_HEDGED
            => Count { min: 1, max: MAX_HEDGED }, "1",
            "how many extra attempts a call may start while earlier ones are still running";
        /// How long the attempts of a call run before another is started:
        /// the first hedge starts `delay` after the first attempt, the next
        /// `delay` after that, and so on while none has succeeded. A
        /// [`Duration`] (zero starts them all at once), or a
        /// [`HedgeDelay::percentile`] of the first attempts' latency, above
        /// 0 and below 100, estimated as calls go (see
        /// [`Hedge`](crate::Hedge)).
        @set(into)
        delay: HedgeDelay = HedgeDelay::Fixed(Self::DEFAULT_DELAY)
            => Delay, "\"2s\"",
            "how long the attempts of a call run before another is started (`0`: all at once), or the percentile of the first attempts' latency to wait for (`\"p90\"`), estimated as calls go";
    } };
}

crate::__hedge_keys!(crate::rows::key_table! { pub(crate) const KEYS });
