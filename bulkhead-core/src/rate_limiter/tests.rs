//! Behaviour of the rate limiter, on a manual clock.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Barrier, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::Duration;

use super::*;
use crate::clock::{Clock, ManualClock};
use crate::events::EventBus;

const PERIOD: Duration = Duration::from_millis(100);

fn config(limit: u32, max_wait: Duration) -> RateLimiterConfig {
    RateLimiterConfig::builder()
        .limit_for_period(limit)
        .refresh_period(PERIOD)
        .max_wait(max_wait)
        .build()
        .unwrap()
}

fn limiter(limit: u32, max_wait: Duration) -> (RateLimiter, ManualClock) {
    let clock = ManualClock::new();
    let context = PolicyContext::new(Arc::new(clock.clone()));
    let limiter = RateLimiter::with_context("rate-limiter-test", config(limit, max_wait), context);
    (limiter, clock)
}

fn poll_noop<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
    Pin::new(future).poll(&mut Context::from_waker(Waker::noop()))
}

fn wait_for_sleepers(clock: &ManualClock, n: usize) {
    while clock.sleepers() < n {
        thread::yield_now();
    }
}

#[test]
fn policies_are_send_sync_and_cheap_to_clone() {
    fn bounds<T: Send + Sync + Clone + 'static>() {}
    bounds::<RateLimiter>();
    bounds::<RateLimiterConfig>();
    fn future_bounds<T: Send + Sync + Unpin>() {}
    future_bounds::<AcquirePermit<'_>>();
}

#[test]
fn each_period_brings_exactly_limit_for_period_permits() {
    let (limiter, clock) = limiter(3, Duration::ZERO);
    for _ in 0..4 {
        assert_eq!(limiter.available_permits(), 3);
        for _ in 0..3 {
            limiter.try_acquire().unwrap();
        }
        assert!(limiter.try_acquire().is_err());
        assert!(limiter.acquire().is_err());
        assert_eq!(limiter.available_permits(), 0);
        clock.advance(PERIOD);
    }
}

#[test]
fn permits_come_back_when_the_clock_crosses_into_the_next_period_not_before() {
    let (limiter, clock) = limiter(2, Duration::ZERO);
    clock.advance(Duration::from_millis(40)); // periods count from creation
    limiter.try_acquire().unwrap();
    limiter.try_acquire().unwrap();
    clock.advance(Duration::from_millis(59));
    assert!(limiter.try_acquire().is_err(), "still the first period");
    clock.advance(Duration::from_millis(1));
    assert_eq!(limiter.available_permits(), 2);
    limiter.try_acquire().unwrap();
}

#[test]
fn unused_permits_do_not_carry_over() {
    let (limiter, clock) = limiter(3, Duration::ZERO);
    limiter.try_acquire().unwrap();
    clock.advance(PERIOD * 5);
    assert_eq!(limiter.available_permits(), 3);
    for _ in 0..3 {
        limiter.try_acquire().unwrap();
    }
    assert!(limiter.try_acquire().is_err());
}

#[test]
fn max_wait_zero_rejects_at_once_without_reserving() {
    let (limiter, clock) = limiter(1, Duration::ZERO);
    limiter.try_acquire().unwrap();
    assert!(limiter.acquire().is_err());
    let mut future = limiter.acquire_async();
    assert!(matches!(poll_noop(&mut future), Poll::Ready(Err(_))));
    assert_eq!(limiter.available_permits(), 0);
    assert_eq!(clock.sleepers(), 0);
    clock.advance(PERIOD);
    assert_eq!(limiter.available_permits(), 1);
}

