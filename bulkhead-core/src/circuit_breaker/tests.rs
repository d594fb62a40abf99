//! Behaviour of the circuit breaker, on a [`ManualClock`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::machine::Kind;
use super::*;
use crate::clock::ManualClock;
use crate::events::{CircuitBreakerEventKind, Event, EventBus, EventStream};
use crate::rejection::RejectionKind;

use CircuitState::{Closed, Disabled, ForcedOpen, HalfOpen, Open};

const WAIT: Duration = Duration::from_secs(30);

struct Fixture {
    breaker: CircuitBreaker,
    clock: ManualClock,
    events: EventStream,
}

fn fixture(builder: CircuitBreakerConfigBuilder) -> Fixture {
    let clock = ManualClock::new();
    let bus = EventBus::new(EventBus::MAX_CAPACITY);
    let events = bus.subscribe();
    let context = PolicyContext::new(Arc::new(clock.clone())).with_events(bus);
    let config = builder.wait_in_open(WAIT).build().unwrap();
    Fixture {
        breaker: CircuitBreaker::with_context("breaker-test", config, context),
        clock,
        events,
    }
}

/// A count window of `size` calls opening at 50% once `minimum` calls are in.
fn counting(size: u32, minimum: u32) -> CircuitBreakerConfigBuilder {
    CircuitBreakerConfig::builder()
        .sliding_window_size(size)
        .minimum_calls(minimum)
}

/// Records one call per character: `.` success, `F` failure, `I` ignored,
/// `S` slow success, `X` slow failure (slow: 2 s, fast: 1 ms). Every call
/// must be admitted.
fn calls(breaker: &CircuitBreaker, outcomes: &str) {
    for c in outcomes.chars() {
        let permit = breaker
            .try_acquire()
            .unwrap_or_else(|e| panic!("{e} before {c:?} of {outcomes:?}"));
        let (outcome, slow) = match c {
            '.' => (BreakerOutcome::Success, false),
            'F' => (BreakerOutcome::Failure, false),
            'I' => (BreakerOutcome::Ignored, false),
            'S' => (BreakerOutcome::Success, true),
            'X' => (BreakerOutcome::Failure, true),
            _ => panic!("unknown outcome {c:?}"),
        };
        let duration = if slow {
            Duration::from_secs(2)
        } else {
            Duration::from_millis(1)
        };
        permit.record(outcome, Some(duration));
    }
}

fn transitions(events: &mut EventStream) -> Vec<(CircuitState, CircuitState)> {
    kinds(events)
        .into_iter()
        .filter_map(|kind| match kind {
            CircuitBreakerEventKind::StateTransition { from, to } => Some((from, to)),
            _ => None,
        })
        .collect()
}

fn kinds(events: &mut EventStream) -> Vec<CircuitBreakerEventKind> {
    events
        .drain()
        .map(|event| match event {
            Event::CircuitBreaker(event) => event.kind,
            other => panic!("not a circuit breaker event: {other:?}"),
        })
        .collect()
}

/// Opens `breaker` (a count window of 4, minimum 4) with four failures.
fn trip(breaker: &CircuitBreaker) {
    calls(breaker, "FFFF");
    assert_eq!(breaker.state(), Open);
}

#[test]
fn policies_are_send_sync_and_cheap_to_clone() {
    fn bounds<T: Send + Sync + Clone + 'static>() {}
    bounds::<CircuitBreaker>();
    bounds::<CircuitBreakerConfig>();
    fn send_sync<T: Send + Sync>() {}
    send_sync::<BreakerPermit<'_>>();
    send_sync::<OwnedBreakerPermit>();
    send_sync::<CircuitBreakerMetrics>();
}

