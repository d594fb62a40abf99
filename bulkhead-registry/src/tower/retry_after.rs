//! The `Retry-After` hint of a refusal: the layer's own hint, or, when the
//! registry tracks sizing, an estimate from the refusing bulkhead's figures.
//!
//! # The estimate
//!
//! A bulkhead that tracks sizing knows W, how long its admitted calls have
//! held a slot on average (over its life, [`Traffic::mean_hold`]), and at the
//! refusal: L calls in flight, its limit N and Q callers queued. By Little's
//! law, L = X × W, slots come free at the rate X = L / W. A client that comes
//! back needs k = Q + 1 of them to come free (the queued callers are served
//! first, and after the limit was lowered the L − N calls above it must
//! finish too: k = max(L − N, 0) + Q + 1). So the hint is
//!
//! ```text
//! Retry-After = ⌈k × W / L⌉ seconds
//! ```
//!
//! at least the layer's hint ([`DEFAULT_RETRY_AFTER`], one second, unless
//! set) and at most [`MAX_RETRY_AFTER`] (or the layer's hint if that is
//! longer). Whole seconds, rounded up: the header has no finer unit, and a
//! client told to come back a little early finds the bulkhead still full.
//!
//! Without figures (sizing not tracked, or no call completed yet, so W is
//! unknown) the hint is the layer's; so it is when no call is in flight any
//! more (L = 0: a slot came free since the refusal).
//!
//! [`Traffic::mean_hold`]: bulkhead_core::Traffic::mean_hold

use std::time::Duration;

use bulkhead_core::{Bulkhead, BulkheadFull, Rejection};

use super::error::Unavailable;

/// The `Retry-After` hint of a refusal unless a layer sets another: the
/// smallest the header can say but zero. A bulkhead's slot comes free within
/// about one call's latency, usually well under a second.
///
/// A layer's hint is also the least that a hint estimated from its
/// bulkhead's figures says.
pub const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);

/// The most a hint estimated from a bulkhead's figures says (unless the
/// layer's own hint is longer): one minute.
///
/// The mean hold time is over the bulkhead's life, so it lags behind a
/// dependency that just turned slow or well again, and a few calls that hung
/// can inflate it; the cap keeps such an estimate from sending clients away
/// for longer than a minute.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// A refusal by `bulkhead`, with its hint (`hint` unless its figures give
/// one; see the [module docs](self)).
pub(super) fn refusal(bulkhead: &Bulkhead, full: BulkheadFull, hint: Duration) -> Unavailable {
    Unavailable::new(full.into(), for_bulkhead(bulkhead, hint))
}

/// The hint of a pipeline's refusal: estimated from its bulkhead's figures
/// when the bulkhead refused, else `hint`.
pub(super) fn for_rejection(
    rejection: Rejection,
    bulkhead: Option<&Bulkhead>,
    hint: Duration,
) -> Duration {
    match (rejection, bulkhead) {
        (Rejection::BulkheadFull(_), Some(bulkhead)) => for_bulkhead(bulkhead, hint),
        _ => hint,
    }
}

/// The hint for a refusal by `bulkhead`: its estimate between `hint` and
/// [`MAX_RETRY_AFTER`] if it has figures, else `hint`.
fn for_bulkhead(bulkhead: &Bulkhead, hint: Duration) -> Duration {
    let Some(mean_hold) = bulkhead.traffic().and_then(|traffic| traffic.mean_hold()) else {
        return hint;
    };
    let estimate = slot_free_in(
        mean_hold,
        bulkhead.concurrent_calls(),
        bulkhead.max_concurrent(),
        bulkhead.waiting_calls(),
    );
    estimate.clamp(hint, MAX_RETRY_AFTER.max(hint))
}

/// ⌈k × W / L⌉ in whole seconds, with k = max(L − N, 0) + Q + 1: when a
/// newcomer can expect a slot. Zero when nothing is in flight.
fn slot_free_in(
    mean_hold: Duration,
    in_flight: u32,
    max_concurrent: u32,
    waiting: u32,
) -> Duration {
    if in_flight == 0 {
        return Duration::ZERO;
    }
    let departures = u128::from(in_flight.saturating_sub(max_concurrent)) + u128::from(waiting) + 1;
    let nanos = mean_hold.as_nanos().saturating_mul(departures) / u128::from(in_flight);
    let secs = nanos.div_ceil(u128::from(NANOS_PER_SEC));
    Duration::from_secs(u64::try_from(secs).unwrap_or(u64::MAX))
}

const NANOS_PER_SEC: u32 = 1_000_000_000;

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_slot_comes_free_after_the_mean_hold_over_the_calls_in_flight() {
        // 3 slots held for 1.5 s on average: one frees every 0.5 s.
        assert_eq!(slot_free_in(1500 * MS, 3, 3, 0), Duration::from_secs(1));
        assert_eq!(
            slot_free_in(Duration::from_secs(12), 3, 3, 0),
            Duration::from_secs(4)
        );
    }

    #[test]
    fn the_queued_callers_go_first() {
        assert_eq!(slot_free_in(1500 * MS, 3, 3, 2), Duration::from_secs(2));
        assert_eq!(
            slot_free_in(Duration::from_secs(10), 2, 2, 3),
            Duration::from_secs(20)
        );
    }

    #[test]
    fn after_a_lowered_limit_the_calls_above_it_finish_first() {
        // 4 in flight under a limit of 2: three must finish.
        assert_eq!(
            slot_free_in(Duration::from_secs(4), 4, 2, 0),
            Duration::from_secs(3)
        );
    }

    #[test]
    fn the_estimate_is_rounded_up_to_whole_seconds_and_zero_with_nothing_in_flight() {
        assert_eq!(slot_free_in(MS, 8, 8, 0), Duration::from_secs(1));
        assert_eq!(slot_free_in(Duration::ZERO, 8, 8, 5), Duration::ZERO);
        assert_eq!(
            slot_free_in(Duration::from_secs(9), 0, 1, 0),
            Duration::ZERO
        );
    }

    #[test]
    fn a_huge_mean_hold_saturates_instead_of_overflowing() {
        let huge = slot_free_in(Duration::MAX, u32::MAX, 1, u32::MAX);
        assert!(huge >= Duration::from_secs(u64::from(u32::MAX)));
    }
}
