//! The composition rules (`docs/composition.md`) through `Pipeline`: the
//! fixed order
//! `Retry( CircuitBreaker( RateLimiter( Timeout( Bulkhead( call ) ) ) ) )`
//! and what follows from it, sync and async, on a `ManualClock`. (The
//! hedge, between the retry and the breaker, is the `hedging`
//! module's; the retry budget the `retry_budget` module's.)

use crate::support;

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering, Ordering::SeqCst};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use bulkhead_core::{
    CallError, CircuitState, Event, ManualClock, Rejection, RejectionKind, TimeoutEventKind,
};
use bulkhead_registry::{Pipeline, Registry};
use support::{poll_noop, wait_until};

fn registry(clock: &ManualClock) -> Registry {
    Registry::builder().clock(clock.clone()).build()
}

const MS: Duration = Duration::from_millis(1);

#[test]
fn the_order_is_fixed_whatever_order_the_builder_was_called_in() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let backwards = Pipeline::builder(&registry, "order")
        .bulkhead(|b| b.max_concurrent(1))
        .timeout(|t| t.duration(Duration::from_secs(1)))
        .rate_limiter(|r| {
            r.limit_for_period(100)
                .refresh_period(Duration::from_secs(1))
        })
        .circuit_breaker(|c| c.minimum_calls(10))
        .retry(|r| r.max_attempts(2).wait(Duration::ZERO))
        .build()
        .unwrap();
    let p = backwards.policies();
    assert!(p.retry().is_some() && p.circuit_breaker().is_some() && p.rate_limiter().is_some());
    assert!(p.timeout().is_some() && p.bulkhead().is_some());
    // The bulkhead is innermost: a full bulkhead is retried by the outer retry.
    let handle = registry.bulkhead("order").unwrap();
    let held = handle.bulkhead().try_enter().unwrap();
    let attempts = AtomicU32::new(0);
    let out = backwards.execute(|| {
        attempts.fetch_add(1, SeqCst);
        Ok::<_, ()>(())
    });
    assert!(matches!(
        out,
        Err(CallError::Rejected(Rejection::BulkheadFull(_)))
    ));
    assert_eq!(attempts.load(SeqCst), 0, "the method never ran");
    drop(held);
    assert_eq!(backwards.execute(|| Ok::<_, ()>(7)), Ok(7));
}

#[test]
fn a_slot_is_held_only_while_the_method_runs_not_during_a_retry_delay() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = Pipeline::builder(&registry, "held")
        .bulkhead(|b| b.max_concurrent(1))
        .retry(|r| r.max_attempts(2).wait(Duration::from_secs(1)))
        .build()
        .unwrap();
    let handle = registry.bulkhead("held").unwrap();
    let attempts = AtomicU32::new(0);
    thread::scope(|s| {
        let call = s.spawn(|| {
            pipeline.execute(|| {
                if attempts.fetch_add(1, SeqCst) == 0 {
                    Err("first attempt fails")
                } else {
                    Ok("second attempt")
                }
            })
        });
        wait_until("the retry delay starts", || clock.sleepers() == 1);
        assert_eq!(handle.concurrent_calls(), 0, "no slot during the delay");
        let other = handle.bulkhead().try_enter();
        assert!(other.is_ok(), "another caller can use the slot meanwhile");
        drop(other);
        clock.advance(Duration::from_secs(1));
        assert_eq!(call.join().unwrap(), Ok("second attempt"));
    });
    assert_eq!(attempts.load(SeqCst), 2);
}

#[test]
fn bulkhead_full_is_retried_by_default_and_abort_on_fails_fast() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let build = |id: &str, abort: bool| {
        Pipeline::builder(&registry, id)
            .bulkhead(|b| b.max_concurrent(1))
            .retry(|r| {
                let r = r.max_attempts(3).wait(Duration::ZERO);
                if abort {
                    r.abort_on([RejectionKind::BulkheadFull])
                } else {
                    r
                }
            })
            .build()
            .unwrap()
    };
    for (id, abort) in [("retried", false), ("aborted", true)] {
        let pipeline = build(id, abort);
        let mut events = registry.subscribe();
        let handle = registry.bulkhead(id).unwrap();
        let _held = handle.bulkhead().try_enter().unwrap();
        assert!(matches!(
            pipeline.execute(|| Ok::<_, ()>(())),
            Err(CallError::Rejected(Rejection::BulkheadFull(_)))
        ));
        let rejections = events
            .drain()
            .filter(|e| matches!(e, Event::Bulkhead(_)))
            .count();
        assert_eq!(
            rejections,
            if abort { 1 } else { 3 },
            "{id}: attempts that met the full bulkhead"
        );
    }
}