#[test]
fn a_sync_caller_within_max_wait_waits_for_the_next_period() {
    let (limiter, clock) = limiter(1, Duration::from_secs(1));
    limiter.try_acquire().unwrap();
    let waiter = {
        let limiter = limiter.clone();
        thread::spawn(move || limiter.acquire())
    };
    wait_for_sleepers(&clock, 1);
    assert_eq!(limiter.waiting_calls(), 1);
    assert_eq!(
        limiter.available_permits(),
        -1,
        "reserved in the next period"
    );
    assert!(
        limiter.try_acquire().is_err(),
        "the reserved permit is taken"
    );
    clock.advance(Duration::from_millis(99));
    assert!(!waiter.is_finished());
    clock.advance(Duration::from_millis(1));
    assert_eq!(waiter.join().unwrap(), Ok(()));
    assert_eq!(limiter.waiting_calls(), 0);
    assert_eq!(limiter.available_permits(), 0);
}

#[test]
fn an_async_caller_within_max_wait_completes_once_its_period_begins() {
    let (limiter, clock) = limiter(1, Duration::from_secs(1));
    limiter.try_acquire().unwrap();
    let mut future = limiter.acquire_async();
    assert!(poll_noop(&mut future).is_pending());
    assert_eq!(limiter.waiting_calls(), 1);
    assert_eq!(limiter.available_permits(), -1);
    clock.advance(Duration::from_millis(99));
    assert!(poll_noop(&mut future).is_pending());
    clock.advance(Duration::from_millis(1));
    assert_eq!(poll_noop(&mut future), Poll::Ready(Ok(())));
    assert_eq!(limiter.waiting_calls(), 0);
    assert!(
        poll_noop(&mut future).is_pending(),
        "fused after completion"
    );
}

#[tokio::test]
async fn an_async_waiter_is_woken_by_the_clock() {
    let (limiter, clock) = limiter(1, Duration::from_secs(1));
    limiter.try_acquire().unwrap();
    let task = tokio::spawn({
        let limiter = limiter.clone();
        async move { limiter.acquire_async().await }
    });
    while clock.sleepers() == 0 {
        tokio::task::yield_now().await;
    }
    clock.advance(PERIOD);
    assert_eq!(task.await.unwrap(), Ok(()));
}

#[test]
fn a_caller_beyond_max_wait_is_rejected_and_reserves_nothing() {
    let (limiter, clock) = limiter(2, Duration::from_millis(250));
    clock.advance(Duration::from_millis(30));
    limiter.try_acquire().unwrap();
    limiter.try_acquire().unwrap();
    // Periods 1 and 2 start within 250ms (in 70 and 170ms); period 3 does not.
    let mut waiters: Vec<_> = (0..4).map(|_| limiter.acquire_async()).collect();
    for waiter in &mut waiters {
        assert!(poll_noop(waiter).is_pending());
    }
    assert_eq!(limiter.available_permits(), -4);
    assert!(
        limiter.acquire().is_err(),
        "rejected at once, not after a wait"
    );
    let mut late = limiter.acquire_async();
    assert!(matches!(poll_noop(&mut late), Poll::Ready(Err(_))));
    assert_eq!(limiter.available_permits(), -4, "nothing reserved");
    clock.advance(Duration::from_millis(70));
    let ready = waiters.iter_mut().map(poll_noop).filter(Poll::is_ready);
    assert_eq!(ready.count(), 2, "period 1 admits its two");
}

#[test]
fn a_wait_of_exactly_max_wait_is_allowed() {
    let (limiter, clock) = limiter(1, PERIOD);
    limiter.try_acquire().unwrap();
    let mut future = limiter.acquire_async();
    assert!(poll_noop(&mut future).is_pending());
    clock.advance(PERIOD);
    assert_eq!(poll_noop(&mut future), Poll::Ready(Ok(())));
}

#[test]
fn a_cancelled_waiter_keeps_its_reservation() {
    let (limiter, clock) = limiter(2, Duration::from_secs(1));
    limiter.try_acquire().unwrap();
    limiter.try_acquire().unwrap();
    let mut future = limiter.acquire_async();
    assert!(poll_noop(&mut future).is_pending());
    drop(future);
    assert_eq!(limiter.waiting_calls(), 0);
    assert_eq!(clock.sleepers(), 0);
    assert_eq!(limiter.available_permits(), -1);
    clock.advance(PERIOD);
    assert_eq!(limiter.available_permits(), 1, "the next period lost one");
    // Dropped before its first poll, a future reserves nothing.
    drop(limiter.acquire_async());
    assert_eq!(limiter.available_permits(), 1);
}