#[test]
fn a_new_breaker_is_closed_and_counts_nothing() {
    let Fixture { breaker, .. } = fixture(CircuitBreakerConfig::builder());
    assert_eq!(breaker.state(), Closed);
    assert_eq!(breaker.instance(), "breaker-test");
    assert_eq!(breaker.config().wait_in_open(), WAIT);
    let metrics = breaker.metrics();
    assert_eq!(metrics.failure_rate, None);
    assert_eq!(metrics.buffered_calls, 0);
    assert_eq!(metrics.not_permitted_calls, 0);
    assert!(format!("{breaker:?}").contains("breaker-test"));
}

#[test]
fn a_count_window_opens_at_the_threshold_once_minimum_calls_are_in_and_not_before() {
    let Fixture {
        breaker,
        mut events,
        ..
    } = fixture(counting(10, 5));
    calls(&breaker, "FFFF");
    assert_eq!(breaker.state(), Closed, "4 calls: below minimum_calls");
    assert_eq!(breaker.metrics().failure_rate, None);
    // The fifth call, a success, brings the window to its minimum at 80%.
    calls(&breaker, ".");
    assert_eq!(breaker.state(), Open);
    assert_eq!(transitions(&mut events), [(Closed, Open)]);
}

#[test]
fn the_failure_rate_is_computed_over_exactly_the_last_n_calls() {
    let Fixture { breaker, .. } = fixture(counting(4, 4));
    calls(&breaker, "F...");
    assert_eq!(breaker.metrics().failure_rate, Some(25.0));
    // F . . . F: the first failure leaves the window as the second enters.
    calls(&breaker, "F");
    assert_eq!(breaker.metrics().failure_rate, Some(25.0));
    assert_eq!(breaker.metrics().buffered_calls, 4);
    assert_eq!(breaker.state(), Closed);
    calls(&breaker, ".");
    assert_eq!(breaker.metrics().failure_rate, Some(25.0));
    calls(&breaker, "F");
    // . . F . F -> . F . F: 50%.
    assert_eq!(breaker.state(), Open);
    let metrics = breaker.metrics();
    assert_eq!(metrics.failure_rate, Some(50.0));
    assert_eq!(metrics.failed_calls, 2);
}

#[test]
fn a_rate_just_below_the_threshold_keeps_the_breaker_closed() {
    let Fixture { breaker, .. } = fixture(counting(10, 10).failure_rate_threshold(50.0));
    calls(&breaker, "F.F.F.F...");
    assert_eq!(breaker.metrics().failure_rate, Some(40.0));
    assert_eq!(breaker.state(), Closed);
}

#[test]
fn a_count_window_smaller_than_minimum_calls_opens_once_full() {
    let Fixture { breaker, .. } = fixture(counting(3, 100));
    calls(&breaker, "FF");
    assert_eq!(breaker.state(), Closed);
    calls(&breaker, "F");
    assert_eq!(breaker.state(), Open);
}

#[test]
fn ignored_calls_count_neither_way() {
    let Fixture { breaker, .. } = fixture(counting(4, 2));
    calls(&breaker, "IIII.I");
    let metrics = breaker.metrics();
    assert_eq!(metrics.buffered_calls, 1);
    assert_eq!(metrics.failure_rate, None);
    calls(&breaker, "F");
    assert_eq!(breaker.state(), Open, "1 failure of 2 recorded calls");
}

#[test]
fn a_time_window_counts_the_last_seconds_on_the_clock() {
    let Fixture { breaker, clock, .. } = fixture(
        CircuitBreakerConfig::builder()
            .sliding_window(SlidingWindow::Time)
            .sliding_window_size(3)
            .minimum_calls(3),
    );
    calls(&breaker, "F..");
    assert_eq!(breaker.metrics().failure_rate, Some(100.0 / 3.0));
    clock.advance(Duration::from_secs(1));
    calls(&breaker, ".");
    assert_eq!(breaker.metrics().buffered_calls, 4);
    clock.advance(Duration::from_secs(2));
    // The first second left the window: one call remains.
    let metrics = breaker.metrics();
    assert_eq!(metrics.buffered_calls, 1);
    assert_eq!(metrics.failed_calls, 0);
    assert_eq!(metrics.failure_rate, None, "below minimum_calls");
    clock.advance(Duration::from_secs(1));
    assert_eq!(breaker.metrics().buffered_calls, 0);
    assert_eq!(breaker.state(), Closed);
}