#[test]
fn the_breaker_records_bulkhead_full_as_a_failure_unless_ignored() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    for (id, ignore) in [("recorded", false), ("ignored", true)] {
        let pipeline = Pipeline::builder(&registry, id)
            .bulkhead(|b| b.max_concurrent(1))
            .circuit_breaker(|c| {
                let c = c
                    .minimum_calls(2)
                    .sliding_window_size(2)
                    .failure_rate_threshold(50.0);
                if ignore {
                    c.ignore_on([RejectionKind::BulkheadFull])
                } else {
                    c
                }
            })
            .build()
            .unwrap();
        let handle = registry.bulkhead(id).unwrap();
        let held = handle.bulkhead().try_enter().unwrap();
        for _ in 0..2 {
            assert!(pipeline.execute(|| Ok::<_, ()>(())).is_err());
        }
        drop(held);
        let breaker = registry.circuit_breaker(id).unwrap();
        let expected = if ignore {
            CircuitState::Closed
        } else {
            CircuitState::Open
        };
        assert_eq!(breaker.state(), expected, "{id}");
        let next = pipeline.execute(|| Ok::<_, ()>(()));
        if ignore {
            assert_eq!(next, Ok(()));
        } else {
            assert!(matches!(
                next,
                Err(CallError::Rejected(Rejection::CircuitOpen(_)))
            ));
        }
    }
}

#[test]
fn waiting_for_a_slot_counts_towards_the_timeout_sync() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = Pipeline::builder(&registry, "wait-sync")
        .bulkhead(|b| b.max_concurrent(1).max_wait(Duration::from_secs(10)))
        .timeout(|t| t.duration(Duration::from_secs(1)))
        .build()
        .unwrap();
    let handle = registry.bulkhead("wait-sync").unwrap();
    let _held = handle.bulkhead().try_enter().unwrap();
    thread::scope(|s| {
        let call = s.spawn(|| pipeline.execute(|| Ok::<_, ()>(())));
        wait_until("the call waits for a slot", || handle.waiting_calls() == 1);
        clock.advance(Duration::from_secs(1));
        let out = call.join().unwrap();
        assert!(
            matches!(out, Err(CallError::Rejected(Rejection::Timeout(_)))),
            "{out:?}"
        );
    });
    assert_eq!(handle.waiting_calls(), 0);
}

#[test]
fn waiting_for_a_slot_counts_towards_the_timeout_async() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = Pipeline::builder(&registry, "wait-async")
        .bulkhead(|b| b.max_concurrent(1).max_wait(Duration::from_secs(10)))
        .timeout(|t| t.duration(Duration::from_secs(1)))
        .build()
        .unwrap();
    let handle = registry.bulkhead("wait-async").unwrap();
    let _held = handle.bulkhead().try_enter().unwrap();
    let mut call = Box::pin(pipeline.execute_async(|| async { Ok::<_, ()>(()) }));
    assert!(poll_noop(&mut call).is_pending());
    assert_eq!(handle.waiting_calls(), 1);
    clock.advance(Duration::from_secs(1));
    let out = poll_noop(&mut call);
    assert!(matches!(
        out,
        std::task::Poll::Ready(Err(CallError::Rejected(Rejection::Timeout(_))))
    ));
    assert_eq!(
        handle.waiting_calls(),
        0,
        "the dropped waiter left the queue"
    );
}

#[test]
fn an_async_call_is_dropped_at_its_deadline_and_frees_its_slot() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = Pipeline::builder(&registry, "drop-at-deadline")
        .bulkhead(|b| b.max_concurrent(1))
        .timeout(|t| t.duration(Duration::from_millis(500)))
        .build()
        .unwrap();
    let handle = registry.bulkhead("drop-at-deadline").unwrap();
    let mut call = Box::pin(pipeline.execute_async(std::future::pending::<Result<(), ()>>));
    assert!(poll_noop(&mut call).is_pending());
    assert_eq!(handle.concurrent_calls(), 1);
    clock.advance(Duration::from_millis(500));
    assert!(matches!(
        poll_noop(&mut call),
        std::task::Poll::Ready(Err(CallError::Rejected(Rejection::Timeout(_))))
    ));
    assert_eq!(
        handle.concurrent_calls(),
        0,
        "the slot is free at the deadline, before the future is dropped"
    );
}

