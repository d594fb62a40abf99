//! # Implementation details
//!
//! A precise reading of the system clock's *rate* that costs one `RDTSC`
//! and a multiplication instead of a `clock_gettime` (about 8 - 10 ns
//! against 20 on a virtual machine), for the rate limiter's short periods
//! (see `rate_limiter`, *Readings of the clock*). This is how quanta
//! (governor's clock) reads time.
//!
//! [`TscTime::nanos`] counts nanoseconds since the calibration on the
//! processor's time-stamp counter, scaled by a factor measured once against
//! `Instant` (the counter's ticks over at least `CALIBRATION` (5 ms) of
//! `Instant` time, each end read between two `RDTSC`s and the tightest of
//! several brackets kept: a few parts per million off). It is a time line
//! of its own: its nanoseconds are the monotonic clock's to within that
//! error, but its readings are not `Instant`s, and a policy that counts on
//! it counts *everything* on it (periods, waits, deadlines), converting to
//! `Instant` only for a duration to sleep.
//!
//! Used only where the counter is *invariant* (CPUID leaf `0x8000_0007`,
//! EDX bit 8: it ticks at a constant rate in every power state), on
//! x86_64, outside loom and miri; anywhere else [`TscTime::get`] is `None`
//! and the caller reads `Instant::now()`. Like quanta, it trusts the
//! counters of the processors to be synchronised (an invariant counter on
//! one board is; Linux switches its own clock source away from the TSC when
//! it finds them apart). A reading from a processor whose counter is behind
//! the calibration's saturates at zero.

use std::time::Instant;

/// How long the calibration measures the counter against `Instant`.
#[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
const CALIBRATION: std::time::Duration = std::time::Duration::from_millis(5);

/// Nanoseconds on the time-stamp counter; see the module's documentation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TscTime {
    /// The counter at the calibration's end.
    base: u64,
    /// Nanoseconds per tick, as a 32.32 fixed-point number.
    scale: u64,
}

impl TscTime {
    /// The process-wide calibration, measured on first use (it takes 5
    /// ms); `None` where the counter is not invariant or not there.
    pub(crate) fn get() -> Option<TscTime> {
        #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
        {
            static CALIBRATED: std::sync::OnceLock<Option<TscTime>> = std::sync::OnceLock::new();
            *CALIBRATED.get_or_init(calibrate)
        }
        #[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
        None
    }

    /// Nanoseconds since the calibration.
    #[inline]
    pub(crate) fn nanos(self) -> u64 {
        let ticks = ticks().saturating_sub(self.base);
        // Wraps after 584 years of a counter at 1 GHz or more.
        ((u128::from(ticks) * u128::from(self.scale)) >> 32) as u64
    }

    /// A precise reading of both time lines, `Instant::now()` first.
    #[inline]
    pub(crate) fn pair(self) -> (Instant, u64) {
        let at = Instant::now();
        (at, self.nanos())
    }
}

/// The time-stamp counter.
#[inline(always)]
fn ticks() -> u64 {
    #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
    // SAFETY: every x86_64 processor has `RDTSC`; it reads a register and
    // touches no memory. (A safe function in newer Rust; `unsafe` at the
    // MSRV.)
    #[allow(unused_unsafe)]
    return unsafe { core::arch::x86_64::_rdtsc() };
    #[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
    0
}

/// Whether the counter is invariant: CPUID leaf `0x8000_0007`, EDX bit 8.
#[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
fn invariant() -> bool {
    use core::arch::x86_64::__cpuid;
    // SAFETY: every x86_64 processor has `CPUID`; leaf `0x8000_0000` (the
    // highest extended leaf) exists on all of them.
    #[allow(unused_unsafe)]
    let highest = unsafe { __cpuid(0x8000_0000) }.eax;
    highest >= 0x8000_0007 && {
        // SAFETY: as above; the processor reports this leaf.
        #[allow(unused_unsafe)]
        let power = unsafe { __cpuid(0x8000_0007) };
        power.edx & (1 << 8) != 0
    }
}

/// `Instant::now()` and the counter at that moment: the middle of the
/// tightest of a few `RDTSC` brackets around it.
#[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
fn bracketed() -> (Instant, u64) {
    let mut best = (Instant::now(), 0, u64::MAX);
    for _ in 0..16 {
        let before = ticks();
        let at = Instant::now();
        let after = ticks();
        if after >= before && after - before < best.2 {
            best = (at, before + (after - before) / 2, after - before);
        }
    }
    (best.0, best.1)
}

#[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
fn calibrate() -> Option<TscTime> {
    if !invariant() {
        return None;
    }
    let (start, first) = bracketed();
    std::thread::sleep(CALIBRATION);
    let (end, last) = bracketed();
    let nanos = end.checked_duration_since(start)?.as_nanos();
    let ticks = u128::from(last.checked_sub(first)?);
    // A counter of 200 kHz or more, and a scale that fits.
    if ticks < 1000 || nanos < CALIBRATION.as_nanos() {
        return None;
    }
    let scale = u64::try_from((nanos << 32) / ticks).ok()?;
    (scale > 0).then_some(TscTime { base: last, scale })
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn tsc_nanos_keep_pace_with_instant_and_never_go_back() {
        let Some(tsc) = TscTime::get() else {
            return; // No invariant counter here: nothing to check.
        };
        // Three tries: a pre-emption between the two readings of a pair
        // can throw one off.
        let within = (0..3).any(|_| {
            let (start, first) = tsc.pair();
            let mut last = first;
            while start.elapsed() < Duration::from_millis(50) {
                let now = tsc.nanos();
                assert!(now >= last, "went back from {last} to {now}");
                last = now;
            }
            let (end, last) = tsc.pair();
            let instant = end.duration_since(start).as_nanos() as f64;
            let counted = (last - first) as f64;
            // Calibrated to a few parts per million.
            (counted / instant - 1.0).abs() < 0.01
        });
        assert!(within, "the counter's nanoseconds are 1 % off Instant's");
    }
}