#[test]
fn a_time_window_opens_when_old_successes_expire() {
    let Fixture { breaker, clock, .. } = fixture(
        CircuitBreakerConfig::builder()
            .sliding_window(SlidingWindow::Time)
            .sliding_window_size(2)
            .minimum_calls(3)
            .failure_rate_threshold(60.0),
    );
    calls(&breaker, "..");
    clock.advance(Duration::from_secs(1));
    calls(&breaker, "FF");
    assert_eq!(breaker.state(), Closed, "2 of 4: 50%");
    clock.advance(Duration::from_secs(1));
    // The successes expired: F F and this success, 67%.
    calls(&breaker, ".");
    assert_eq!(breaker.state(), Open);
}

#[test]
fn a_time_window_opens_when_successes_bring_it_to_the_minimum() {
    let Fixture { breaker, .. } = fixture(
        CircuitBreakerConfig::builder()
            .sliding_window(SlidingWindow::Time)
            .sliding_window_size(10)
            .minimum_calls(4),
    );
    calls(&breaker, "FFF");
    assert_eq!(breaker.state(), Closed);
    calls(&breaker, ".");
    assert_eq!(breaker.state(), Open, "3 of 4");
}

#[test]
fn slow_calls_open_the_breaker_at_the_slow_call_rate() {
    let Fixture { breaker, .. } = fixture(
        counting(4, 4)
            .slow_call_threshold(Duration::from_secs(1))
            .slow_call_rate_threshold(50.0),
    );
    assert!(breaker.try_acquire().unwrap().tracks_slow_calls());
    calls(&breaker, "S..");
    assert_eq!(breaker.state(), Closed);
    // A slow failure is both slow and failed.
    calls(&breaker, "X");
    let metrics = breaker.metrics();
    assert_eq!(metrics.slow_calls, 2);
    assert_eq!(metrics.failed_calls, 1);
    assert_eq!(metrics.slow_call_rate, Some(50.0));
    assert_eq!(metrics.failure_rate, Some(25.0));
    assert_eq!(breaker.state(), Open);
}

#[test]
fn slow_successes_after_a_window_of_fast_ones_are_counted() {
    // A window full of fast successes is the steady state whose next
    // success is skipped without a write: a slow success is not one.
    let Fixture { breaker, .. } = fixture(
        counting(4, 4)
            .slow_call_threshold(Duration::from_secs(1))
            .slow_call_rate_threshold(50.0),
    );
    calls(&breaker, "....");
    calls(&breaker, ".");
    assert_eq!(breaker.metrics().slow_calls, 0);
    calls(&breaker, "S");
    assert_eq!(breaker.metrics().slow_calls, 1);
    assert_eq!(breaker.state(), Closed);
    calls(&breaker, "S");
    let metrics = breaker.metrics();
    assert_eq!((metrics.buffered_calls, metrics.slow_calls), (4, 2));
    assert_eq!(breaker.state(), Open);
}

#[test]
fn a_call_as_long_as_the_threshold_is_not_slow() {
    let Fixture { breaker, .. } = fixture(
        counting(2, 1)
            .slow_call_threshold(Duration::from_secs(1))
            .slow_call_rate_threshold(50.0),
    );
    let permit = breaker.try_acquire().unwrap();
    permit.record(BreakerOutcome::Success, Some(Duration::from_secs(1)));
    let permit = breaker.try_acquire().unwrap();
    permit.record(BreakerOutcome::Success, None);
    assert_eq!(breaker.metrics().slow_calls, 0);
    assert_eq!(breaker.state(), Closed);
}

