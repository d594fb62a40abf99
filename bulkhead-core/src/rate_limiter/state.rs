//! # Implementation details
//!
//! The permit accounting of a rate limiter: one 64-bit atomic word, updated
//! with a compare-exchange loop. No lock, no allocation, on any path.
//!
//! ## Cycles and serial numbers
//!
//! Time is cut into cycles of `refresh_period` counted from the limiter's
//! creation, on its clock: at `elapsed` nanoseconds the current cycle is
//! `elapsed / period`. Every permit the limiter will ever hand out has a
//! serial number, and permit `s` belongs to cycle `s / limit`: cycle `c` owns
//! the serials `c * limit .. (c + 1) * limit`, exactly `limit_for_period` of
//! them.
//!
//! ```text
//!              cycle c-1          cycle c (now)        cycle c+1
//!           |----------------|----------------|----------------|
//! serials    (c-1)*L ..       c*L .. c*L+L-1    (c+1)*L ..
//!                                   ^ next: the next serial to hand out
//! ```
//!
//! The state word is `next`, the serial of the next permit to hand out. A
//! caller at cycle `c` first moves `next` up to `c * limit` if it lags behind
//! (the permits of past cycles are gone: unused ones do not carry over), then
//! takes serial `next`:
//!
//! - if it belongs to cycle `c`, the permit is granted now;
//! - if it belongs to a later cycle (every permit of the current one is
//!   taken or reserved), the caller may reserve it if that cycle starts
//!   within its allowed wait, and then waits for it;
//! - otherwise it is refused, and the word is left as it was.
//!
//! This is Resilience4j's `AtomicRateLimiter` in other coordinates: its state
//! (`activeCycle`, `activePermissions`) at cycle `c` is `(c, (c + 1) * limit -
//! next)`, and its refill `min(permissions + elapsed_cycles * limit, limit)`
//! is `next = max(next, c * limit)`. One number instead of two means nothing
//! to pack, and no cycle counter to wrap at 32 bits.
//!
//! ## Wrap-around
//!
//! `next` and `c * limit` are computed modulo 2^64, and compared through their
//! wrapping difference `ahead = next - c * limit`:
//!
//! - a legitimate `next` is never more than `(W + 2) * limit` ahead of the
//!   current cycle's first serial, where `W = max_wait / period`: a caller
//!   only reserves a permit of a cycle starting within `max_wait`;
//! - a `next` left behind by past cycles gives a difference that wrapped
//!   below zero, a huge number.
//!
//! - nor more than `limit + MAX_RESERVED`: every serial past the current
//!   cycle's is a reservation, and at most [`MAX_RESERVED`] (2^40, a
//!   trillion calls) may be outstanding; a caller beyond is refused;
//! - a `next` left behind by past cycles gives a difference that wrapped
//!   below zero, a huge number.
//!
//! So an `ahead` up to the *horizon*, twice the smaller bound, is a real
//! position in the current or a later cycle, and anything above it is a lag,
//! read as `ahead = 0`. An active limiter therefore counts correctly across
//! the point where the serials wrap, whatever its rate.
//!
//! The one thing a 64-bit word cannot tell apart is a limiter left idle for
//! an exact multiple of 2^64 serials (within a horizon, less than 2^42 of
//! them). That cannot happen while `limit * cycles since creation < 2^63`:
//! for every rate up to one permit per two nanoseconds (500 million per
//! second; the default is 100 million) this holds for 584 years, the range of
//! a nanosecond count, so such limiters never wrap at all. Faster ones wrap
//! after 2^64 permits' worth of time (4.3 seconds at the extreme of 2^32
//! permits per nanosecond); if one lies idle for a multiple of that, give or
//! take a horizon (odds below 2^-21 per idle spell), the cycle it wakes in
//! may offer fewer permits, or make callers wait up to their `max_wait`, as
//! if it were still busy. It never grants more than `limit_for_period` per
//! cycle.
//!
//! ## Memory ordering
//!
//! The word guards no other data, but its readers rely on time moving
//! forward: in [`reserve`](PermitState::reserve) a caller reads the clock
//! *after* loading the word, loads with `Acquire` and publishes with
//! `Release`, so the clock reading that produced a value happens-before the
//! reading of whoever loads it. No caller ever sees a `next` computed from a
//! later time than its own, which keeps a reservation from being mistaken
//! for a lag.
//!
//! ## Readings that may lag
//!
//! Most calls take the cheaper path of
//! [`try_take_at`](PermitState::try_take_at), on a reading taken *before*
//! the load: a recent reading of the clock (which lags the real time by up
//! to the clock's resolution, the `margin`), or one the caller shares with
//! other policies. Such a reading may be older than the one that produced
//! `next`. It is used only when the decision it gives is the one a fresh
//! reading would give:
//!
//! - the reading is more than `margin` before the end of its cycle, so the
//!   real time, and every reading behind `next`, is in the same cycle (or an
//!   earlier one);
//! - only a grant is taken from it: a permit of this cycle (`next` in it), or
//!   the cycle's first (`next` behind it, a lag read as a *signed*
//!   difference, so that a `next` written on a later reading is never taken
//!   for one and moved back).
//!
//! Anything else (no permit left, a reservation, a reading near the end of
//! its cycle) is decided by `reserve` on a fresh reading: a lagging reading
//! never refuses a permit, never makes a caller wait, and never grants one
//! of a cycle the real time has left, as long as it lags by at most
//! `margin`. A reading that lags by more (a starved clock thread, or a
//! caller pre-empted between its reading and its compare-exchange, which a
//! fresh reading suffers from too) can grant the last permits of a cycle
//! that has just ended, never more than `limit_for_period` per cycle.
//!
//! ## Runs of serials
//!
//! [`try_claim_at`](PermitState::try_claim_at) is the same decision for a
//! run of serials `s .. s + k` of the reading's cycle, taken by one
//! compare-exchange that moves `next` by `k`; `k` never exceeds the
//! permits the cycle has left at `s`, so the run never reaches into the
//! next cycle. The word counts every serial of the run as taken; the
//! caller spends them on its own readings of that cycle (`batch.rs`).