#[test]
fn rejections_publish_an_event_and_admissions_nothing() {
    let clock = ManualClock::new();
    let bus = EventBus::default();
    let mut events = bus.subscribe();
    let context = PolicyContext::new(Arc::new(clock.clone())).with_events(bus);
    let limiter = RateLimiter::with_context("rate-limiter-events", config(1, PERIOD), context);
    limiter.try_acquire().unwrap();
    let mut waiter = limiter.acquire_async();
    assert!(poll_noop(&mut waiter).is_pending());
    assert_eq!(events.try_recv(), None);
    assert!(limiter.acquire().is_err());
    let event = events.try_recv().expect("a rejection event");
    assert_eq!(event.instance(), "rate-limiter-events");
    assert_eq!(event.at(), clock.now());
    let Event::RateLimiter(event) = event else {
        panic!("not a rate limiter event: {event:?}");
    };
    assert_eq!(
        event.kind,
        RateLimiterEventKind::Rejected {
            limit_for_period: 1
        }
    );
    assert_eq!(events.try_recv(), None);
}

#[test]
fn concurrent_callers_get_exactly_limit_for_period_permits_per_period() {
    const LIMIT: usize = 7;
    const THREADS: usize = 8;
    let (limiter, clock) = limiter(LIMIT as u32, Duration::ZERO);
    for _ in 0..20 {
        let granted = AtomicUsize::new(0);
        let start = Barrier::new(THREADS);
        thread::scope(|scope| {
            for _ in 0..THREADS {
                scope.spawn(|| {
                    start.wait();
                    for _ in 0..10 {
                        if limiter.try_acquire().is_ok() {
                            granted.fetch_add(1, SeqCst);
                        }
                    }
                });
            }
        });
        assert_eq!(granted.load(SeqCst), LIMIT);
        clock.advance(PERIOD);
    }
}

#[test]
fn waiting_threads_never_get_more_than_limit_for_period_per_period() {
    const LIMIT: u32 = 3;
    const THREADS: usize = 6;
    const CALLS: usize = 8;
    let (limiter, clock) = limiter(LIMIT, Duration::from_secs(10));
    let finished = AtomicUsize::new(0);
    // The period each permit was granted in, read when `acquire` returns.
    let granted = Mutex::new(Vec::new());
    thread::scope(|scope| {
        for _ in 0..THREADS {
            scope.spawn(|| {
                let _finished = Finished(&finished);
                for _ in 0..CALLS {
                    limiter.acquire().unwrap();
                    let elapsed = clock.elapsed().as_millis() / PERIOD.as_millis();
                    granted.lock().unwrap().push(elapsed);
                }
            });
        }
        // Move on to the next period only once every thread still calling
        // waits for a later one: each grant is then recorded in its period.
        while finished.load(SeqCst) < THREADS {
            let running = THREADS - finished.load(SeqCst);
            if clock.sleepers() == running {
                clock.advance(PERIOD);
            }
            thread::yield_now();
        }
    });
    let granted = granted.into_inner().unwrap();
    assert_eq!(granted.len(), THREADS * CALLS);
    // Every period is used up while callers wait, so each has exactly LIMIT.
    let periods = (THREADS * CALLS / LIMIT as usize) as u128;
    for period in 0..periods {
        let n = granted.iter().filter(|&&p| p == period).count();
        assert_eq!(n, LIMIT as usize, "permits in period {period}");
    }
}

/// Counts a thread as finished even if it panics, so that nobody waits for it.
struct Finished<'a>(&'a AtomicUsize);

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

