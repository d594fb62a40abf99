//! # Implementation details
//!
//! [`SystemClock::recent`](super::SystemClock): the system clock's time as
//! one thread (`bulkhead-clock`) last read it, every [`TICK`], so that a
//! reading costs an atomic load and an addition instead of a
//! `clock_gettime`.
//!
//! ## The word
//!
//! ```text
//!  63                                              2   1   0
//! +-------------------------------------------------+---+---+
//! | nanoseconds from `origin` to the ticker's reading | L | U |
//! +-------------------------------------------------+---+---+
//! ```
//!
//! - `L` (`LIVE`): the word holds a reading. Without it there is none: `0`
//!   while the ticker is parked (or was never started), [`WAKE`] once a
//!   reader has asked it to run again. Readers then read `Instant::now()`
//!   themselves, so the ticker is never needed for a reading to be right,
//!   only for it to be cheap.
//! - `U` (`USED`): a reader used this reading. The first reader after a
//!   tick sets it, by a compare-exchange from the reading it used (one
//!   read-modify-write per tick, not per reading; a reading replaced
//!   meanwhile is left alone, and the next reader marks its successor); the
//!   ticker learns from it whether anyone still reads, and parks after
//!   [`IDLE_TICKS`] ticks in which nobody did. A parked ticker costs nothing.
//!
//! 62 bits of nanoseconds last 146 years from the first reading.
//!
//! ## What a reading promises
//!
//! A reading is a time `Instant::now()` returned on the ticker thread, so it
//! is on the system clock's time line and never later than a reader's own
//! `Instant::now()` taken after it: the ticker reads the clock before it
//! stores the word with `Release`, and a reader loads it with `Acquire`.
//! How much earlier it is depends on the ticker being scheduled on time:
//! one tick plus the thread's wake-up latency, [`RESOLUTION`] in normal
//! operation. A ticker starved of CPU for longer leaves older readings;
//! nothing can tell without reading the clock, which is what this avoids.
//! Callers that must not act early on such a reading either make their
//! decision from it only when it cannot matter, or read the clock (see each
//! policy's documentation).
//!
//! ## Parking
//!
//! The ticker parks by a compare-exchange from its last word (unused) to
//! `0`, so a reader that marks the word used at the same time keeps it
//! running. A reader that finds `0` moves it to [`WAKE`] and unparks the
//! ticker (only the reader whose exchange succeeds does); the ticker parks
//! again only while the word is `0` (a park may return spuriously, and an
//! unpark that comes first is kept as a token).

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::*};
use std::sync::{Once, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// How often the ticker reads the clock.
pub(super) const TICK: Duration = Duration::from_millis(1);

/// How far behind `Instant::now()` a reading is, at most, while the ticker
/// gets the CPU soon after its sleep ends: a tick, and four more for its
/// wake-up (readings lag by about half a tick typically; on a 2-vCPU
/// machine kept busy by builds we measured 1.1 ms at the 99th percentile,
/// 2.2 ms at the 99.9th, 4.5 ms at most).
pub(super) const RESOLUTION: Duration = Duration::from_millis(5);

/// Ticks without a reader after which the ticker parks (about 100 ms).
pub(super) const IDLE_TICKS: u32 = 100;

const USED: u64 = 1;
const LIVE: u64 = 2;
const SHIFT: u32 = 2;
/// No reading, and a reader asked the ticker to run.
const WAKE: u64 = USED;

/// The process-wide recent reading of the system clock.
#[inline]
pub(super) fn recent() -> Instant {
    match RECENT.get() {
        Some(recent) => match recent.read() {
            Some(at) => at,
            None => recent.fall_back(),
        },
        None => {
            start();
            Instant::now()
        }
    }
}

/// Where the system clock keeps its recent reading: see [`RecentTime`].
pub(super) fn recent_time() -> RecentTime {
    RecentTime {
        recent: match RECENT.get() {
            Some(recent) => recent,
            None => start(),
        },
    }
}

/// A clock's recent reading kept in memory, as nanoseconds since a fixed
/// instant, so that a policy reads it with one atomic load instead of a
/// call through the clock; see [`Clock::recent_time`](super::Clock::recent_time).
///
/// Only the [`SystemClock`](super::SystemClock) has one.
#[derive(Debug, Clone, Copy)]
pub struct RecentTime {
    recent: &'static Recent,
}

impl RecentTime {
    /// [`Clock::recent`](super::Clock::recent) as nanoseconds since
    /// [`epoch`](Self::epoch).
    #[inline]
    pub fn nanos(self) -> u64 {
        match self.recent.read_nanos() {
            Some(nanos) => nanos,
            None => self.recent.fall_back_nanos(),
        }
    }

    /// The instant [`nanos`](Self::nanos) counts from.
    pub fn epoch(self) -> Instant {
        self.recent.origin
    }
}

static RECENT: OnceLock<Recent> = OnceLock::new();

/// Starts the ticker (once).
#[cold]
#[inline(never)]
fn start() -> &'static Recent {
    static SPAWN: Once = Once::new();
    let recent = RECENT.get_or_init(|| Recent::new(Instant::now()));
    SPAWN.call_once(|| {
        // A thread that cannot be started leaves the word without a
        // reading: every reading is then `Instant::now()`.
        let _ = std::thread::Builder::new()
            .name("bulkhead-clock".into())
            .spawn(|| {
                if let Some(recent) = RECENT.get() {
                    recent.run();
                }
            });
    });
    recent
}

