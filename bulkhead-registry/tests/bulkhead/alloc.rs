//! B11: a call with a free slot and a rejected call allocate nothing, sync
//! and async, through the primitive and through a pipeline.
//!
//! A counting global allocator counts the bytes allocated by the test's own
//! thread while a measurement is on.

use crate::counting;
use crate::support;

use std::pin::pin;
use std::task::Poll;

use bulkhead_core::{BulkheadConfig, CallError};
use bulkhead_registry::{Pipeline, Registry};
use support::poll_noop;

/// Bytes allocated on this thread while `f` runs.
fn allocated_by<R>(f: impl FnOnce() -> R) -> (usize, R) {
    let (_, bytes, result) = counting::allocated_by(f);
    (bytes, result)
}

#[test]
fn the_counter_sees_an_allocation() {
    let (bytes, _) = allocated_by(|| Box::new([0u8; 64]));
    assert_eq!(bytes, 64, "the measurement itself works");
}

#[test]
fn b11_entering_a_free_slot_and_leaving_allocates_nothing() {
    let registry = Registry::new();
    let bulkhead = registry
        .bulkhead_policy(
            "alloc-free",
            "t",
            &BulkheadConfig::builder().max_concurrent(2),
        )
        .unwrap();
    let (bytes, ()) = allocated_by(|| {
        drop(bulkhead.try_enter().unwrap());
        drop(bulkhead.enter().unwrap());
        drop(bulkhead.try_enter_owned().unwrap());
        let Poll::Ready(Ok(permit)) = poll_noop(&mut bulkhead.enter_async()) else {
            panic!("free slot")
        };
        drop(permit);
    });
    assert_eq!(bytes, 0);
}

#[test]
fn b11_a_free_slot_allocates_nothing_when_callers_could_wait() {
    let registry = Registry::new();
    let bulkhead = registry
        .bulkhead_policy(
            "alloc-free-waiting",
            "t",
            &BulkheadConfig::builder()
                .max_concurrent(2)
                .max_wait(std::time::Duration::from_secs(1)),
        )
        .unwrap();
    let (bytes, ()) = allocated_by(|| {
        drop(bulkhead.enter().unwrap());
        let Poll::Ready(Ok(permit)) = poll_noop(&mut bulkhead.enter_async()) else {
            panic!("free slot")
        };
        drop(permit);
    });
    assert_eq!(bytes, 0);
}

#[test]
fn b11_a_rejection_allocates_nothing() {
    let registry = Registry::new();
    let bulkhead = registry
        .bulkhead_policy(
            "alloc-full",
            "t",
            &BulkheadConfig::builder().max_concurrent(1),
        )
        .unwrap();
    let _held = bulkhead.try_enter().unwrap();
    let (bytes, ()) = allocated_by(|| {
        for _ in 0..100 {
            assert!(bulkhead.try_enter().is_err());
            assert!(bulkhead.enter().is_err());
            assert!(matches!(
                poll_noop(&mut bulkhead.enter_async()),
                Poll::Ready(Err(_))
            ));
            let rejection = bulkhead_core::Rejection::from(bulkhead.try_enter().unwrap_err());
            assert_eq!(rejection.instance(), "alloc-full");
        }
    });
    assert_eq!(bytes, 0);
}

#[test]
fn b11_pipeline_calls_allocate_nothing_admitted_or_rejected() {
    let registry = Registry::new();
    let pipeline = Pipeline::builder(&registry, "alloc-pipeline")
        .bulkhead(|b| b.max_concurrent(1))
        .build()
        .unwrap();
    let (bytes, ()) = allocated_by(|| {
        assert_eq!(pipeline.execute(|| Ok::<_, ()>(7)), Ok(7));
        let call = pin!(pipeline.execute_async(|| async { Ok::<_, ()>(8) }));
        assert_eq!(poll_noop(&mut { call }), Poll::Ready(Ok(8)));
    });
    assert_eq!(bytes, 0, "admitted");

    let handle = registry.bulkhead("alloc-pipeline").unwrap();
    let _held = handle.bulkhead().try_enter().unwrap();
    let (bytes, ()) = allocated_by(|| {
        assert!(matches!(
            pipeline.execute(|| Ok::<_, ()>(7)),
            Err(CallError::Rejected(_))
        ));
        let call = pin!(pipeline.execute_async(|| async { Ok::<_, ()>(8) }));
        assert!(matches!(
            poll_noop(&mut { call }),
            Poll::Ready(Err(CallError::Rejected(_)))
        ));
    });
    assert_eq!(bytes, 0, "rejected");
}