#[test]
fn counting_goes_on_across_the_point_where_serials_wrap() {
    // u32::MAX permits per nanosecond: the serial numbers wrap past 2^64
    // after 2^32 + 1 periods, about 4.3 seconds.
    let clock = ManualClock::new();
    let context = PolicyContext::new(Arc::new(clock.clone()));
    let config = RateLimiterConfig::builder()
        .limit_for_period(u32::MAX)
        .refresh_period(Duration::from_nanos(1))
        .build()
        .unwrap();
    let limiter = RateLimiter::with_context("rate-limiter-wrap", config, context);
    let full = i64::from(u32::MAX);
    // The first serial of period 2^32 + 1 is 2^64 - 1. A limiter that lay
    // idle for nearly 2^64 serials could be misread (see state.rs); this one
    // is used half-way there.
    clock.advance(Duration::from_nanos(1 << 31));
    limiter.try_acquire().unwrap();
    clock.advance(Duration::from_nanos((1 << 31) - 2));
    for step in 0..5 {
        for _ in 0..5 {
            limiter.try_acquire().unwrap();
        }
        assert_eq!(limiter.available_permits(), full - 5, "step {step}");
        clock.advance(Duration::from_nanos(1));
    }
    // Idle for a century: a full period, not more.
    clock.advance(ManualClock::MAX_ELAPSED);
    assert_eq!(limiter.available_permits(), full);
}

#[test]
fn debug_shows_the_state() {
    let (limiter, _clock) = limiter(2, Duration::ZERO);
    limiter.try_acquire().unwrap();
    let debug = format!("{limiter:?}");
    assert!(debug.contains("instance: \"rate-limiter-test\""), "{debug}");
    assert!(debug.contains("available_permits: 1"), "{debug}");
    assert!(debug.contains("waiting_calls: 0"), "{debug}");
    let future = limiter.acquire_async();
    assert!(format!("{future:?}").contains("state: \"start\""));
    assert_eq!(limiter.config(), config(2, Duration::ZERO));
    assert_eq!(limiter.instance(), "rate-limiter-test");
}

// Issue 33: short periods on the system clock count on the time-stamp
// counter where there is an invariant one.

fn system(limit: u32, period: Duration, max_wait: Duration) -> RateLimiter {
    let config = RateLimiterConfig::builder()
        .limit_for_period(limit)
        .refresh_period(period)
        .max_wait(max_wait)
        .build()
        .unwrap();
    RateLimiter::new("rate-limiter-system", config)
}

#[test]
fn only_short_periods_on_the_system_clock_count_on_the_counter() {
    let counter = crate::clock::TscTime::get().is_some();
    let short = system(
        50,
        RateLimiterConfig::DEFAULT_REFRESH_PERIOD,
        Duration::ZERO,
    );
    assert_eq!(short.shared.tsc.is_some(), counter, "the default period");
    assert_eq!(short.shared.margin, if counter { 0 } else { 5_000_000 });
    let long = system(50, Duration::from_secs(1), Duration::ZERO);
    assert!(long.shared.tsc.is_none(), "1 s counts on recent readings");
    // The bound: four resolutions of the system clock (20 ms).
    let ten = system(50, Duration::from_millis(10), Duration::ZERO);
    assert_eq!(ten.shared.tsc.is_some(), counter, "10 ms");
    let below = system(50, Duration::from_millis(19), Duration::ZERO);
    assert_eq!(below.shared.tsc.is_some(), counter, "19 ms");
    let at = system(50, Duration::from_millis(20), Duration::ZERO);
    assert!(at.shared.tsc.is_none(), "20 ms counts on recent readings");
    // A manual clock is exact and drives time itself: never the counter.
    let clock = ManualClock::new();
    let context = PolicyContext::new(Arc::new(clock));
    let config = RateLimiterConfig::builder().build().unwrap();
    let manual = RateLimiter::with_context("rate-limiter-manual", config, context);
    assert!(manual.shared.tsc.is_none());
}