#[test]
fn by_default_calls_are_timed_and_a_window_of_slow_calls_opens() {
    let Fixture { breaker, .. } = fixture(counting(2, 2));
    for _ in 0..2 {
        let permit = breaker.try_acquire().unwrap();
        assert!(permit.tracks_slow_calls());
        permit.record(BreakerOutcome::Success, Some(Duration::from_secs(61)));
    }
    // 100% of the calls took longer than 60 s, as Resilience4j would see.
    assert_eq!(breaker.state(), Open);
}

#[test]
fn a_slow_call_threshold_of_duration_max_turns_timing_off() {
    let Fixture { breaker, .. } = fixture(counting(2, 2).slow_call_threshold(Duration::MAX));
    for _ in 0..2 {
        let permit = breaker.try_acquire().unwrap();
        assert!(!permit.tracks_slow_calls());
        permit.record(BreakerOutcome::Success, None);
    }
    assert_eq!(breaker.metrics().slow_calls, 0);
    assert_eq!(breaker.state(), Closed);
}

#[test]
fn open_rejects_naming_the_instance_until_the_wait_has_passed() {
    let Fixture {
        breaker,
        clock,
        mut events,
    } = fixture(counting(4, 4));
    trip(&breaker);
    let _ = transitions(&mut events);
    let rejected = breaker.try_acquire().unwrap_err();
    assert_eq!(rejected.instance(), "breaker-test");
    assert_eq!(
        kinds(&mut events),
        [CircuitBreakerEventKind::Rejected { state: Open }]
    );
    clock.advance(WAIT - Duration::from_nanos(1));
    assert!(breaker.try_acquire().is_err());
    assert_eq!(breaker.metrics().not_permitted_calls, 2);
    clock.advance(Duration::from_nanos(1));
    assert_eq!(breaker.state(), Open, "nobody asked yet");
    let trial = breaker.try_acquire().unwrap();
    assert_eq!(breaker.state(), HalfOpen);
    assert_eq!(transitions(&mut events), [(Open, HalfOpen)]);
    drop(trial);
}

#[test]
fn the_first_trial_is_let_in_exactly_wait_in_open_after_the_breaker_opened() {
    // Not at the clock's origin, so that the wait is measured from the
    // opening and not from the breaker's creation.
    let Fixture { breaker, clock, .. } = fixture(counting(4, 4));
    clock.advance(Duration::from_millis(1_500));
    trip(&breaker);
    clock.advance(WAIT - Duration::from_nanos(1));
    assert!(breaker.try_acquire().is_err(), "one nanosecond early");
    assert_eq!(breaker.state(), Open);
    clock.advance(Duration::from_nanos(1));
    let trial = breaker
        .try_acquire()
        .expect("a call exactly wait_in_open after opening is let through");
    assert_eq!(breaker.state(), HalfOpen);
    assert!(matches!(trial.ticket().kind(), Kind::Trial(_)));
}

#[test]
fn open_metrics_show_the_window_that_opened_it() {
    let Fixture { breaker, .. } = fixture(counting(4, 4));
    calls(&breaker, ".FFF");
    assert_eq!(breaker.state(), Open);
    let metrics = breaker.metrics();
    assert_eq!(metrics.failure_rate, Some(75.0));
    assert_eq!(metrics.buffered_calls, 4);
}

#[test]
fn half_open_admits_exactly_the_permitted_trial_calls() {
    let Fixture {
        breaker,
        clock,
        mut events,
    } = fixture(counting(4, 4).permitted_calls_in_half_open(3));
    trip(&breaker);
    clock.advance(WAIT);
    let trials: Vec<_> = (0..3).map(|_| breaker.try_acquire().unwrap()).collect();
    let _ = kinds(&mut events);
    let rejected = breaker.try_acquire().unwrap_err();
    assert_eq!(rejected.instance(), "breaker-test");
    assert_eq!(
        kinds(&mut events),
        [CircuitBreakerEventKind::Rejected { state: HalfOpen }]
    );
    assert_eq!(breaker.state(), HalfOpen);
    drop(trials);
}

