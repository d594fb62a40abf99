//! Policies on recent readings of the clock: cheap where a lagging reading
//! cannot change a decision, precise where it could. A test clock gives
//! readings that lag a `ManualClock` by a set amount, or that move in
//! coarse steps, so every case is deterministic.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bulkhead_core::{
    Bulkhead, BulkheadConfig, CallError, CircuitBreaker, CircuitBreakerConfig, CircuitState,
    Classifier, Clock, ManualClock, Policies, PolicyContext, RateLimiter, RateLimiterConfig,
    Rejection, Sleep, SystemClock, Timeout, TimeoutConfig,
};

const MS: Duration = Duration::from_millis(1);

/// A `ManualClock` whose recent readings lag its time by `lag`, rounded
/// down to a multiple of `step` from its creation.
#[derive(Debug)]
struct LaggingClock {
    inner: ManualClock,
    origin: Instant,
    lag: Duration,
    step: Duration,
}

impl LaggingClock {
    fn new(lag: Duration, step: Duration) -> (Arc<LaggingClock>, ManualClock) {
        let inner = ManualClock::new();
        let clock = LaggingClock {
            origin: inner.now(),
            inner: inner.clone(),
            lag,
            step,
        };
        (Arc::new(clock), inner)
    }
}

impl Clock for LaggingClock {
    fn now(&self) -> Instant {
        self.inner.now()
    }

    fn recent(&self) -> Instant {
        let behind = self.now().checked_sub(self.lag).unwrap_or(self.origin);
        let since = behind.saturating_duration_since(self.origin);
        let steps = since.as_nanos() / self.step.as_nanos();
        let nanos = u64::try_from(steps * self.step.as_nanos()).unwrap();
        self.origin + Duration::from_nanos(nanos)
    }

    fn resolution(&self) -> Duration {
        self.lag + self.step
    }

    fn sleep_until(&self, deadline: Instant) -> Sleep {
        self.inner.sleep_until(deadline)
    }

    fn park_until(&self, deadline: Instant) {
        self.inner.park_until(deadline);
    }
}

fn context(clock: &Arc<LaggingClock>) -> PolicyContext {
    PolicyContext::new(Arc::clone(clock) as Arc<dyn Clock>)
}