/// Permits granted by threads hammering a limiter at the default period,
/// counted by the callers: never more than `limit_for_period` for each
/// period the hammering overlaps (measured from before the limiter was
/// built to after the last call, so that the bound cannot be too low).
#[test]
fn many_threads_at_the_default_period_get_at_most_the_limit_per_period() {
    const THREADS: usize = 8;
    const LIMIT: u32 = 2;
    let period = RateLimiterConfig::DEFAULT_REFRESH_PERIOD;
    let start = std::time::Instant::now();
    let limiter = system(LIMIT, period, Duration::ZERO);
    let barrier = Barrier::new(THREADS);
    let granted = AtomicUsize::new(0);
    let refused = AtomicUsize::new(0);
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                barrier.wait();
                let (mut mine, mut not) = (0, 0);
                for _ in 0..200_000 {
                    match limiter.try_acquire() {
                        Ok(()) => mine += 1,
                        Err(_) => not += 1,
                    }
                }
                granted.fetch_add(mine, SeqCst);
                refused.fetch_add(not, SeqCst);
            });
        }
    });
    let took = start.elapsed();
    let granted = granted.load(SeqCst) as f64;
    // The periods the run overlaps, with room for the counter's
    // calibration (a few parts per million; 1 % allowed).
    let periods = took.as_nanos() as f64 / period.as_nanos() as f64 * 1.01 + 2.0;
    assert!(
        granted <= periods * f64::from(LIMIT),
        "{granted} permits in {took:?}: more than {LIMIT} per {period:?}"
    );
    assert!(granted >= 1.0, "some permit was granted");
    assert!(refused.load(SeqCst) > 0, "1.6 M calls exceed 2 per 500 ns");
}

/// Threads hammering a limiter of a 15 ms period, which counts on the
/// time-stamp counter with its batches where there is one (periods under
/// 20 ms do; under 10 ms did), counted against `Instant`: each grant in
/// the period (from the limiter's origin) that both readings around its
/// call fall in, at least `GUARD` from either end of it, more than the
/// counter's periods can be off `Instant`'s over the run (the two origins'
/// readings, and the calibration's error, NTP's slew of up to 500 ppm
/// included); a call that straddles such a bound is left out, and a
/// refused thread idles until the next period is well under way, so that
/// each period's grants are all counted. No period counts more than
/// `limit_for_period`, which the threads use up early in each period (a
/// limit that is not a multiple of the runs of 8: a run that overran its
/// period would show).
#[test]
fn many_threads_at_a_15_ms_period_get_at_most_the_limit_per_period() {
    use std::collections::HashMap;
    use std::time::Instant;
    const THREADS: usize = 8;
    const LIMIT: u32 = 5_003;
    const GUARD: u128 = 100_000;
    let period = Duration::from_millis(15);
    let run = 8 * period;
    let limiter = system(LIMIT, period, Duration::ZERO);
    let origin = limiter.shared.origin;
    let nanos = period.as_nanos();
    // The period both ends fall in, away from its bounds.
    let period_of = |before: Instant, after: Instant| {
        let (from, to) = (
            before.duration_since(origin).as_nanos(),
            after.duration_since(origin).as_nanos(),
        );
        (from / nanos == to / nanos && from % nanos >= GUARD && to % nanos <= nanos - GUARD)
            .then_some(from / nanos)
    };
    let barrier = Barrier::new(THREADS);
    let counts = Mutex::new(HashMap::<u128, u64>::new());
    let refused = AtomicUsize::new(0);
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                let mut mine = HashMap::<u128, u64>::new();
                let mut not = 0;
                barrier.wait();
                loop {
                    let before = Instant::now();
                    let granted = limiter.try_acquire().is_ok();
                    let after = Instant::now();
                    let since = after.duration_since(origin);
                    if since > run {
                        break;
                    }
                    if granted {
                        if let Some(at) = period_of(before, after) {
                            *mine.entry(at).or_default() += 1;
                        }
                    } else {
                        // Nothing left: idle until the next period is
                        // `2 * GUARD` in, so that no grant is left out
                        // for being near its start.
                        not += 1;
                        let next = (since.as_nanos() / nanos + 1) * nanos + 2 * GUARD;
                        let next = Duration::from_nanos(u64::try_from(next).unwrap());
                        thread::sleep(next.saturating_sub(since));
                    }
                }
                refused.fetch_add(not, SeqCst);
                let mut counts = counts.lock().unwrap();
                for (at, n) in mine {
                    *counts.entry(at).or_default() += n;
                }
            });
        }
    });
    let counts = counts.into_inner().unwrap();
    let (busiest, most) = counts.iter().max_by_key(|(_, n)| **n).unwrap();
    assert!(
        *most <= u64::from(LIMIT),
        "{most} permits in period {busiest} of {period:?}, limit {LIMIT}: {counts:?}"
    );
    assert!(refused.load(SeqCst) > 0, "the limit was reached");
}