use crate::loom::atomic::{AtomicU64, Ordering};

/// The most permits of later cycles that may be reserved at once: 2^40.
///
/// It bounds how far ahead a legitimate state can be, which keeps the
/// horizon small; no program makes a trillion calls within one `max_wait`.
pub(super) const MAX_RESERVED: u64 = 1 << 40;

/// The dividends [`PermitState::cycle`] divides by multiplying: below 2^62.
const DIVIDEND_BITS: u32 = 62;

/// What a caller got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reserved {
    /// A permit of the current cycle.
    Now,
    /// A permit of a later cycle, which starts `wait` nanoseconds after the
    /// `elapsed` time the reservation was computed at.
    Later { wait: u64 },
    /// No permit within the allowed wait; nothing was reserved.
    Refused,
    /// A permit within the allowed wait, but of a cycle that starts at or
    /// after the caller's deadline; nothing was reserved.
    PastDeadline,
}

/// The most permits one claim takes ([`claim_size`]).
pub(super) const CLAIM_MAX: u64 = 8;

/// A claim takes at most this fraction (1 / `CLAIM_SHARE`) of the permits
/// its cycle has left ([`claim_size`]).
pub(super) const CLAIM_SHARE: u64 = 4;

/// How many permits a claim that wants `want` takes when its cycle has
/// `left` (at least 1): `want`, but at most [`CLAIM_MAX`] and a
/// [`CLAIM_SHARE`]th of `left`, and at least one. So a limit below 8 is
/// never claimed in runs, nor the last 7 permits of any cycle, and `want`
/// 0 or 1 takes one permit.
#[inline(always)]
pub(super) fn claim_size(want: u64, left: u64) -> u64 {
    want.min(left / CLAIM_SHARE).clamp(1, CLAIM_MAX)
}

#[derive(Debug)]
pub(super) struct PermitState {
    /// The serial number of the next permit to hand out.
    next: AtomicU64,
    /// `limit_for_period`, at least 1.
    limit: u64,
    /// `refresh_period` in nanoseconds, at least 1.
    period: u64,
    /// The configured `max_wait` in nanoseconds: no reservation waits longer.
    max_wait: u64,
    /// The largest `ahead` that is a position rather than a lag.
    horizon: u64,
    /// `elapsed / period` as `(elapsed * magic) >> shift` on the fast
    /// path: see [`cycle`](Self::cycle).
    magic: u64,
    shift: u32,
}