/// What the ticker does after a tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Next {
    /// Sleep for a tick, then tick again.
    Sleep,
    /// Nobody read for [`IDLE_TICKS`] ticks: park until a reader wakes it.
    Park,
}

/// A recent reading of the system clock, kept by a ticker.
#[derive(Debug)]
pub(super) struct Recent {
    word: AtomicU64,
    origin: Instant,
    /// Ticks in a row nobody read (the ticker's own count).
    idle: AtomicU32,
    /// The ticker thread, once it runs.
    thread: OnceLock<Thread>,
}

impl Recent {
    /// No reading yet; readings are counted from `origin`.
    pub(super) fn new(origin: Instant) -> Self {
        Recent {
            word: AtomicU64::new(0),
            origin,
            idle: AtomicU32::new(0),
            thread: OnceLock::new(),
        }
    }

    /// The last reading, or `None` if there is none (the ticker does not
    /// run).
    #[inline]
    pub(super) fn read(&self) -> Option<Instant> {
        let nanos = self.read_nanos()?;
        Some(self.origin + Duration::from_nanos(nanos))
    }

    /// The last reading as nanoseconds since `origin`, or `None`.
    #[inline]
    fn read_nanos(&self) -> Option<u64> {
        let word = self.word.load(Acquire);
        if word & LIVE == 0 {
            return None;
        }
        if word & USED == 0 {
            self.mark_used(word);
        }
        Some(word >> SHIFT)
    }

    /// [`fall_back`](Self::fall_back) in nanoseconds since `origin`.
    #[cold]
    #[inline(never)]
    fn fall_back_nanos(&self) -> u64 {
        let nanos = self.fall_back().saturating_duration_since(self.origin);
        u64::try_from(nanos.as_nanos()).unwrap_or(u64::MAX)
    }

    /// Marks the reading `word` used, if it is still there: a mark that
    /// came after the ticker parked would read as [`WAKE`] with nobody to
    /// wake it.
    #[cold]
    fn mark_used(&self, word: u64) {
        let _ = self
            .word
            .compare_exchange(word, word | USED, Relaxed, Relaxed);
    }

    /// A reading when the ticker does not run: the clock itself; wakes the
    /// ticker.
    #[cold]
    #[inline(never)]
    fn fall_back(&self) -> Instant {
        if self
            .word
            .compare_exchange(0, WAKE, Relaxed, Relaxed)
            .is_ok()
            && let Some(thread) = self.thread.get()
        {
            thread.unpark();
        }
        Instant::now()
    }

    /// Stores the reading `now`; says whether to sleep or park next.
    pub(super) fn tick(&self, now: Instant) -> Next {
        let nanos = now.saturating_duration_since(self.origin).as_nanos();
        let nanos = u64::try_from(nanos)
            .unwrap_or(u64::MAX)
            .min(u64::MAX >> SHIFT);
        let word = nanos << SHIFT | LIVE;
        let old = self.word.swap(word, Release);
        if old & USED != 0 {
            self.idle.store(0, Relaxed);
            return Next::Sleep;
        }
        let idle = self.idle.load(Relaxed) + 1;
        if idle < IDLE_TICKS {
            self.idle.store(idle, Relaxed);
            return Next::Sleep;
        }
        self.idle.store(0, Relaxed);
        // A reader that marks this reading used meanwhile keeps us running.
        match self.word.compare_exchange(word, 0, Relaxed, Relaxed) {
            Ok(_) => Next::Park,
            Err(_) => Next::Sleep,
        }
    }