fn poll<F: Future>(future: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn a_manual_clock_s_recent_reading_is_its_exact_time() {
    let clock = ManualClock::new();
    assert_eq!(clock.resolution(), Duration::ZERO);
    for _ in 0..3 {
        assert_eq!(clock.recent(), clock.now());
        clock.advance(Duration::from_nanos(1));
    }
}

#[test]
fn the_system_clock_s_recent_reading_is_never_ahead_and_shared_clocks_forward_it() {
    let shared: Arc<dyn Clock> = Arc::new(Arc::new(SystemClock));
    assert_eq!(shared.resolution(), SystemClock.resolution());
    assert_eq!(SystemClock.resolution(), Duration::from_millis(5));
    for _ in 0..1000 {
        let recent = shared.recent();
        assert!(recent <= shared.now());
    }
}

fn limiter(clock: &Arc<LaggingClock>, limit: u32) -> RateLimiter {
    let config = RateLimiterConfig::builder()
        .limit_for_period(limit)
        .refresh_period(100 * MS)
        .max_wait(Duration::ZERO)
        .build()
        .unwrap();
    RateLimiter::with_context("recent-limiter", config, context(clock))
}

#[test]
fn a_permit_due_in_a_new_period_is_granted_though_the_recent_reading_is_in_the_old_one() {
    let (clock, time) = LaggingClock::new(5 * MS, Duration::from_nanos(1));
    let limiter = limiter(&clock, 1);
    time.advance(50 * MS);
    assert!(limiter.try_acquire().is_ok());
    assert!(limiter.try_acquire().is_err(), "one per period");
    time.advance(50 * MS);
    // The recent reading says 95 ms, in the spent first period: the
    // refusal it would give is decided again on the precise time.
    assert!(clock.recent() < clock.origin + 100 * MS);
    assert!(limiter.try_acquire().is_ok());
    assert!(limiter.try_acquire().is_err());
}

#[test]
fn near_a_period_s_end_a_lagging_reading_does_not_grant_the_old_period_s_permits() {
    let (clock, time) = LaggingClock::new(5 * MS, Duration::from_nanos(1));
    let limiter = limiter(&clock, 2);
    time.advance(50 * MS);
    assert!(limiter.try_acquire().is_ok());
    // 103 ms: the reading (98 ms) is within the resolution of the first
    // period's end, so the second period is counted on the precise time,
    // and the first period's unused permit is gone.
    time.advance(53 * MS);
    assert!(limiter.try_acquire().is_ok());
    assert_eq!(limiter.available_permits(), 1);
    assert!(limiter.try_acquire().is_ok());
    assert!(limiter.try_acquire().is_err());
}

#[test]
fn a_reading_older_than_the_permits_word_never_moves_it_back() {
    // Readings lag by a whole period and more, beyond what the resolution
    // says (a starved clock thread): no permit is counted twice.
    let (clock, time) = LaggingClock::new(250 * MS, Duration::from_nanos(1));
    let config = RateLimiterConfig::builder()
        .limit_for_period(3)
        .refresh_period(Duration::from_secs(10))
        .max_wait(Duration::ZERO)
        .build()
        .unwrap();
    let lagging = RateLimiter::with_context("recent-lagging", config, context(&clock));
    time.advance(Duration::from_secs(10) + 300 * MS);
    // Now 10.3 s, second period; recent readings say 10.05 s.
    let mut granted = 0;
    for _ in 0..10 {
        granted += usize::from(lagging.try_acquire().is_ok());
    }
    assert_eq!(granted, 3);
    assert_eq!(lagging.available_permits(), 0);
}

fn timeout(clock: &Arc<LaggingClock>) -> Timeout {
    let config = TimeoutConfig::builder()
        .duration(Duration::from_secs(1))
        .build()
        .unwrap();
    Timeout::with_context("recent-timeout", config, context(clock))
}

#[test]
fn an_async_timeout_counted_from_a_lagging_reading_is_never_early() {
    for lag in [Duration::ZERO, MS, 2 * MS] {
        let (clock, time) = LaggingClock::new(lag, Duration::from_nanos(1));
        time.advance(Duration::from_secs(5));
        let policies =
            Policies::on_clock(Arc::clone(&clock) as Arc<dyn Clock>).with_timeout(timeout(&clock));
        let classify = Classifier::new();
        let mut call =
            pin!(policies.call_async(&classify, || { std::future::pending::<Result<(), ()>>() }));
        assert!(poll(call.as_mut()).is_pending());
        time.advance(Duration::from_secs(1) - Duration::from_nanos(1));
        assert!(poll(call.as_mut()).is_pending(), "lag {lag:?}: early");
        time.advance(Duration::from_nanos(1));
        assert!(
            matches!(
                poll(call.as_mut()),
                Poll::Ready(Err(CallError::Rejected(Rejection::Timeout(_))))
            ),
            "lag {lag:?}: the call is cut at its deadline"
        );
    }
}

#[test]
fn a_sync_wait_for_a_slot_counts_its_deadline_from_the_precise_time() {
    let (clock, time) = LaggingClock::new(500 * MS, Duration::from_nanos(1));
    time.advance(Duration::from_secs(5));
    let config = BulkheadConfig::builder()
        .max_concurrent(1)
        .max_wait(Duration::from_secs(3600))
        .build()
        .unwrap();
    let bulkhead = Bulkhead::with_context("recent-bulkhead", config, context(&clock));
    let policies = Policies::on_clock(Arc::clone(&clock) as Arc<dyn Clock>)
        .with_timeout(timeout(&clock))
        .with_bulkhead(bulkhead.clone());
    let held = bulkhead.try_enter().unwrap();
    std::thread::scope(|s| {
        let waiter = s.spawn(|| policies.call(&Classifier::new(), || Ok::<_, ()>(())));
        while time.sleepers() == 0 {
            std::thread::yield_now();
        }
        // Half a second before the deadline a lagging start would give.
        time.advance(Duration::from_millis(999));
        std::thread::sleep(20 * MS);
        assert!(!waiter.is_finished(), "cut short before its deadline");
        time.advance(MS);
        let result = waiter.join().unwrap();
        assert!(matches!(
            result,
            Err(CallError::Rejected(Rejection::Timeout(_)))
        ));
    });
    drop(held);
}

#[test]
fn a_short_slow_call_threshold_is_timed_on_precise_readings() {
    // Recent readings move in steps of 100 ms: a 50 ms call would measure
    // 0 ms on them. With a threshold of 10 ms (under 50 times the
    // resolution) calls are timed on the precise time, and it is slow.
    let (clock, time) = LaggingClock::new(Duration::ZERO, 100 * MS);
    let config = CircuitBreakerConfig::builder()
        .sliding_window_size(1)
        .minimum_calls(1)
        .slow_call_threshold(10 * MS)
        .slow_call_rate_threshold(100.0)
        .build()
        .unwrap();
    let breaker = CircuitBreaker::with_context("recent-breaker", config, context(&clock));
    let policies = Policies::on_clock(Arc::clone(&clock) as Arc<dyn Clock>)
        .with_circuit_breaker(breaker.clone());
    let result = policies.call(&Classifier::new(), || {
        time.advance(50 * MS);
        Ok::<_, ()>(())
    });
    assert_eq!(result, Ok(()));
    assert_eq!(breaker.state(), CircuitState::Open);
}

#[test]
fn a_long_slow_call_threshold_is_timed_on_recent_readings_to_within_their_resolution() {
    let (clock, time) = LaggingClock::new(Duration::ZERO, 100 * MS);
    let config = CircuitBreakerConfig::builder()
        .sliding_window_size(1)
        .minimum_calls(1)
        .slow_call_threshold(Duration::from_secs(5))
        .slow_call_rate_threshold(100.0)
        .build()
        .unwrap();
    let breaker = CircuitBreaker::with_context("recent-breaker-long", config, context(&clock));
    let policies = Policies::on_clock(Arc::clone(&clock) as Arc<dyn Clock>)
        .with_circuit_breaker(breaker.clone());
    let call = |took: Duration| {
        policies.call(&Classifier::new(), || {
            time.advance(took);
            Ok::<_, ()>(())
        })
    };
    assert_eq!(call(Duration::from_secs(4)), Ok(()));
    assert_eq!(breaker.state(), CircuitState::Closed);
    assert_eq!(call(Duration::from_secs(5) + 150 * MS), Ok(()));
    assert_eq!(
        breaker.state(),
        CircuitState::Open,
        "slow by more than a step"
    );
}