impl PermitState {
    /// [`in_units`](Self::in_units) in nanoseconds, for tests.
    #[cfg(any(test, loom))]
    pub(super) fn new(
        limit: u32,
        period: std::time::Duration,
        max_wait: std::time::Duration,
    ) -> Self {
        use crate::clock::nanos;
        PermitState::in_units(limit, nanos(period), nanos(max_wait))
    }

    /// A limiter whose first cycle starts at `elapsed` zero, with all of its
    /// permits available, the period and `max_wait` in the units the
    /// caller's readings count in (nanoseconds, or ticks of the counter).
    pub(super) fn in_units(limit: u32, period: u64, max_wait: u64) -> Self {
        let limit = u64::from(limit.max(1));
        let period = period.max(1);
        let bound = (max_wait / period)
            .saturating_add(2)
            .saturating_mul(limit)
            .min(limit + MAX_RESERVED);
        // ceil(log2(period)): 2^bits >= period > 2^(bits - 1).
        let bits = u64::BITS - (period - 1).leading_zeros();
        let shift = DIVIDEND_BITS + bits;
        // ceil(2^shift / period) <= 2^63: it fits.
        let magic = ((1_u128 << shift).div_ceil(u128::from(period))) as u64;
        PermitState {
            next: AtomicU64::new(0),
            limit,
            period,
            max_wait,
            horizon: 2 * bound,
            magic,
            shift,
        }
    }

    /// The cycle of `elapsed`, `elapsed / period`, with a multiplication
    /// and a shift instead of a division (a few nanoseconds less) for every
    /// `elapsed` below 2^62 (146 years): with `bits = ceil(log2(period))`,
    /// `magic = ceil(2^(62 + bits) / period)` and `shift = 62 + bits`,
    /// `magic * period - 2^shift < period <= 2^bits`, which makes the
    /// quotient exact for every dividend below 2^62 (Granlund and
    /// Montgomery, *Division by invariant integers using multiplication*,
    /// 1994, theorem 4.2).
    #[inline(always)]
    fn cycle(&self, elapsed: u64) -> u64 {
        if elapsed < 1 << DIVIDEND_BITS {
            ((u128::from(elapsed) * u128::from(self.magic)) >> self.shift) as u64
        } else {
            elapsed / self.period
        }
    }

    /// Takes a permit of the current cycle, or reserves one of a later cycle
    /// starting within `max_wait` nanoseconds (at most the configured one).
    ///
    /// `elapsed` reads the clock, in nanoseconds since the first cycle began;
    /// it is called after each load of the word, so each attempt decides on a
    /// time no earlier than the one the loaded value was computed at.
    #[cfg(any(test, loom))]
    pub(super) fn reserve(&self, max_wait: u64, elapsed: impl FnMut() -> u64) -> Reserved {
        self.reserve_before(max_wait, u64::MAX, elapsed)
    }

    /// [`reserve`](Self::reserve) for a caller with a deadline, `deadline`
    /// nanoseconds after the first cycle began (`u64::MAX` for none): a
    /// permit of a cycle that starts at or after it is not reserved
    /// ([`Reserved::PastDeadline`]).
    #[inline]
    pub(super) fn reserve_before(
        &self,
        max_wait: u64,
        deadline: u64,
        mut elapsed: impl FnMut() -> u64,
    ) -> Reserved {
        let max_wait = max_wait.min(self.max_wait);
        let mut next = self.next.load(Ordering::Acquire);
        loop {
            let now = elapsed();
            let cycle = self.cycle(now);
            let first = cycle.wrapping_mul(self.limit);
            let ahead = self.ahead(next, first);
            let reserved = if ahead < self.limit {
                Reserved::Now
            } else if ahead - self.limit >= MAX_RESERVED {
                return Reserved::Refused;
            } else {
                // The serial `first + ahead` opens its cycle at this time.
                let start =
                    (u128::from(cycle) + u128::from(ahead / self.limit)) * u128::from(self.period);
                let wait = start - u128::from(now);
                if wait > u128::from(max_wait) {
                    return Reserved::Refused;
                }
                if start >= u128::from(deadline) {
                    return Reserved::PastDeadline;
                }
                Reserved::Later { wait: wait as u64 }
            };
            let taken = first.wrapping_add(ahead).wrapping_add(1);
            match self
                .next
                .compare_exchange_weak(next, taken, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return reserved,
                Err(actual) => next = actual,
            }
        }
    }

