//! # Implementation details
//!
//! A precise reading of the system clock's *rate* that costs one `RDTSC`
//! instead of a `clock_gettime` (about 8 - 10 ns against 20 on a virtual
//! machine), for the rate limiter's short periods (see `rate_limiter`,
//! *Readings of the clock*). This is how quanta (governor's clock) reads
//! time, though quanta also scales each reading to nanoseconds.
//!
//! [`TscTime::ticks`] reads the processor's time-stamp counter; a policy
//! counts in its ticks, converting durations with a factor measured once against
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
//!
//! ## Why not quanta
//!
//! quanta 0.12 reads the counter with the same single `_rdtsc()` (its
//! `Clock::raw`), and we would rather depend on it than keep this file, but
//! it does not do what the rate limiter needs: the limiter counts periods,
//! waits and deadlines in ticks and so converts nanoseconds to ticks
//! ([`TscTime::ticks_of`]), while quanta only converts ticks to nanoseconds
//! (`delta_as_nanos`, `scaled`) and keeps its calibration private; its
//! calibration busy-spins a core for up to 200 ms on first use
//! (`MAXIMUM_CAL_TIME_NS`), against 5 ms of sleep here; and it also
//! requires `RDTSCP`, and brings raw-cpuid, crossbeam-utils and once_cell
//! for what is here one `CPUID` leaf. What this file keeps of quanta's
//! design: the invariant-counter check, trusting the counters to be
//! synchronised, and raw ticks on the hot path with scaling only off it.

#[cfg(any(
    all(test, not(loom)),
    all(target_arch = "x86_64", not(loom), not(miri))
))]
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

    /// The counter now, in ticks; never before the calibration (a
    /// processor whose counter is behind gives the calibration's).
    #[inline]
    pub(crate) fn ticks(self) -> u64 {
        ticks().max(self.base)
    }

    /// A precise reading of both time lines, `Instant::now()` first.
    #[cfg(all(test, not(loom)))]
    fn pair(self) -> (Instant, u64) {
        let at = Instant::now();
        (at, self.ticks())
    }

    /// `ticks` of the counter in nanoseconds, rounded down (saturating).
    pub(crate) fn nanos_of(self, ticks: u64) -> u64 {
        u64::try_from((u128::from(ticks) * u128::from(self.scale)) >> 32).unwrap_or(u64::MAX)
    }

    /// `nanos` nanoseconds in ticks of the counter, rounded down, or up if
    /// `up` (saturating).
    pub(crate) fn ticks_of(self, nanos: u64, up: bool) -> u64 {
        let scaled = u128::from(nanos) << 32;
        let scale = u128::from(self.scale);
        let ticks = if up {
            scaled.div_ceil(scale)
        } else {
            scaled / scale
        };
        u64::try_from(ticks).unwrap_or(u64::MAX)
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
    fn conversions_round_as_documented() {
        // 2.5 ticks per nanosecond.
        let tsc = TscTime {
            base: 0,
            scale: (2 << 32) / 5,
        };
        assert_eq!(tsc.ticks_of(2, false), 5);
        assert_eq!(tsc.ticks_of(1, false), 2);
        assert_eq!(tsc.ticks_of(1, true), 3);
        assert_eq!(tsc.nanos_of(5), 1, "1.99999 ns, down");
        assert_eq!(tsc.ticks_of(u64::MAX, true), u64::MAX, "saturates");
        let slow = TscTime {
            base: 0,
            scale: 1000 << 32,
        };
        assert_eq!(slow.nanos_of(u64::MAX), u64::MAX, "saturates");
    }

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
                let now = tsc.ticks();
                assert!(now >= last, "went back from {last} to {now}");
                last = now;
            }
            let (end, last) = tsc.pair();
            let instant = end.duration_since(start).as_nanos() as f64;
            let counted = tsc.nanos_of(last - first) as f64;
            // Calibrated to a few parts per million.
            (counted / instant - 1.0).abs() < 0.01
        });
        assert!(within, "the counter's nanoseconds are 1 % off Instant's");
    }
}