#[test]
fn a_rejection_with_a_subscriber_publishes_without_allocating() {
    let registry = Registry::new();
    let mut events = registry.subscribe();
    let bulkhead = registry
        .bulkhead_policy(
            "alloc-events",
            "t",
            &BulkheadConfig::builder().max_concurrent(1),
        )
        .unwrap();
    let _held = bulkhead.try_enter().unwrap();
    let (bytes, ()) = allocated_by(|| {
        for _ in 0..10 {
            assert!(bulkhead.try_enter().is_err());
        }
    });
    assert_eq!(events.drain().count(), 10);
    assert_eq!(bytes, 0);
}

#[test]
fn a_queued_async_waiter_allocates_nothing_once_the_queue_has_grown() {
    let clock = bulkhead_core::ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    let handed_over = registry
        .bulkhead_policy(
            "alloc-waiting",
            "t",
            &BulkheadConfig::builder()
                .max_concurrent(1)
                .max_wait(std::time::Duration::from_secs(1)),
        )
        .unwrap();
    let hand_over = || {
        let held = handed_over.try_enter().unwrap();
        let mut waiter = handed_over.enter_async();
        assert!(poll_noop(&mut waiter).is_pending());
        drop(held);
        assert!(matches!(poll_noop(&mut waiter), Poll::Ready(Ok(_))));
    };
    // On the system clock, a waiter whose max_wait passes (the timer thread
    // keeps its deadline).
    let timed_out = bulkhead_core::Bulkhead::new(
        "alloc-timeout",
        BulkheadConfig::builder()
            .max_concurrent(1)
            .max_wait(std::time::Duration::from_millis(2))
            .build()
            .unwrap(),
    );
    let time_out = || {
        let held = timed_out.try_enter().unwrap();
        let mut late = timed_out.enter_async();
        while poll_noop(&mut late).is_pending() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        drop(held);
    };
    // The first round grows the wait queue, the clock's sleeper list and the
    // timer's tables; later rounds reuse them.
    hand_over();
    time_out();
    let (bytes, ()) = allocated_by(|| {
        for _ in 0..3 {
            hand_over();
            time_out();
        }
    });
    assert_eq!(bytes, 0);
}

#[test]
fn untriggered_policies_allocate_nothing_sync_or_async() {
    let registry = Registry::new();
    let pipeline = Pipeline::builder(&registry, "alloc-all-five")
        .bulkhead(|b| b.max_concurrent(4))
        .retry(|r| r.max_attempts(3))
        .circuit_breaker(|c| c.minimum_calls(10))
        .rate_limiter(|r| {
            r.limit_for_period(1_000_000)
                .refresh_period(std::time::Duration::from_secs(3600))
        })
        .timeout(|t| t.duration(std::time::Duration::from_secs(60)))
        .build()
        .unwrap();
    let (bytes, ()) = allocated_by(|| {
        for _ in 0..100 {
            assert_eq!(pipeline.execute(|| Ok::<_, ()>(1)), Ok(1));
            let call = pin!(pipeline.execute_async(|| async { Ok::<_, ()>(2) }));
            assert_eq!(poll_noop(&mut { call }), Poll::Ready(Ok(2)));
        }
    });
    assert_eq!(bytes, 0);
}