#[test]
fn good_trials_close_the_breaker_with_an_empty_window() {
    let Fixture {
        breaker,
        clock,
        mut events,
    } = fixture(counting(4, 4).permitted_calls_in_half_open(4));
    trip(&breaker);
    clock.advance(WAIT);
    calls(&breaker, "...");
    assert_eq!(breaker.state(), HalfOpen);
    let metrics = breaker.metrics();
    assert_eq!(metrics.buffered_calls, 3);
    assert_eq!(metrics.failure_rate, None, "3 of 4 trials");
    calls(&breaker, "F");
    assert_eq!(breaker.state(), Closed, "25% < 50%");
    assert_eq!(breaker.metrics().buffered_calls, 0);
    assert_eq!(
        transitions(&mut events),
        [(Closed, Open), (Open, HalfOpen), (HalfOpen, Closed)]
    );
}

#[test]
fn bad_trials_open_the_breaker_for_a_new_wait() {
    let Fixture {
        breaker,
        clock,
        mut events,
    } = fixture(counting(4, 4).permitted_calls_in_half_open(4));
    trip(&breaker);
    clock.advance(WAIT);
    calls(&breaker, "F.F.");
    assert_eq!(breaker.state(), Open, "50% of the trials failed");
    assert_eq!(breaker.metrics().failure_rate, Some(50.0));
    clock.advance(WAIT - Duration::from_nanos(1));
    assert!(breaker.try_acquire().is_err());
    clock.advance(Duration::from_nanos(1));
    assert!(breaker.try_acquire().is_ok());
    assert_eq!(
        transitions(&mut events),
        [
            (Closed, Open),
            (Open, HalfOpen),
            (HalfOpen, Open),
            (Open, HalfOpen)
        ]
    );
}

#[test]
fn slow_trials_reopen_the_breaker() {
    let Fixture { breaker, clock, .. } = fixture(
        counting(4, 4)
            .permitted_calls_in_half_open(2)
            .slow_call_threshold(Duration::from_secs(1))
            .slow_call_rate_threshold(50.0),
    );
    trip(&breaker);
    clock.advance(WAIT);
    calls(&breaker, ".S");
    assert_eq!(breaker.state(), Open);
}

#[test]
fn with_fewer_minimum_calls_than_trials_the_minimum_decides() {
    let Fixture { breaker, clock, .. } = fixture(counting(2, 2).permitted_calls_in_half_open(5));
    calls(&breaker, "FF");
    clock.advance(WAIT);
    calls(&breaker, "..");
    assert_eq!(breaker.state(), Closed, "min(minimum_calls, trials) = 2");
}

#[test]
fn a_dropped_or_ignored_trial_is_given_back() {
    let Fixture { breaker, clock, .. } = fixture(counting(4, 4).permitted_calls_in_half_open(1));
    trip(&breaker);
    clock.advance(WAIT);
    let trial = breaker.try_acquire().unwrap();
    assert!(breaker.try_acquire().is_err(), "the only trial is out");
    drop(trial);
    let trial = breaker.try_acquire().unwrap();
    trial.record(BreakerOutcome::Ignored, None);
    assert_eq!(breaker.state(), HalfOpen);
    assert_eq!(breaker.metrics().buffered_calls, 0);
    let trial = breaker.try_acquire().unwrap();
    trial.record(BreakerOutcome::Success, None);
    assert_eq!(breaker.state(), Closed);
}

#[test]
fn an_owned_permit_records_from_another_thread() {
    let Fixture { breaker, clock, .. } = fixture(counting(4, 4).permitted_calls_in_half_open(1));
    trip(&breaker);
    clock.advance(WAIT);
    let trial = breaker.try_acquire_owned().unwrap();
    assert!(trial.tracks_slow_calls());
    assert!(format!("{trial:?}").contains("breaker-test"));
    assert!(breaker.try_acquire_owned().is_err());
    drop(trial);
    let trial = breaker.try_acquire_owned().unwrap();
    std::thread::spawn(move || trial.record(BreakerOutcome::Success, None))
        .join()
        .unwrap();
    assert_eq!(breaker.state(), Closed);
}