#[test]
fn a_reserved_permit_of_a_short_period_is_not_used_before_it_starts() {
    let period = Duration::from_millis(8);
    let start = std::time::Instant::now();
    let limiter = system(1, period, Duration::from_secs(3600));
    limiter.acquire().unwrap();
    // The second permit is the next period's: at least 30 ms after the
    // limiter was built (less the counter's calibration error).
    limiter.acquire().unwrap();
    assert!(
        start.elapsed() >= period.mul_f64(0.99),
        "{:?}",
        start.elapsed()
    );
    limiter.acquire().unwrap();
    assert!(start.elapsed() >= (2 * period).mul_f64(0.99));
}

#[test]
fn a_short_period_refuses_a_wait_beyond_max_wait_or_the_deadline() {
    let limiter = system(1, Duration::from_millis(8), Duration::from_millis(1));
    limiter.try_acquire().unwrap();
    // The next permit is about 8 ms away: beyond `max_wait`.
    assert!(limiter.acquire().is_err());
    assert_eq!(limiter.available_permits(), 0, "nothing reserved");
    let limiter = system(1, Duration::from_millis(8), Duration::from_secs(3600));
    limiter.try_acquire().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_millis(1);
    let refused = limiter.acquire_on(0, Some(deadline)).unwrap_err();
    assert!(
        matches!(refused, Rejection::DeadlineExceeded(_)),
        "{refused:?}"
    );
    assert_eq!(limiter.available_permits(), 0, "nothing reserved");
}

// Issue 33, item 3: permits spent from per-thread batches (`batch.rs`).

/// Permits left in the period of `elapsed` (in the limiter's units).
fn left_at(limiter: &RateLimiter, elapsed: u64) -> i64 {
    limiter.shared.permits.available(|| elapsed)
}

#[test]
fn a_thread_claims_as_many_permits_as_it_has_just_used() {
    // The batches are driven here with explicit readings (ManualClock
    // limiters do not batch on their own: `take_now`).
    let (limiter, _clock) = limiter(50, Duration::ZERO);
    let shared = &*limiter.shared;
    let period = shared.permits.period();
    let at = 7 * period + 10;
    // Within a cycle: 1, then 1 (it used 1), 2, 4, 8 at a time.
    let mut expected = 50;
    for claim in [1, 1, 2, 4, 8, 8] {
        assert!(shared.take_batched(at));
        expected -= claim;
        assert_eq!(left_at(&limiter, at), expected, "claimed {claim}");
        // The rest of the claim is spent with no change to the shared word.
        for _ in 1..claim {
            assert!(shared.take_batched(at + 1));
            assert_eq!(left_at(&limiter, at), expected);
        }
    }
    // 50 - 24 = 26 left: a claim takes at most a quarter of them, and the
    // last 7 one by one.
    for claim in [6, 5, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1] {
        assert!(shared.take_batched(at));
        expected -= claim;
        assert_eq!(left_at(&limiter, at), expected, "claimed {claim}");
        for _ in 1..claim {
            assert!(shared.take_batched(at));
        }
    }
    assert_eq!(expected, 0);
    assert!(!shared.take_batched(at), "50 per cycle, no more");
    // The next cycle: 8 at once, the rate of the cycle before.
    let next = 8 * period;
    assert!(shared.take_batched(next));
    assert_eq!(left_at(&limiter, next), 42);
}