#[test]
fn a_sync_call_that_overruns_keeps_its_result_and_is_reported() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let mut events = registry.subscribe();
    let pipeline = Pipeline::builder(&registry, "overrun")
        .timeout(|t| t.duration(Duration::from_millis(100)))
        .build()
        .unwrap();
    let out = pipeline.execute(|| {
        clock.advance(Duration::from_millis(250));
        Ok::<_, ()>("late but kept")
    });
    assert_eq!(out, Ok("late but kept"));
    let overrun = events.drain().find_map(|e| match e {
        Event::Timeout(t) => Some(t.kind),
        _ => None,
    });
    assert_eq!(
        overrun,
        Some(TimeoutEventKind::Overrun {
            timeout: Duration::from_millis(100),
            took: Duration::from_millis(250)
        })
    );
}

#[test]
fn a_call_rejected_by_the_bulkhead_has_already_taken_a_rate_limiter_permit() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = Pipeline::builder(&registry, "permit-taken")
        .bulkhead(|b| b.max_concurrent(1))
        .rate_limiter(|r| {
            r.limit_for_period(3)
                .refresh_period(Duration::from_secs(1))
                .max_wait(Duration::ZERO)
        })
        .build()
        .unwrap();
    let limiter = registry.rate_limiter("permit-taken").unwrap();
    let handle = registry.bulkhead("permit-taken").unwrap();
    let held = handle.bulkhead().try_enter().unwrap();
    assert_eq!(limiter.available_permits(), 3);
    assert!(matches!(
        pipeline.execute(|| Ok::<_, ()>(())),
        Err(CallError::Rejected(Rejection::BulkheadFull(_)))
    ));
    assert_eq!(
        limiter.available_permits(),
        2,
        "the rejected call used a permit"
    );
    drop(held);
    assert!(pipeline.execute(|| Ok::<_, ()>(())).is_ok());
    assert!(pipeline.execute(|| Ok::<_, ()>(())).is_ok());
    assert!(matches!(
        pipeline.execute(|| Ok::<_, ()>(())),
        Err(CallError::Rejected(Rejection::RateLimited(_)))
    ));
}

#[test]
fn retry_if_and_record_if_judge_the_callers_own_errors() {
    #[derive(Debug, PartialEq)]
    enum DbError {
        Transient,
        NotFound,
    }
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = Pipeline::builder(&registry, "predicates")
        .retry(|r| r.max_attempts(3).wait(Duration::ZERO))
        .retry_if(|e: &DbError| *e == DbError::Transient)
        .circuit_breaker(|c| c.minimum_calls(1).sliding_window_size(1))
        .record_if(|e: &DbError| *e == DbError::Transient)
        .build()
        .unwrap();
    let attempts = AtomicU32::new(0);
    let not_found = pipeline.execute(|| {
        attempts.fetch_add(1, SeqCst);
        Err::<(), _>(DbError::NotFound)
    });
    assert_eq!(not_found, Err(CallError::Inner(DbError::NotFound)));
    assert_eq!(attempts.load(SeqCst), 1, "NotFound is not retried");
    let breaker = registry.circuit_breaker("predicates").unwrap();
    assert_eq!(
        breaker.state(),
        CircuitState::Closed,
        "NotFound is not a failure"
    );
    attempts.store(0, SeqCst);
    let transient = pipeline.execute(|| {
        attempts.fetch_add(1, SeqCst);
        Err::<(), _>(DbError::Transient)
    });
    // The first transient failure opens the breaker (window of 1), and the
    // retries then meet the open breaker.
    assert!(
        matches!(
            transient,
            Err(CallError::Rejected(Rejection::CircuitOpen(_)))
        ),
        "{transient:?}"
    );
    assert_eq!(attempts.load(SeqCst), 1);
    assert_eq!(breaker.state(), CircuitState::Open);
}