#[test]
fn an_outcome_of_a_state_that_is_gone_is_dropped() {
    let Fixture { breaker, clock, .. } = fixture(counting(2, 2).permitted_calls_in_half_open(2));
    let late = breaker.try_acquire().unwrap();
    calls(&breaker, "FF");
    breaker.reset();
    late.record(BreakerOutcome::Failure, None);
    assert_eq!(breaker.metrics().buffered_calls, 0);
    // Trials of an earlier half-open state are not trials of this one.
    breaker.transition_to_open();
    clock.advance(WAIT);
    let (old_a, old_b) = (
        breaker.try_acquire().unwrap(),
        breaker.try_acquire().unwrap(),
    );
    breaker.transition_to_open();
    clock.advance(WAIT);
    let (a, b) = (
        breaker.try_acquire().unwrap(),
        breaker.try_acquire().unwrap(),
    );
    old_a.record(BreakerOutcome::Failure, None);
    drop(old_b);
    assert_eq!(breaker.state(), HalfOpen);
    assert_eq!(breaker.metrics().buffered_calls, 0);
    assert!(breaker.try_acquire().is_err(), "nothing was given back");
    drop(a);
    assert!(breaker.try_acquire().is_ok());
    drop(b);
}

#[test]
fn a_time_window_drops_an_outcome_of_a_state_that_is_gone() {
    let Fixture { breaker, .. } = fixture(
        CircuitBreakerConfig::builder()
            .sliding_window(SlidingWindow::Time)
            .minimum_calls(1),
    );
    let late = breaker.try_acquire().unwrap();
    breaker.transition_to_open();
    breaker.reset();
    late.record(BreakerOutcome::Failure, None);
    assert_eq!(breaker.metrics().buffered_calls, 0);
    assert_eq!(breaker.state(), Closed);
}

#[test]
fn forced_open_rejects_everything_and_records_nothing() {
    let Fixture {
        breaker,
        clock,
        mut events,
    } = fixture(counting(4, 4));
    calls(&breaker, "FF");
    breaker.transition_to_forced_open();
    assert_eq!(breaker.state(), ForcedOpen);
    clock.advance(WAIT * 10);
    assert!(breaker.try_acquire().is_err());
    assert_eq!(breaker.metrics().buffered_calls, 0);
    assert_eq!(breaker.metrics().not_permitted_calls, 1);
    assert_eq!(
        kinds(&mut events),
        [
            CircuitBreakerEventKind::StateTransition {
                from: Closed,
                to: ForcedOpen
            },
            CircuitBreakerEventKind::Rejected { state: ForcedOpen }
        ]
    );
}

#[test]
fn disabled_admits_everything_and_records_nothing() {
    let Fixture { breaker, .. } = fixture(counting(2, 2).slow_call_rate_threshold(50.0));
    breaker.transition_to_disabled();
    let permit = breaker.try_acquire().unwrap();
    assert!(!permit.tracks_slow_calls());
    permit.record(BreakerOutcome::Failure, None);
    calls(&breaker, "FFFFXX");
    assert_eq!(breaker.state(), Disabled);
    assert_eq!(breaker.metrics().buffered_calls, 0);
    breaker.transition_to_closed();
    calls(&breaker, "F");
    assert_eq!(breaker.metrics().buffered_calls, 1);
}