#[test]
fn a_batch_is_spent_only_in_its_own_cycle() {
    let (limiter, _clock) = limiter(64, Duration::ZERO);
    let shared = &*limiter.shared;
    let period = shared.permits.period();
    for _ in 0..3 {
        // Claims 1, 1, then 2: one left in the batch.
        assert!(shared.take_batched(period - 1));
    }
    assert_eq!(left_at(&limiter, 0), 60, "one of them still in the batch");
    // The next cycle's reading does not spend it: it lapses.
    assert!(shared.take_batched(period));
    assert_eq!(left_at(&limiter, period), 64 - 4, "a claim of 4");
    // A reading in an earlier cycle (a counter behind another) neither
    // spends the batch of a later one nor takes a permit: the caller
    // decides on a fresh reading (`reserve_fresh`).
    assert!(!shared.take_batched(period - 1));
    assert_eq!(left_at(&limiter, period), 60);
    // The batch is intact: 3 more of the claim of 4, then a claim.
    for _ in 0..3 {
        assert!(shared.take_batched(2 * period - 1));
    }
    assert_eq!(left_at(&limiter, period), 60);
    assert!(shared.take_batched(2 * period - 1));
    assert_eq!(left_at(&limiter, period), 56, "4 more: as many as it used");
    // A cycle two periods later is not the next one: one permit.
    assert!(shared.take_batched(3 * period));
    assert_eq!(left_at(&limiter, 3 * period), 63);
}

#[test]
fn limiters_do_not_share_batches() {
    let (one, _clock) = limiter(64, Duration::ZERO);
    let (two, _clock2) = limiter(64, Duration::ZERO);
    assert_ne!(one.shared.id, two.shared.id);
    let at = 5;
    for _ in 0..3 {
        assert!(one.shared.take_batched(at)); // 1, 1, then a claim of 2
    }
    assert_eq!(left_at(&one, at), 60);
    // The other limiter at the same reading claims its own permit, and
    // takes the thread's batch over.
    assert!(two.shared.take_batched(at));
    assert_eq!(left_at(&two, at), 63);
    assert!(one.shared.take_batched(at));
    assert_eq!(left_at(&one, at), 59, "one's batch was dropped");
    // A new limiter never gets an old one's identity.
    let old = one.shared.id;
    drop(one);
    let (three, _clock3) = limiter(64, Duration::ZERO);
    assert_ne!(three.shared.id, old);
    assert!(three.shared.take_batched(at));
    assert_eq!(left_at(&three, at), 63);
}

#[test]
fn small_limits_are_never_claimed_in_runs() {
    for limit in 1..8 {
        let (limiter, _clock) = limiter(limit, Duration::ZERO);
        let shared = &*limiter.shared;
        for taken in 1..=limit {
            assert!(shared.take_batched(3));
            assert_eq!(left_at(&limiter, 3), i64::from(limit - taken));
        }
        assert!(!shared.take_batched(3));
    }
}

#[test]
fn a_manual_clock_limiter_takes_each_permit_from_the_shared_word() {
    let (limiter, _clock) = limiter(64, Duration::ZERO);
    for left in (0..64).rev() {
        limiter.try_acquire().unwrap();
        assert_eq!(limiter.available_permits(), left);
    }
    assert!(limiter.try_acquire().is_err());
}