#[tokio::test(flavor = "current_thread")]
async fn async_retries_never_block_the_thread() {
    // One thread runs the retrying call and the task that moves the clock:
    // a blocking retry delay would hang this test.
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = Pipeline::builder(&registry, "async-retry")
        .retry(|r| r.max_attempts(3).wait(Duration::from_secs(1)))
        .bulkhead(|b| b.max_concurrent(1))
        .build()
        .unwrap();
    let attempts = Arc::new(AtomicU32::new(0));
    let ticker = tokio::spawn({
        let clock = clock.clone();
        async move {
            loop {
                tokio::task::yield_now().await;
                clock.advance(100 * MS);
            }
        }
    });
    let out = pipeline
        .execute_async(|| {
            let attempts = Arc::clone(&attempts);
            async move {
                match attempts.fetch_add(1, SeqCst) {
                    0 | 1 => Err("not yet"),
                    _ => Ok("third time"),
                }
            }
        })
        .await;
    ticker.abort();
    assert_eq!(out, Ok("third time"));
    assert_eq!(attempts.load(SeqCst), 3);
}

#[test]
fn an_open_breaker_lets_a_trial_through_once_wait_in_open_passes_on_the_clock() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = Pipeline::builder(&registry, "half-open")
        .circuit_breaker(|c| {
            c.minimum_calls(2)
                .sliding_window_size(2)
                .wait_in_open(Duration::from_secs(30))
                .permitted_calls_in_half_open(1)
        })
        .build()
        .unwrap();
    for _ in 0..2 {
        assert!(pipeline.execute(|| Err::<(), _>("down")).is_err());
    }
    let breaker = registry.circuit_breaker("half-open").unwrap();
    assert_eq!(breaker.state(), CircuitState::Open);
    clock.advance(Duration::from_secs(29));
    assert!(matches!(
        pipeline.execute(|| Ok::<_, ()>(())),
        Err(CallError::Rejected(Rejection::CircuitOpen(_)))
    ));
    clock.advance(Duration::from_secs(1));
    assert_eq!(pipeline.execute(|| Ok::<_, ()>("trial")), Ok("trial"));
    assert_eq!(breaker.state(), CircuitState::Closed);
}

#[test]
fn with_the_default_slow_call_rate_a_window_of_slow_calls_opens_the_breaker() {
    // slow_call_rate_threshold stays at its default, 100: Resilience4j opens
    // when every call of the window was slow, and so do we, sync and async.
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let breaker = |id: &str| {
        Pipeline::builder(&registry, id)
            .circuit_breaker(|c| {
                c.sliding_window_size(4)
                    .minimum_calls(4)
                    .slow_call_threshold(Duration::from_secs(1))
            })
            .build()
            .unwrap()
    };
    let sync = breaker("slow-sync");
    for _ in 0..4 {
        let out = sync.execute(|| {
            clock.advance(Duration::from_secs(2));
            Ok::<_, ()>(())
        });
        assert_eq!(out, Ok(()), "slow, but successful");
    }
    let handle = registry.circuit_breaker("slow-sync").unwrap();
    assert_eq!(handle.state(), CircuitState::Open);

    let asynchronous = breaker("slow-async");
    for _ in 0..4 {
        let mut call = Box::pin(asynchronous.execute_async(|| async {
            clock.advance(Duration::from_secs(2));
            Ok::<_, ()>(())
        }));
        let out = poll_noop(&mut call);
        assert!(matches!(out, std::task::Poll::Ready(Ok(()))), "{out:?}");
    }
    let handle = registry.circuit_breaker("slow-async").unwrap();
    assert_eq!(handle.state(), CircuitState::Open);
    // Calls as long as the threshold are not slow.
    let fast = breaker("not-slow");
    for _ in 0..4 {
        fast.execute(|| {
            clock.advance(Duration::from_secs(1));
            Ok::<_, ()>(())
        })
        .unwrap();
    }
    let handle = registry.circuit_breaker("not-slow").unwrap();
    assert_eq!(handle.state(), CircuitState::Closed);
}

#[test]
fn the_timeout_counts_from_after_a_rate_limiter_wait_when_a_breaker_times_the_call() {
    // The breaker's clock reading at the start serves the rate limiter and
    // the timeout too, but not once the rate limiter made the call wait:
    // the deadline then counts from the end of that wait.
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = Arc::new(
        Pipeline::builder(&registry, "after-wait")
            .circuit_breaker(|c| c)
            .rate_limiter(|r| {
                r.limit_for_period(1)
                    .refresh_period(Duration::from_secs(1))
                    .max_wait(Duration::from_secs(2))
            })
            .timeout(|t| t.duration(500 * MS))
            .bulkhead(|b| b.max_concurrent(1).max_wait(Duration::from_secs(1)))
            .build()
            .unwrap(),
    );
    assert_eq!(pipeline.execute(|| Ok::<_, ()>(1)), Ok(1));
    let handle = registry.bulkhead("after-wait").unwrap();
    let limiter = registry.rate_limiter("after-wait").unwrap();
    let held = handle.bulkhead().try_enter().unwrap();
    let caller = {
        let pipeline = Arc::clone(&pipeline);
        thread::spawn(move || pipeline.execute(|| Ok::<_, ()>(2)))
    };
    wait_until("the caller waits for the next period", || {
        limiter.rate_limiter().waiting_calls() == 1
    });
    clock.advance(Duration::from_secs(1));
    wait_until("the caller waits for a slot, or gave up", || {
        handle.waiting_calls() == 1 || caller.is_finished()
    });
    drop(held);
    assert_eq!(caller.join().unwrap(), Ok(2), "500 ms left after the wait");
}