#[test]
fn reset_closes_the_breaker_with_an_empty_window() {
    let Fixture {
        breaker,
        mut events,
        ..
    } = fixture(counting(4, 4));
    calls(&breaker, "FFF");
    breaker.reset();
    assert_eq!(breaker.metrics().buffered_calls, 0);
    assert!(transitions(&mut events).is_empty(), "closed to closed");
    calls(&breaker, ".");
    assert_eq!(
        breaker.metrics().buffered_calls,
        1,
        "the old calls are gone"
    );
    calls(&breaker, "FFF");
    assert_eq!(breaker.state(), Open);
    breaker.reset();
    assert_eq!(breaker.state(), Closed);
    assert_eq!(transitions(&mut events), [(Closed, Open), (Open, Closed)]);
}

#[test]
fn every_transition_publishes_an_event_in_order() {
    let Fixture {
        breaker,
        clock,
        mut events,
    } = fixture(counting(4, 4).permitted_calls_in_half_open(1));
    trip(&breaker);
    clock.advance(WAIT);
    calls(&breaker, ".");
    breaker.transition_to_open();
    breaker.transition_to_open(); // a new wait, no event
    breaker.transition_to_forced_open();
    breaker.transition_to_disabled();
    breaker.transition_to_closed();
    breaker.transition_to_disabled();
    breaker.transition_to_open();
    breaker.reset();
    assert_eq!(
        transitions(&mut events),
        [
            (Closed, Open),
            (Open, HalfOpen),
            (HalfOpen, Closed),
            (Closed, Open),
            (Open, ForcedOpen),
            (ForcedOpen, Disabled),
            (Disabled, Closed),
            (Closed, Disabled),
            (Disabled, Open),
            (Open, Closed),
        ]
    );
}

#[test]
fn opening_again_restarts_the_wait() {
    let Fixture { breaker, clock, .. } = fixture(counting(4, 4));
    breaker.transition_to_open();
    clock.advance(WAIT / 2);
    breaker.transition_to_open();
    clock.advance(WAIT / 2);
    assert!(breaker.try_acquire().is_err());
    clock.advance(WAIT / 2);
    assert!(breaker.try_acquire().is_ok());
}

#[test]
fn an_ignore_on_list_is_the_compositions_to_apply() {
    // The breaker only sees outcomes; the list is carried in its config.
    let config = CircuitBreakerConfig::builder()
        .ignore_on([RejectionKind::BulkheadFull])
        .build()
        .unwrap();
    let breaker = CircuitBreaker::new("breaker-ignore-on", config);
    assert!(
        breaker
            .config()
            .ignore_on()
            .contains(RejectionKind::BulkheadFull)
    );
}

#[test]
fn a_wait_too_long_to_represent_stays_open() {
    let clock = ManualClock::new();
    let config = CircuitBreakerConfig::builder()
        .wait_in_open(Duration::MAX)
        .build()
        .unwrap();
    let context = PolicyContext::new(Arc::new(clock.clone()));
    let breaker = CircuitBreaker::with_context("breaker-forever", config, context);
    breaker.transition_to_open();
    clock.advance(Duration::from_secs(1 << 40));
    assert!(breaker.try_acquire().is_err());
}

/// A small deterministic generator for the stress test.
struct XorShift(u64);

impl XorShift {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn stress(window: SlidingWindow) {
    const PERMITTED: u32 = 3;
    let clock = ManualClock::new();
    let bus = EventBus::new(EventBus::MAX_CAPACITY);
    let mut events = bus.subscribe();
    let context = PolicyContext::new(Arc::new(clock.clone())).with_events(bus);
    let config = CircuitBreakerConfig::builder()
        .sliding_window(window)
        .sliding_window_size(20)
        .minimum_calls(10)
        .permitted_calls_in_half_open(PERMITTED)
        .wait_in_open(Duration::from_millis(500))
        .slow_call_threshold(Duration::from_millis(10))
        .slow_call_rate_threshold(80.0)
        .build()
        .unwrap();
    let breaker = CircuitBreaker::with_context("breaker-stress", config, context);
    // Trial calls out at once, per half-open state.
    let trials_out = Arc::new(Mutex::new(HashMap::<u32, u32>::new()));
    let stop = Arc::new(AtomicBool::new(false));