    /// Whether a parked ticker should stay parked: nobody asked for it.
    pub(super) fn parked(&self) -> bool {
        self.word.load(Relaxed) == 0
    }

    /// The ticker thread's loop.
    fn run(&self) {
        let _ = self.thread.set(std::thread::current());
        loop {
            match self.tick(Instant::now()) {
                Next::Sleep => std::thread::sleep(TICK),
                Next::Park => {
                    while self.parked() {
                        std::thread::park();
                    }
                }
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_recent_time_is_a_plain_shareable_value() {
        fn bounds<T: Send + Sync + Copy + std::fmt::Debug + 'static>() {}
        bounds::<RecentTime>();
    }

    #[test]
    fn a_reading_is_the_ticker_s_last_exactly() {
        let origin = Instant::now();
        let recent = Recent::new(origin);
        assert_eq!(recent.read(), None, "no reading before the first tick");
        for at in [
            origin,
            origin + 3 * MS,
            origin + Duration::from_secs(86_400),
        ] {
            assert_eq!(recent.tick(at), Next::Sleep);
            assert_eq!(recent.read(), Some(at));
        }
    }

    #[test]
    fn the_ticker_parks_after_idle_ticks_and_a_reader_wakes_it() {
        let origin = Instant::now();
        let recent = Recent::new(origin);
        let mut at = origin;
        for _ in 1..IDLE_TICKS {
            at += MS;
            assert_eq!(recent.tick(at), Next::Sleep);
        }
        // A reading in between keeps it going for another round.
        assert_eq!(recent.read(), Some(at));
        for _ in 0..IDLE_TICKS {
            at += MS;
            assert_eq!(recent.tick(at), Next::Sleep);
        }
        at += MS;
        assert_eq!(recent.tick(at), Next::Park);
        assert!(recent.parked());
        // Parked: readers read the clock, and wake the ticker.
        assert_eq!(recent.read(), None);
        let before = Instant::now();
        let fell_back = recent.fall_back();
        assert!(fell_back >= before);
        assert!(!recent.parked(), "a reader asked the ticker to run");
        assert_eq!(recent.read(), None, "still no reading until it ticks");
        at += MS;
        assert_eq!(recent.tick(at), Next::Sleep);
        assert_eq!(recent.read(), Some(at));
    }

    #[test]
    fn a_late_mark_of_a_reading_never_strands_a_parked_ticker() {
        let origin = Instant::now();
        let recent = Recent::new(origin);
        let mut at = origin;
        let mut next = Next::Sleep;
        for _ in 0..IDLE_TICKS {
            at += MS;
            next = recent.tick(at);
        }
        assert_eq!(next, Next::Park);
        // A reader that loaded the last reading before the ticker parked
        // marks it only now: the parked state stays as it was, so the next
        // reader wakes the ticker.
        recent.mark_used(((at.duration_since(origin).as_nanos() as u64) << SHIFT) | LIVE);
        assert!(recent.parked());
        recent.fall_back();
        assert!(!recent.parked());
    }

    #[test]
    fn a_reader_that_marks_the_last_reading_used_keeps_the_ticker_running() {
        let origin = Instant::now();
        let recent = Recent::new(origin);
        let mut at = origin;
        for _ in 0..2 * IDLE_TICKS {
            at += MS;
            // Read after every tick: never idle.
            assert_eq!(recent.tick(at), Next::Sleep);
            assert_eq!(recent.read(), Some(at));
        }
    }

    #[test]
    fn readings_before_the_origin_or_centuries_later_saturate() {
        let origin = Instant::now() + Duration::from_secs(60);
        let recent = Recent::new(origin);
        recent.tick(Instant::now());
        assert_eq!(recent.read(), Some(origin));
    }

    #[test]
    fn the_process_wide_reading_is_never_ahead_of_the_clock_and_lags_it_little() {
        // Generous on purpose: this runs on loaded machines. The bound
        // checked for every reading is the one callers rely on (never
        // ahead); the lag is only checked to be far below a second on most
        // readings, which a running ticker always gives.
        let mut lagging = 0;
        for _ in 0..200 {
            for _ in 0..100 {
                let reading = recent();
                let now = Instant::now();
                assert!(reading <= now, "a recent reading is never ahead");
                if now.duration_since(reading) > Duration::from_millis(500) {
                    lagging += 1;
                }
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        assert!(lagging < 2_000, "{lagging} of 20000 readings lagged 500 ms");
    }
}