/// [`Shared::reserve_on`] with no wait, on the counter, that also says on
/// which reading (in ticks since the origin) a permit was granted: the
/// period a grant counts in, for an independent count.
fn try_acquire_reading(limiter: &RateLimiter, tsc: TscTime) -> Option<u64> {
    let shared = &*limiter.shared;
    let read = || tsc.ticks().saturating_sub(shared.tsc_origin);
    let elapsed = read();
    if shared.take_batched(elapsed) {
        return Some(elapsed);
    }
    let mut last = 0;
    match shared.permits.reserve_before(0, u64::MAX, || {
        last = read();
        last
    }) {
        Reserved::Now => Some(last),
        _ => None,
    }
}

/// Threads hammering limiters on the counter, each grant counted in the
/// period of the reading it was granted on: no period ever gets more than
/// `limit_for_period`, batches or not.
#[test]
fn batches_never_grant_more_than_the_limit_in_a_period() {
    let Some(tsc) = TscTime::get() else {
        return; // No invariant counter: no batches.
    };
    const THREADS: usize = 4;
    for (limit, period, calls) in [
        (50, Duration::from_nanos(500), 200_000),
        (16, Duration::from_nanos(500), 200_000),
        (64, Duration::from_micros(4), 200_000),
        (400, Duration::from_micros(20), 200_000),
    ] {
        let limiter = system(limit, period, Duration::ZERO);
        assert!(limiter.shared.tsc.is_some());
        let ticks = limiter.shared.permits.period();
        let barrier = Barrier::new(THREADS);
        let counts = Mutex::new(std::collections::HashMap::<u64, u64>::new());
        let granted = AtomicUsize::new(0);
        let refused = AtomicUsize::new(0);
        thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    let mut mine = std::collections::HashMap::<u64, u64>::new();
                    let mut not = 0;
                    barrier.wait();
                    for _ in 0..calls {
                        match try_acquire_reading(&limiter, tsc) {
                            Some(at) => *mine.entry(at / ticks).or_default() += 1,
                            None => not += 1,
                        }
                    }
                    granted.fetch_add(mine.values().sum::<u64>() as usize, SeqCst);
                    refused.fetch_add(not, SeqCst);
                    let mut counts = counts.lock().unwrap();
                    for (cycle, n) in mine {
                        *counts.entry(cycle).or_default() += n;
                    }
                });
            }
        });
        let counts = counts.into_inner().unwrap();
        let (busiest, most) = counts.iter().max_by_key(|(_, n)| **n).unwrap();
        assert!(
            *most <= u64::from(limit),
            "{most} permits in period {busiest} of {period:?}, limit {limit}"
        );
        assert_eq!(
            counts.values().sum::<u64>() as usize,
            granted.load(SeqCst),
            "every grant counted once"
        );
        assert_eq!(granted.load(SeqCst) + refused.load(SeqCst), THREADS * calls);
    }
}

/// The same through `try_acquire`, counted per period of the run's length
/// (as for the limit of 2 above) at a limit that batches.
#[test]
fn many_threads_at_the_default_limit_and_period_get_at_most_the_limit_per_period() {
    const THREADS: usize = 4;
    const LIMIT: u32 = 50;
    let period = RateLimiterConfig::DEFAULT_REFRESH_PERIOD;
    let start = std::time::Instant::now();
    let limiter = system(LIMIT, period, Duration::ZERO);
    let barrier = Barrier::new(THREADS);
    let granted = AtomicUsize::new(0);
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                barrier.wait();
                let mine = (0..500_000)
                    .filter(|_| limiter.try_acquire().is_ok())
                    .count();
                granted.fetch_add(mine, SeqCst);
            });
        }
    });
    let took = start.elapsed();
    let granted = granted.load(SeqCst) as f64;
    let periods = took.as_nanos() as f64 / period.as_nanos() as f64 * 1.01 + 2.0;
    assert!(
        granted <= periods * f64::from(LIMIT),
        "{granted} permits in {took:?}: more than {LIMIT} per {period:?}"
    );
    assert!(granted >= 1.0, "some permit was granted");
}
