//! Model checks of the state machine's races with loom.
//!
//! Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p
//! bulkhead-core --release --lib --target-dir target/loom circuit_breaker`.

use std::sync::Arc;
use std::time::Duration;

use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::thread;

use super::window::{Counts, Window};
use super::*;
use crate::clock::ManualClock;
use crate::events::{CircuitBreakerEventKind, Event, EventBus, EventStream};

fn breaker(
    builder: CircuitBreakerConfigBuilder,
    clock: &ManualClock,
) -> (CircuitBreaker, EventStream) {
    let bus = EventBus::default();
    let events = bus.subscribe();
    let context = PolicyContext::new(Arc::new(clock.clone())).with_events(bus);
    let config = builder
        .wait_in_open(Duration::from_secs(1))
        .build()
        .unwrap();
    (
        CircuitBreaker::with_context("loom", config, context),
        events,
    )
}

fn transitions(events: &mut EventStream) -> Vec<(CircuitState, CircuitState)> {
    events
        .drain()
        .filter_map(|event| match event {
            Event::CircuitBreaker(event) => match event.kind {
                CircuitBreakerEventKind::StateTransition { from, to } => Some((from, to)),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

#[test]
fn one_caller_turns_an_open_breaker_half_open_and_one_trial_runs_at_a_time() {
    loom::model(|| {
        let clock = ManualClock::new();
        let config = CircuitBreakerConfig::builder().permitted_calls_in_half_open(1);
        let (breaker, mut events) = breaker(config, &clock);
        breaker.transition_to_open();
        clock.advance(Duration::from_secs(1));
        let inside = Arc::new(AtomicUsize::new(0));
        let call = {
            let (breaker, inside) = (breaker.clone(), Arc::clone(&inside));
            move || {
                if let Ok(trial) = breaker.try_acquire() {
                    assert_eq!(inside.fetch_add(1, SeqCst), 0, "two trials at once");
                    inside.fetch_sub(1, SeqCst);
                    drop(trial);
                }
            }
        };
        let other = thread::spawn(call.clone());
        call();
        other.join().unwrap();
        assert_eq!(breaker.state(), CircuitState::HalfOpen);
        assert_eq!(
            transitions(&mut events),
            [
                (CircuitState::Closed, CircuitState::Open),
                (CircuitState::Open, CircuitState::HalfOpen)
            ]
        );
        assert!(breaker.try_acquire().is_ok(), "the trial was given back");
        breaker.shared.assert_consistent();
    });
}

#[test]
fn two_concurrent_failures_open_the_breaker_exactly_once() {
    loom::model(|| {
        let clock = ManualClock::new();
        // At 100%, only a check that sees both failures opens it.
        let config = CircuitBreakerConfig::builder()
            .sliding_window_size(2)
            .minimum_calls(2)
            .failure_rate_threshold(100.0);
        let (breaker, mut events) = breaker(config, &clock);
        let fail = {
            let breaker = breaker.clone();
            move || {
                if let Ok(permit) = breaker.try_acquire() {
                    permit.record(BreakerOutcome::Failure, None);
                }
            }
        };
        let other = thread::spawn(fail.clone());
        fail();
        other.join().unwrap();
        assert_eq!(
            transitions(&mut events),
            [(CircuitState::Closed, CircuitState::Open)]
        );
        assert_eq!(breaker.metrics().failure_rate, Some(100.0));
        breaker.shared.assert_consistent();
    });
}

#[test]
fn a_trial_given_back_late_does_not_leak_into_the_next_state() {
    loom::model(|| {
        let clock = ManualClock::new();
        let config = CircuitBreakerConfig::builder()
            .sliding_window_size(1)
            .minimum_calls(1)
            .permitted_calls_in_half_open(2);
        let (breaker, _events) = breaker(config, &clock);
        breaker.transition_to_open();
        clock.advance(Duration::from_secs(1));
        let (first, second) = (
            breaker.try_acquire_owned().unwrap(),
            breaker.try_acquire_owned().unwrap(),
        );
        let canceller = thread::spawn(move || drop(second));
        first.record(BreakerOutcome::Success, None);
        canceller.join().unwrap();
        // One success of a minimum of one: closed, whatever the order.
        assert_eq!(breaker.state(), CircuitState::Closed);
        breaker.shared.assert_consistent();
        // The closed word is intact: a failure still opens the breaker.
        breaker
            .try_acquire()
            .unwrap()
            .record(BreakerOutcome::Failure, None);
        assert_eq!(breaker.state(), CircuitState::Open);
    });
}

#[test]
fn a_late_failure_cannot_open_a_breaker_reset_meanwhile() {
    loom::model(|| {
        let clock = ManualClock::new();
        // The late failure counts before the reset (and may open the
        // breaker, which the reset closes again) or nowhere: never in the
        // new closed state's window.
        let config = CircuitBreakerConfig::builder()
            .sliding_window(SlidingWindow::Time)
            .sliding_window_size(1)
            .minimum_calls(1);
        let (breaker, mut events) = breaker(config, &clock);
        let late = breaker.try_acquire_owned().unwrap();
        let operator = {
            let breaker = breaker.clone();
            thread::spawn(move || breaker.reset())
        };
        late.record(BreakerOutcome::Failure, None);
        operator.join().unwrap();
        // Opened before the reset, or not at all: closed in the end.
        assert_eq!(breaker.state(), CircuitState::Closed);
        let seen = transitions(&mut events);
        assert!(
            seen.is_empty()
                || seen
                    == [
                        (CircuitState::Closed, CircuitState::Open),
                        (CircuitState::Open, CircuitState::Closed)
                    ],
            "{seen:?}"
        );
        assert_eq!(breaker.metrics().buffered_calls, 0);
        breaker.shared.assert_consistent();
    });
}

/// A time window of `size` seconds, on its own.
fn time_window(size: u32) -> Arc<Window> {
    let config = CircuitBreakerConfig::builder()
        .sliding_window(SlidingWindow::Time)
        .sliding_window_size(size)
        .build()
        .unwrap();
    Arc::new(Window::new(&config))
}

/// Records one outcome of `epoch` at `second` from another thread.
fn record_later(
    window: &Arc<Window>,
    epoch: u32,
    second: u32,
    failed: bool,
) -> thread::JoinHandle<()> {
    let window = Arc::clone(window);
    thread::spawn(move || {
        window.record(epoch, failed, failed, &mut || second);
    })
}

fn counts(calls: u32, failed: u32, slow: u32) -> Counts {
    Counts {
        calls,
        failed,
        slow,
    }
}

#[test]
fn a_late_writer_racing_a_reset_leaks_nothing_into_the_time_window() {
    loom::model(|| {
        let window = time_window(2);
        window.record(0, false, false, &mut || 1);
        // Admitted in epoch 0 before the reset; its call ends in second 2,
        // so it also moves the window on, racing the reset's own move.
        let late = record_later(&window, 0, 2, true);
        // The reset, then a call of the new epoch in second 3.
        window.reset(3);
        window.record(3, false, false, &mut || 3);
        late.join().unwrap();
        assert_eq!(window.counts(3, &mut || 3), counts(1, 0, 0));
        window.assert_consistent();
    });
}

#[test]
fn a_late_writer_of_an_expired_second_racing_a_window_advance_counts_nowhere() {
    loom::model(|| {
        let window = time_window(2);
        window.record(0, false, false, &mut || 1);
        // A failure of second 1, late, while a call of second 3 moves the
        // window past it (second 1's bucket becomes second 3's).
        let late = record_later(&window, 0, 1, true);
        window.record(0, false, false, &mut || 3);
        late.join().unwrap();
        assert_eq!(window.counts(0, &mut || 3), counts(1, 0, 0));
        window.assert_consistent();
    });
}

#[test]
fn two_writers_moving_the_time_window_on_at_once_keep_the_totals_exact() {
    loom::model(|| {
        let window = time_window(2);
        window.record(0, true, true, &mut || 1);
        // Second 2 and second 4 move the window from 1 at once; their
        // expiries overlap on second 2's bucket, which second 4 reuses.
        let earlier = record_later(&window, 0, 2, true);
        window.record(0, false, false, &mut || 4);
        earlier.join().unwrap();
        // Second 2 has left the window at second 4, whatever the order.
        assert_eq!(window.counts(0, &mut || 4), counts(1, 0, 0));
        window.assert_consistent();
    });
}

/// A count window of `size` slots, on its own.
fn count_window(size: u32) -> Arc<Window> {
    let config = CircuitBreakerConfig::builder()
        .sliding_window_size(size)
        .minimum_calls(size)
        .build()
        .unwrap();
    Arc::new(Window::new(&config))
}

#[test]
fn a_success_skipped_while_a_failure_is_written_loses_nothing() {
    loom::model(|| {
        // Full of successes: the next success is skipped, unless it sees
        // the failure's counters first.
        let window = count_window(2);
        window.record(0, false, false, &mut || 0);
        window.record(0, false, false, &mut || 0);
        let failure = record_later(&window, 0, 0, true);
        window.record(0, false, false, &mut || 0);
        failure.join().unwrap();
        window.assert_consistent();
        assert_eq!(window.counts(0, &mut || 0), counts(2, 1, 1));
        // The failure leaves after two more outcomes, whichever way the
        // success went: it was skipped as if it came first, or written.
        window.record(0, false, false, &mut || 0);
        window.record(0, false, false, &mut || 0);
        assert_eq!(window.counts(0, &mut || 0), counts(2, 0, 0));
        window.assert_consistent();
    });
}

#[test]
fn a_late_failure_racing_a_reset_takes_no_place_of_the_new_epoch() {
    loom::model(|| {
        // A failure of epoch 0, late: it may take its index before the
        // reset and write after epoch 1 came round to that slot.
        let window = count_window(2);
        let late = record_later(&window, 0, 0, true);
        window.reset(1);
        window.record(1, false, false, &mut || 0);
        window.record(1, false, false, &mut || 0);
        late.join().unwrap();
        window.assert_consistent();
        assert_eq!(window.counts(1, &mut || 0), counts(2, 0, 0));
        window.record(1, true, false, &mut || 0);
        assert_eq!(window.counts(1, &mut || 0), counts(2, 1, 0));
    });
}

/// A breaker whose count window of 2 is full of successes of epoch 0, the
/// state in which a closed success returns without reading the state word.
fn steady(clock: &ManualClock) -> (CircuitBreaker, EventStream) {
    let config = CircuitBreakerConfig::builder()
        .sliding_window_size(2)
        .minimum_calls(2)
        .failure_rate_threshold(50.0);
    let (breaker, events) = breaker(config, clock);
    for _ in 0..2 {
        breaker
            .try_acquire()
            .unwrap()
            .record(BreakerOutcome::Success, None);
    }
    (breaker, events)
}

#[test]
fn a_steady_state_success_racing_a_reset_counts_in_no_window() {
    loom::model(|| {
        let clock = ManualClock::new();
        let (breaker, mut events) = steady(&clock);
        // Admitted in epoch 0; its success may be skipped by the fast path
        // (counters still of epoch 0), or go the slow way and be dropped
        // (or land in an epoch-0 slot that epoch 1 does not count).
        let late = breaker.try_acquire_owned().unwrap();
        let operator = {
            let breaker = breaker.clone();
            thread::spawn(move || {
                breaker.reset();
                breaker
                    .try_acquire()
                    .unwrap()
                    .record(BreakerOutcome::Failure, None);
            })
        };
        late.record(BreakerOutcome::Success, None);
        operator.join().unwrap();
        assert_eq!(breaker.state(), CircuitState::Closed);
        assert!(transitions(&mut events).is_empty(), "closed to closed");
        let metrics = breaker.metrics();
        assert_eq!((metrics.buffered_calls, metrics.failed_calls), (1, 1));
        breaker.shared.assert_consistent();
        // However the late success went (skipped, dropped at the state
        // check, refused an index of epoch 1, or written into a slot epoch
        // 0 used up), epoch 1 holds exactly its own outcomes: one more
        // success makes the window `F.`, 50 % failed, and opens it.
        breaker
            .try_acquire()
            .unwrap()
            .record(BreakerOutcome::Success, None);
        assert_eq!(breaker.state(), CircuitState::Open);
        breaker.shared.assert_consistent();
    });
}

#[test]
fn a_steady_state_success_racing_an_opening_failure_changes_nothing() {
    loom::model(|| {
        let clock = ManualClock::new();
        let (breaker, mut events) = steady(&clock);
        let success = breaker.try_acquire_owned().unwrap();
        let failure = breaker.try_acquire_owned().unwrap();
        let failing = thread::spawn(move || failure.record(BreakerOutcome::Failure, None));
        // Skipped (as if before the failure), written over a success, or
        // dropped after the breaker opened: the window is `.F` either way.
        success.record(BreakerOutcome::Success, None);
        failing.join().unwrap();
        assert_eq!(
            transitions(&mut events),
            [(CircuitState::Closed, CircuitState::Open)]
        );
        let metrics = breaker.metrics();
        assert_eq!((metrics.buffered_calls, metrics.failed_calls), (2, 1));
        assert_eq!(metrics.failure_rate, Some(50.0));
        breaker.shared.assert_consistent();
    });
}
