//! What the three algorithms share: the [`Window`] they read and the
//! [`Step`] they answer with, and two helpers of their published rules.

use std::hash::{Hash, Hasher};

/// One closed window of samples, as an algorithm reads it. Times are in
/// nanoseconds on the bulkhead's clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Window {
    /// The algorithm's limit going in (its estimate, not rounded).
    pub(crate) limit: f64,
    /// The median hold time of the calls that succeeded, those released
    /// near the limit if there were enough of them, read as the no-load
    /// latency if it is within 3.5 standard errors of it (the window's
    /// and the no-load latency's, from the no-load spread the probes
    /// measured); `None` if none
    /// succeeded.
    pub(crate) latency: Option<f64>,
    /// The no-load latency, as the probes measured it; `None` until a
    /// probe measured it (a dependency that failed from the first call):
    /// then only drops say anything.
    pub(crate) no_load: Option<f64>,
    /// Whether the limit bound: at least a tenth of the successful calls
    /// found the bulkhead full or nearly so when they left, and enough of
    /// them to measure `latency` at the limit. Only a bound window may
    /// raise the limit (an idle limit proves nothing).
    pub(crate) bound: bool,
    /// Whether more calls were dropped (timed out, cancelled; errors too
    /// if they count as drops) than the drop tolerance allows.
    pub(crate) dropping: bool,
    /// Whether the limit is below the slow-start threshold: the first
    /// congested window then cuts it at once, and growth doubles it if the
    /// bulkhead is `saturated`.
    pub(crate) slow_start: bool,
    /// Whether nearly every successful call (nine in ten) found the
    /// bulkhead full or nearly so when it left: the demand is well above
    /// the limit.
    pub(crate) saturated: bool,
    /// The latency of the window before, if it was a steady window.
    pub(crate) previous: Option<f64>,
}

/// What an algorithm makes of a window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Step {
    /// Raise the limit to this.
    Grow(f64),
    /// Keep it.
    Hold,
    /// Lower it to this: a congestion signal, which also ends slow start.
    Cut(f64),
}

/// Netflix concurrency-limits' `Log10RootIntFunction`: `max(1, ⌊log10 L⌋)`.
pub(crate) fn log10_root(limit: f64) -> f64 {
    if limit < 10.0 {
        1.0
    } else {
        limit.log10().floor().max(1.0)
    }
}

/// Hashes an `f64` tunable by its bits, so that the configurations holding
/// it keep `Eq` and `Hash` (tunables are finite: builders refuse NaN).
pub(crate) fn hash_f64<H: Hasher>(value: f64, state: &mut H) {
    value.to_bits().hash(state);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log10_root_is_netflixs_integer_function() {
        let cases = [
            (1.0, 1.0),
            (9.0, 1.0),
            (10.0, 1.0),
            (99.0, 1.0),
            (100.0, 2.0),
            (999.0, 2.0),
            (1000.0, 3.0),
        ];
        for (limit, expected) in cases {
            assert_eq!(log10_root(limit), expected, "{limit}");
        }
    }
}