    /// Takes a permit of the cycle of `elapsed`, a reading that may lag the
    /// real time by up to `margin` nanoseconds (see *Readings that may
    /// lag*); `false` if that cannot be done safely on this reading, and
    /// the caller must decide on a fresh one with [`reserve`](Self::reserve).
    #[inline]
    pub(super) fn try_take_at(&self, elapsed: u64, margin: u64) -> bool {
        self.try_claim_at(elapsed, margin, 1) != 0
    }

    /// [`try_take_at`](Self::try_take_at) for a run of up to `want`
    /// permits of the cycle of `elapsed`, all in one compare-exchange: the
    /// serials `s .. s + k` with `k = `[`claim_size`]`(want, left)`, `left`
    /// the permits the cycle has left at `s` (so `k` is 1 when few are left,
    /// and the run never leaves the cycle). The number taken, `0` where
    /// `try_take_at` would give `false`. See `batch.rs`.
    #[inline]
    pub(super) fn try_claim_at(&self, elapsed: u64, margin: u64, want: u64) -> u64 {
        let cycle = self.cycle(elapsed);
        let left = self.period - (elapsed - cycle * self.period);
        if left <= margin {
            // The real time may be in the next cycle already.
            return 0;
        }
        let first = cycle.wrapping_mul(self.limit);
        let mut next = self.next.load(Ordering::Acquire);
        loop {
            // Signed: behind `first` is a lag, before it a position.
            let ahead = next.wrapping_sub(first) as i64;
            if ahead >= self.limit as i64 {
                // Taken up, reserved, or written on a later reading.
                return 0;
            }
            let (serial, remaining) = if ahead < 0 {
                (first, self.limit)
            } else {
                (next, self.limit - ahead as u64)
            };
            let taken = claim_size(want, remaining);
            match self.next.compare_exchange_weak(
                next,
                serial.wrapping_add(taken),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return taken,
                Err(actual) => next = actual,
            }
        }
    }

    /// The start of the cycle of `elapsed`, in the readings' units.
    #[inline(always)]
    pub(super) fn cycle_start(&self, elapsed: u64) -> u64 {
        self.cycle(elapsed) * self.period
    }

    /// `refresh_period`, in the readings' units.
    #[inline(always)]
    pub(super) fn period(&self) -> u64 {
        self.period
    }

    /// Permits left in the current cycle at `elapsed()`; negative when
    /// permits of later cycles are reserved.
    pub(super) fn available(&self, elapsed: impl FnOnce() -> u64) -> i64 {
        let next = self.next.load(Ordering::Acquire);
        let first = (elapsed() / self.period).wrapping_mul(self.limit);
        // Both fit: limit <= u32::MAX and ahead <= horizon < 2^42.
        self.limit as i64 - self.ahead(next, first) as i64
    }