#[test]
fn the_timeout_counts_from_after_a_rate_limiter_wait_async() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = Pipeline::builder(&registry, "after-wait-async")
        .circuit_breaker(|c| c)
        .rate_limiter(|r| {
            r.limit_for_period(1)
                .refresh_period(Duration::from_secs(1))
                .max_wait(Duration::from_secs(2))
        })
        .timeout(|t| t.duration(500 * MS))
        .bulkhead(|b| b.max_concurrent(1).max_wait(Duration::from_secs(1)))
        .build()
        .unwrap();
    assert_eq!(pipeline.execute(|| Ok::<_, ()>(1)), Ok(1));
    let handle = registry.bulkhead("after-wait-async").unwrap();
    let held = handle.bulkhead().try_enter().unwrap();
    let mut call = Box::pin(pipeline.execute_async(|| async { Ok::<_, ()>(2) }));
    assert!(
        poll_noop(&mut call).is_pending(),
        "waiting for the next period"
    );
    clock.advance(Duration::from_secs(1));
    assert!(
        poll_noop(&mut call).is_pending(),
        "waiting for a slot, with 500 ms left"
    );
    assert_eq!(handle.waiting_calls(), 1);
    drop(held);
    assert!(matches!(
        poll_noop(&mut call),
        std::task::Poll::Ready(Ok(2))
    ));
}

#[test]
fn a_time_window_counts_a_call_in_the_second_it_ended() {
    // One-second window, two calls needed: a failure that started in the
    // first second but ended in the second counts with a failure made
    // there, and together they open the breaker.
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = Pipeline::builder(&registry, "time-window")
        .circuit_breaker(|c| {
            c.sliding_window(bulkhead_core::SlidingWindow::Time)
                .sliding_window_size(1)
                .minimum_calls(2)
        })
        .timeout(|t| t.duration(Duration::from_secs(10)))
        .build()
        .unwrap();
    clock.advance(200 * MS);
    let slow_failure = pipeline.execute(|| {
        clock.advance(Duration::from_secs(1));
        Err::<(), _>("down")
    });
    assert!(matches!(slow_failure, Err(CallError::Inner("down"))));
    let handle = registry.circuit_breaker("time-window").unwrap();
    assert_eq!(handle.state(), CircuitState::Closed);
    assert!(pipeline.execute(|| Err::<(), _>("down")).is_err());
    assert_eq!(handle.state(), CircuitState::Open);
}

#[test]
fn a_shared_clock_reading_never_makes_the_rate_limiter_refuse_a_permit_that_is_left() {
    // The breaker's reading at the start serves the rate limiter too; taken
    // before the limiter's counter is loaded, it can be older than a permit
    // another thread took in the next period.
    let registry = Registry::builder().build();
    let pipeline = Arc::new(
        Pipeline::builder(&registry, "stale")
            .circuit_breaker(|c| c.minimum_calls(1_000_000).sliding_window_size(1_000_000))
            .rate_limiter(|r| {
                r.limit_for_period(1_000_000)
                    .refresh_period(Duration::from_micros(20))
                    .max_wait(Duration::ZERO)
            })
            .build()
            .unwrap(),
    );
    let refused = Arc::new(AtomicU64::new(0));
    let threads = 8;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (p, refused, barrier) = (pipeline.clone(), refused.clone(), barrier.clone());
            thread::spawn(move || {
                barrier.wait();
                let end = Instant::now() + Duration::from_secs(1);
                while Instant::now() < end {
                    for _ in 0..1000 {
                        if let Err(CallError::Rejected(_)) = p.execute(|| Ok::<_, ()>(())) {
                            refused.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(refused.load(Ordering::Relaxed), 0);
}