#[test]
fn adaptive_calls_allocate_nothing_even_when_they_close_a_window() {
    use bulkhead_core::{Adaptive, ManualClock, adaptive::Sampling};
    use std::time::Duration;

    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    let bulkhead = registry
        .bulkhead_policy(
            "alloc-adaptive",
            "t",
            &BulkheadConfig::builder()
                .max_concurrent(64)
                .initial_concurrent(4)
                .adaptive(Adaptive::Gradient2)
                .sampling(Sampling::builder().min_samples(4).build().unwrap()),
        )
        .unwrap();
    // Rounds of calls that keep every slot taken for 10 ms: windows close,
    // probes run, the limit doubles (slow start) and changes.
    let round = |held: &mut Vec<bulkhead_core::OwnedBulkheadPermit>| {
        clock.advance(Duration::from_millis(10));
        held.clear();
        while let Ok(permit) = bulkhead.try_enter_owned() {
            held.push(permit);
        }
    };
    let mut held = Vec::with_capacity(64);
    for _ in 0..50 {
        round(&mut held);
    }
    let before = bulkhead.adaptive().unwrap();
    let (bytes, ()) = allocated_by(|| {
        for _ in 0..200 {
            round(&mut held);
        }
    });
    let after = bulkhead.adaptive().unwrap();
    assert!(after.windows > before.windows + 10, "{before:?} {after:?}");
    assert_eq!(bytes, 0);
}

#[test]
fn an_untriggered_hedge_and_a_budgeted_retry_allocate_nothing() {
    let registry = Registry::new();
    let pipeline = Pipeline::builder(&registry, "alloc-hedge-budget")
        .bulkhead(|b| b.max_concurrent(4))
        .retry(|r| r.max_attempts(3).budget_ratio(0.2))
        .hedge(|h| h.max_hedged(2).delay(std::time::Duration::from_millis(50)))
        .circuit_breaker(|c| c.minimum_calls(10))
        .build()
        .unwrap();
    // The first call starts the clock's ticker (the budget reads it).
    assert_eq!(pipeline.execute(|| Ok::<_, ()>(0)), Ok(0));
    let (bytes, ()) = allocated_by(|| {
        for _ in 0..100 {
            assert_eq!(pipeline.execute(|| Ok::<_, ()>(1)), Ok(1));
            let call = pin!(pipeline.execute_async(|| async { Ok::<_, ()>(2) }));
            assert_eq!(poll_noop(&mut { call }), Poll::Ready(Ok(2)));
        }
    });
    assert_eq!(bytes, 0);
    // A percentile delay learns from every call, allocating nothing.
    let estimated = Pipeline::builder(&registry, "alloc-hedge-p90")
        .hedge(|h| h.delay(bulkhead_core::HedgeDelay::percentile(90.0)))
        .build()
        .unwrap();
    let (bytes, ()) = allocated_by(|| {
        for _ in 0..100 {
            let call = pin!(estimated.execute_async(|| async { Ok::<_, ()>(3) }));
            assert_eq!(poll_noop(&mut { call }), Poll::Ready(Ok(3)));
        }
    });
    assert_eq!(bytes, 0);
    let budget = registry
        .retry("alloc-hedge-budget")
        .unwrap()
        .snapshot()
        .budget;
    assert_eq!(budget.unwrap().first_attempts, 201, "every call counted");
}

#[test]
fn a_retry_the_budget_refuses_allocates_nothing() {
    let registry = Registry::new();
    let pipeline = Pipeline::builder(&registry, "alloc-budget-refused")
        .retry(|r| {
            r.max_attempts(3)
                .wait(std::time::Duration::ZERO)
                .budget_ratio(0.0)
                .budget_min_per_second(0)
        })
        .build()
        .unwrap();
    assert!(pipeline.execute(|| Err::<(), _>(0)).is_err());
    let (bytes, ()) = allocated_by(|| {
        for _ in 0..100 {
            assert_eq!(
                pipeline.execute(|| Err::<(), _>(1)),
                Err(CallError::Inner(1))
            );
        }
    });
    assert_eq!(bytes, 0);
}