    let workers: Vec<_> = (0..8)
        .map(|seed| {
            let (breaker, trials_out) = (breaker.clone(), Arc::clone(&trials_out));
            std::thread::spawn(move || {
                let mut rng = XorShift(0x9E37_79B9_7F4A_7C15 ^ (seed + 1));
                for _ in 0..10_000 {
                    let permit = match breaker.try_acquire() {
                        Ok(permit) => permit,
                        Err(rejected) => {
                            assert_eq!(rejected.instance(), "breaker-stress");
                            std::thread::yield_now();
                            continue;
                        }
                    };
                    let trial = match permit.ticket().kind() {
                        Kind::Trial(epoch) => Some(epoch),
                        _ => None,
                    };
                    if let Some(epoch) = trial {
                        let mut out = trials_out.lock().unwrap();
                        let n = out.entry(epoch).or_default();
                        *n += 1;
                        assert!(*n <= PERMITTED, "{n} trials out at once");
                    }
                    // Hold the permit a while: trials overlap.
                    for _ in 0..rng.below(4) {
                        std::thread::yield_now();
                    }
                    if let Some(epoch) = trial {
                        *trials_out.lock().unwrap().get_mut(&epoch).unwrap() -= 1;
                    }
                    let duration = Duration::from_millis(rng.below(20));
                    match rng.below(20) {
                        0 => drop(permit),
                        1 => permit.record(BreakerOutcome::Ignored, Some(duration)),
                        n if n < 10 => permit.record(BreakerOutcome::Success, Some(duration)),
                        _ => permit.record(BreakerOutcome::Failure, Some(duration)),
                    }
                }
            })
        })
        .collect();
    let ticker = {
        let (clock, stop) = (clock.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            while !stop.load(SeqCst) {
                clock.advance(Duration::from_millis(100));
                std::thread::yield_now();
            }
        })
    };
    let watcher = {
        let (breaker, stop) = (breaker.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut last = Some(Closed);
            let mut missed = 0;
            while !stop.load(SeqCst) {
                let metrics = breaker.metrics();
                for rate in [metrics.failure_rate, metrics.slow_call_rate]
                    .into_iter()
                    .flatten()
                {
                    assert!((0.0..=100.0).contains(&rate), "{metrics:?}");
                }
                if window == SlidingWindow::Count {
                    assert!(metrics.buffered_calls <= 20, "{metrics:?}");
                }
                assert!(metrics.failed_calls <= metrics.buffered_calls);
                assert!(metrics.slow_calls <= metrics.buffered_calls);
                std::thread::yield_now();
                while let Some(event) = events.try_recv() {
                    if events.missed() != missed {
                        // Fell behind the bus: the chain restarts here.
                        missed = events.missed();
                        last = None;
                    }
                    if let Event::CircuitBreaker(event) = event
                        && let CircuitBreakerEventKind::StateTransition { from, to } = event.kind
                    {
                        if let Some(last) = last {
                            assert_eq!(from, last, "transitions out of order");
                        }
                        last = Some(to);
                    }
                }
            }
        })
    };
    workers.into_iter().for_each(|w| w.join().unwrap());
    stop.store(true, SeqCst);
    ticker.join().unwrap();
    watcher.join().unwrap();

    assert!(trials_out.lock().unwrap().values().all(|&n| n == 0));
    breaker.shared.assert_consistent();
    // Still a working breaker.
    breaker.transition_to_closed();
    for _ in 0..10 {
        breaker
            .try_acquire()
            .unwrap()
            .record(BreakerOutcome::Failure, None);
    }
    assert_eq!(breaker.state(), Open);
}

#[test]
fn concurrent_callers_keep_a_count_breaker_consistent() {
    stress(SlidingWindow::Count);
}

#[test]
fn concurrent_callers_keep_a_time_breaker_consistent() {
    stress(SlidingWindow::Time);
}