    /// How far `next` is past `first`, the current cycle's first serial;
    /// zero if it lags behind.
    #[inline(always)]
    fn ahead(&self, next: u64, first: u64) -> u64 {
        match next.wrapping_sub(first) {
            ahead if ahead <= self.horizon => ahead,
            _ => 0,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::time::Duration;

    use super::*;

    const MS: u64 = 1_000_000;

    fn state(limit: u32, period_ms: u64, max_wait_ms: u64) -> PermitState {
        PermitState::new(
            limit,
            Duration::from_millis(period_ms),
            Duration::from_millis(max_wait_ms),
        )
    }

    fn take(state: &PermitState, at: u64, max_wait: u64) -> Reserved {
        state.reserve(max_wait, || at)
    }

    #[test]
    fn a_permit_of_a_cycle_starting_at_the_deadline_is_not_reserved() {
        let state = state(1, 100, 1000);
        assert_eq!(take(&state, 0, u64::MAX), Reserved::Now);
        // The next permit's cycle opens at 100 ms: a deadline there (or
        // before) leaves no time for it, and nothing is reserved.
        let before = |deadline| state.reserve_before(u64::MAX, deadline, || 10 * MS);
        assert_eq!(before(100 * MS), Reserved::PastDeadline);
        assert_eq!(before(50 * MS), Reserved::PastDeadline);
        assert_eq!(before(100 * MS + 1), Reserved::Later { wait: 90 * MS });
        // That reservation took the 100 ms cycle's permit, not the refusals.
        assert_eq!(
            take(&state, 10 * MS, u64::MAX),
            Reserved::Later { wait: 190 * MS }
        );
    }

    #[test]
    fn the_cycle_by_multiplication_is_the_quotient() {
        let periods = [
            1,
            2,
            3,
            7,
            500,
            999,
            1000,
            1 << 20,
            (1 << 20) + 1,
            1_000_000,
            3_600_000_000_000,
            (1 << 62) - 1,
            1 << 62,
            (1 << 62) + 1,
            u64::MAX - 1,
            u64::MAX,
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut random = move || {
            // xorshift64
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for period in periods {
            let state = PermitState::new(1, Duration::from_nanos(period), Duration::ZERO);
            let check = |elapsed: u64| {
                assert_eq!(
                    state.cycle(elapsed),
                    elapsed / period,
                    "{elapsed} / {period}"
                );
            };
            for elapsed in [0, 1, (1 << 62) - 1, 1 << 62, u64::MAX] {
                check(elapsed);
            }
            for k in [1, 2, 3, 1000, ((1 << 62) - 1) / period, u64::MAX / period] {
                let at = k.saturating_mul(period);
                for elapsed in [at.saturating_sub(1), at, at.saturating_add(1)] {
                    check(elapsed);
                }
            }
            for _ in 0..20_000 {
                let r = random();
                check(r);
                check(r >> 2);
                check(r >> (r % 64));
            }
        }
    }

    #[test]
    fn each_cycle_grants_exactly_its_limit() {
        let state = state(3, 100, 0);
        for cycle in [0, 1, 2, 7] {
            let at = cycle * 100 * MS + 5;
            for _ in 0..3 {
                assert_eq!(take(&state, at, 0), Reserved::Now);
            }
            assert_eq!(take(&state, at, 0), Reserved::Refused);
            assert_eq!(state.available(|| at), 0);
        }
    }

    #[test]
    fn reservations_fill_later_cycles_up_to_max_wait() {
        let state = state(2, 100, 250);
        let at = 30 * MS;
        assert_eq!(take(&state, at, u64::MAX), Reserved::Now);
        assert_eq!(take(&state, at, u64::MAX), Reserved::Now);
        // Cycle 1 starts in 70ms, cycle 2 in 170ms, cycle 3 in 270ms > 250ms.
        for wait in [70, 70, 170, 170] {
            assert_eq!(
                take(&state, at, u64::MAX),
                Reserved::Later { wait: wait * MS }
            );
        }
        assert_eq!(take(&state, at, u64::MAX), Reserved::Refused);
        assert_eq!(state.available(|| at), -4);
        // A caller allowed a shorter wait does not reach as far.
        assert_eq!(take(&state, at, 100 * MS), Reserved::Refused);
        // In cycle 2, the reservations made for it are due: nothing is left.
        assert_eq!(state.available(|| 200 * MS), 0);
        assert_eq!(state.available(|| 300 * MS), 2);
    }

    #[test]
    fn a_wait_of_exactly_max_wait_is_allowed() {
        let state = state(1, 100, 100);
        assert_eq!(take(&state, 0, u64::MAX), Reserved::Now);
        assert_eq!(
            take(&state, 0, u64::MAX),
            Reserved::Later { wait: 100 * MS }
        );
        assert_eq!(take(&state, 0, u64::MAX), Reserved::Refused);
    }

    #[test]
    fn the_serials_wrap_without_losing_count() {
        // 1000 permits per nanosecond: the serials wrap within cycle
        // 18_446_744_073_709_551, whose first serial is 2^64 - 616.
        let state = PermitState::new(1000, Duration::from_nanos(1), Duration::from_nanos(3));
        let cycle = u64::MAX / 1000;
        let first = cycle * 1000;
        assert_eq!(first, u64::MAX - 615);
        // The next serial at `first`, as if the limiter had been busy.
        state.next.store(first, Ordering::Release);
        for _ in 0..1000 {
            assert_eq!(take(&state, cycle, u64::MAX), Reserved::Now);
        }
        assert_eq!(state.next.load(Ordering::Relaxed), 384, "wrapped");
        assert_eq!(take(&state, cycle, 0), Reserved::Refused);
        // Reservations made before the wrap point into cycles after it.
        for _ in 0..2000 {
            assert!(matches!(
                take(&state, cycle, u64::MAX),
                Reserved::Later { wait: 1 | 2 }
            ));
        }
        assert_eq!(take(&state, cycle, u64::MAX), Reserved::Later { wait: 3 });
        assert_eq!(state.available(|| cycle), -2001);
        assert_eq!(state.available(|| cycle + 1), -1001);
        assert_eq!(state.available(|| cycle + 3), 999);
        // Idle cycles after the wrap: back to a full cycle, no more.
        assert_eq!(state.available(|| cycle + 10), 1000);
        for _ in 0..1000 {
            assert_eq!(take(&state, cycle + 10, 0), Reserved::Now);
        }
        assert_eq!(take(&state, cycle + 10, 0), Reserved::Refused);
    }

    #[test]
    fn a_lagging_reading_takes_only_permits_of_its_cycle_far_from_its_end() {
        let state = state(2, 100, 0);
        // A lag behind the cycle: the cycle's first permit.
        assert!(state.try_take_at(150 * MS, 5 * MS));
        assert!(state.try_take_at(150 * MS, 5 * MS));
        // None left: decided on a fresh reading instead.
        assert!(!state.try_take_at(150 * MS, 5 * MS));
        // Within the margin of the cycle's end: not trusted.
        assert!(!state.try_take_at(296 * MS, 5 * MS));
        assert!(state.try_take_at(294 * MS, 5 * MS));
        // A reading older than the cycle `next` is in never moves it back.
        assert!(!state.try_take_at(150 * MS, 5 * MS));
        assert_eq!(state.available(|| 250 * MS), 1);
    }

    #[test]
    fn a_claim_takes_what_is_wanted_within_a_quarter_of_what_is_left() {
        // Never more than 8, nor a quarter of what is left; at least one.
        assert_eq!(claim_size(8, 50), 8);
        assert_eq!(claim_size(8, 31), 7);
        assert_eq!(claim_size(3, 50), 3);
        assert_eq!(claim_size(100, 1000), CLAIM_MAX);
        assert_eq!(claim_size(0, 50), 1);
        assert_eq!(claim_size(u64::MAX, u64::MAX), CLAIM_MAX);
        for left in 1..8 {
            assert_eq!(claim_size(8, left), 1, "the last 7 one by one");
        }
        for want in 0..20 {
            for left in 1..200 {
                let size = claim_size(want, left);
                assert!(size >= 1 && size <= left, "{want} of {left}: {size}");
                assert!(size <= want.max(1) && size <= CLAIM_MAX);
            }
        }
    }

    #[test]
    fn a_claim_takes_a_run_of_serials_of_its_own_cycle() {
        let state = state(50, 100, 0);
        // A lag: the run starts at the cycle's first serial.
        assert_eq!(state.try_claim_at(150 * MS, 0, 8), 8);
        assert_eq!(state.next.load(Ordering::Relaxed), 58);
        assert_eq!(state.available(|| 150 * MS), 42);
        // Runs shrink with what is left, down to one.
        let mut taken = 8;
        while taken < 50 {
            let run = state.try_claim_at(150 * MS, 0, 8);
            assert_eq!(run, claim_size(8, 50 - taken));
            taken += run;
        }
        assert_eq!(taken, 50, "exactly the cycle's permits");
        assert_eq!(state.try_claim_at(150 * MS, 0, 8), 0);
        // Not on a reading within the margin of its cycle's end, nor on one
        // older than `next`'s cycle.
        assert_eq!(state.try_claim_at(296 * MS, 5 * MS, 8), 0);
        assert_eq!(state.try_claim_at(250 * MS, 0, 8), 8);
        assert_eq!(state.try_claim_at(150 * MS, 0, 8), 0);
        assert_eq!(state.available(|| 250 * MS), 42);
    }

    #[test]
    fn a_limiter_idle_for_centuries_is_full_again() {
        let state = state(50, 1, 5000);
        for _ in 0..60 {
            let _ = take(&state, 0, u64::MAX);
        }
        assert!(state.available(|| 0) < 0);
        let later = 500 * 365 * 24 * 3600 * 1_000_000_000;
        assert_eq!(state.available(|| later), 50);
    }

    #[test]
    fn extreme_settings_saturate_instead_of_overflowing() {
        let state = PermitState::new(u32::MAX, Duration::MAX, Duration::MAX);
        assert_eq!(take(&state, u64::MAX, u64::MAX), Reserved::Now);
        assert_eq!(state.available(|| u64::MAX), i64::from(u32::MAX) - 1);
        let state = PermitState::new(1, Duration::from_nanos(1), Duration::MAX);
        let at = 1 << 62;
        assert_eq!(take(&state, at, u64::MAX), Reserved::Now);
        assert_eq!(take(&state, at, u64::MAX), Reserved::Later { wait: 1 });
        assert_eq!(state.available(|| at), -1);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    #[test]
    fn two_callers_never_share_the_last_permit() {
        loom::model(|| {
            let state = Arc::new(PermitState::new(
                1,
                Duration::from_nanos(10),
                Duration::from_nanos(10),
            ));
            let other = {
                let state = Arc::clone(&state);
                loom::thread::spawn(move || state.reserve(u64::MAX, || 3))
            };
            let mine = state.reserve(u64::MAX, || 3);
            let theirs = other.join().unwrap();
            let mut both = [mine, theirs];
            both.sort_by_key(|r| matches!(r, Reserved::Now));
            assert_eq!(both, [Reserved::Later { wait: 7 }, Reserved::Now]);
            assert_eq!(state.available(|| 3), -1);
        });
    }

    #[test]
    fn claims_never_take_more_than_the_cycle_has() {
        loom::model(|| {
            // 8 of 20 taken: with 12 left, a run takes at most 3.
            let state = Arc::new(PermitState::new(
                20,
                Duration::from_nanos(100),
                Duration::ZERO,
            ));
            assert_eq!(state.try_claim_at(10, 0, 8), 5);
            assert_eq!(state.try_claim_at(10, 0, 3), 3);
            let other = {
                let state = Arc::clone(&state);
                loom::thread::spawn(move || {
                    let first = state.try_claim_at(10, 0, 8);
                    first + state.try_claim_at(10, 0, 8)
                })
            };
            let fresh = {
                let state = Arc::clone(&state);
                loom::thread::spawn(move || state.reserve(0, || 12) == Reserved::Now)
            };
            let mine = state.try_claim_at(10, 0, 8);
            let theirs = other.join().unwrap();
            let fresh = u64::from(fresh.join().unwrap());
            let taken = 8 + mine + theirs + fresh;
            assert!(taken <= 20, "{taken}");
            assert_eq!(state.available(|| 12), 20 - taken as i64);
        });
    }

    #[test]
    fn two_callers_on_a_lagging_reading_never_share_the_last_permit() {
        loom::model(|| {
            let state = Arc::new(PermitState::new(
                2,
                Duration::from_nanos(100),
                Duration::ZERO,
            ));
            // One permit of the cycle is gone; both read time 10 (lagging
            // by up to 5), and a third caller decides on a fresh reading.
            assert!(state.try_take_at(10, 5));
            let other = {
                let state = Arc::clone(&state);
                loom::thread::spawn(move || state.try_take_at(10, 5))
            };
            let fresh = {
                let state = Arc::clone(&state);
                loom::thread::spawn(move || state.reserve(0, || 12) == Reserved::Now)
            };
            let mine = state.try_take_at(10, 5);
            let theirs = other.join().unwrap();
            let fresh = fresh.join().unwrap();
            assert_eq!(
                usize::from(mine) + usize::from(theirs) + usize::from(fresh),
                1
            );
            assert_eq!(state.available(|| 12), 0);
        });
    }
}
