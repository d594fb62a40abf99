//! Sizing from live traffic (Little's law) on ManualClock-driven traffic,
//! and the cost of tracking it being opt-in.

use std::time::Duration;

use bulkhead_core::{BulkheadConfig, ManualClock};
use bulkhead_registry::{Diagnosis, Registry};

const MS: Duration = Duration::from_millis(1);

fn tracked(clock: &ManualClock) -> Registry {
    Registry::builder()
        .clock(clock.clone())
        .track_sizing(true)
        .build()
}

fn bulkhead(registry: &Registry, id: &str, max: u32) -> bulkhead_core::Bulkhead {
    registry
        .bulkhead_policy(id, "test", &BulkheadConfig::builder().max_concurrent(max))
        .unwrap()
}

/// `calls` calls, `at_once` at a time, each holding its slot for `hold`,
/// plus one rejected attempt per round while the bulkhead is full.
fn drive(
    clock: &ManualClock,
    bulkhead: &bulkhead_core::Bulkhead,
    rounds: u32,
    at_once: u32,
    hold: Duration,
    knock: bool,
) {
    for _ in 0..rounds {
        let held: Vec<_> = (0..at_once)
            .map(|_| bulkhead.try_enter().unwrap())
            .collect();
        if knock {
            assert!(bulkhead.try_enter().is_err());
        }
        clock.advance(hold);
        drop(held);
    }
}

#[test]
fn without_tracking_nothing_is_counted_and_the_report_says_so() {
    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    let b = bulkhead(&registry, "untracked", 2);
    drop(b.try_enter().unwrap());
    assert_eq!(b.traffic(), None);
    assert_eq!(registry.snapshot().bulkheads()[0].traffic, None);
    assert_eq!(
        registry.sizing().bulkheads()[0].diagnosis,
        Diagnosis::NotTracked
    );
}

#[test]
fn snapshots_carry_arrivals_admissions_rejections_and_hold_time() {
    let clock = ManualClock::new();
    let registry = tracked(&clock);
    let b = bulkhead(&registry, "counted", 2);
    drive(&clock, &b, 3, 2, 100 * MS, true);
    let traffic = registry
        .bulkhead("counted")
        .unwrap()
        .snapshot()
        .traffic
        .unwrap();
    assert_eq!(
        (traffic.admitted, traffic.rejected, traffic.completed),
        (6, 3, 6)
    );
    assert_eq!(traffic.arrivals(), 9);
    assert_eq!(traffic.total_hold, 600 * MS);
    assert_eq!(traffic.mean_hold(), Some(100 * MS));
}

#[test]
fn littles_law_gives_the_need_and_a_recommendation_with_headroom() {
    let clock = ManualClock::new();
    let registry = tracked(&clock);
    let b = bulkhead(&registry, "fits", 10);
    // 2 calls at a time, 100 ms each, for 1 s: 20 calls/s x 0.1 s = 2 slots.
    drive(&clock, &b, 10, 2, 100 * MS, false);
    let report = registry.sizing();
    let sizing = report.bulkhead("fits").unwrap();
    assert_eq!(sizing.window, Duration::from_secs(1));
    assert!((sizing.arrival_rate - 20.0).abs() < 1e-9, "{sizing:?}");
    assert_eq!(sizing.mean_hold, Some(100 * MS));
    assert!((sizing.need.unwrap() - 2.0).abs() < 1e-9);
    assert_eq!(
        sizing.recommended_max_concurrent,
        Some(3),
        "2 x 1.5 headroom"
    );
    assert_eq!(sizing.diagnosis, Diagnosis::Fits);
    let generous = registry.sizing_with_headroom(3.0);
    let empty = generous.bulkhead("fits").unwrap();
    assert_eq!(empty.diagnosis, Diagnosis::NoTraffic, "a new, empty window");
    assert_eq!(
        empty.recommended_max_concurrent, None,
        "no traffic, no recommendation"
    );
}

#[test]
fn rejecting_before_any_call_completed_points_at_the_dependency_not_the_limit() {
    let clock = ManualClock::new();
    let registry = tracked(&clock);
    let b = bulkhead(&registry, "hung", 2);
    // Two calls that never return, and ten more knocking on the full bulkhead.
    let hung: Vec<_> = (0..2).map(|_| b.try_enter().unwrap()).collect();
    for _ in 0..10 {
        assert!(b.try_enter().is_err());
        clock.advance(100 * MS);
    }
    let sizing = registry.sizing().bulkhead("hung").cloned().unwrap();
    assert_eq!(sizing.mean_hold, None);
    assert_eq!(sizing.diagnosis, Diagnosis::NoneCompleted, "{sizing:?}");
    assert_eq!(sizing.recommended_max_concurrent, None);
    drop(hung);
}

#[test]
fn rejecting_while_the_traffic_needs_more_than_the_limit_is_a_limit_too_low() {
    let clock = ManualClock::new();
    let registry = tracked(&clock);
    let b = bulkhead(&registry, "too-small", 2);
    // 2 admitted and 1 rejected per 100 ms round: 30 arrivals/s x 0.1 s = 3 > 2.
    drive(&clock, &b, 10, 2, 100 * MS, true);
    let sizing = registry.sizing().bulkhead("too-small").cloned().unwrap();
    assert!(
        (sizing.usual_need.unwrap() - 3.0).abs() < 1e-9,
        "{sizing:?}"
    );
    assert_eq!(sizing.diagnosis, Diagnosis::LimitTooLow);
    assert_eq!(sizing.recommended_max_concurrent, Some(5), "ceil(3 x 1.5)");
}

#[test]
fn rejecting_while_the_usual_speed_would_fit_is_a_degrading_dependency() {
    let clock = ManualClock::new();
    let registry = tracked(&clock);
    let b = bulkhead(&registry, "degrading", 4);
    // A healthy second: 1 call at a time, 10 ms each, 100 calls/s.
    drive(&clock, &b, 100, 1, 10 * MS, false);
    assert_eq!(
        registry.sizing().bulkhead("degrading").unwrap().diagnosis,
        Diagnosis::Fits
    );
    // Then the same arrivals find the dependency slow: 4 at a time, 400 ms
    // each, and more knocking on a full bulkhead.
    drive(&clock, &b, 2, 4, 400 * MS, true);
    let sizing = registry.sizing().bulkhead("degrading").cloned().unwrap();
    assert_eq!(sizing.usual_hold, Some(10 * MS));
    assert_eq!(sizing.mean_hold, Some(400 * MS));
    assert!(
        sizing.need.unwrap() > 4.0,
        "at today's speed it needs more: {sizing:?}"
    );
    assert!(
        sizing.usual_need.unwrap() < 4.0,
        "at its usual speed it fits: {sizing:?}"
    );
    assert_eq!(sizing.diagnosis, Diagnosis::DependencyDegrading);
}

#[test]
fn calls_that_stop_waiting_for_a_slot_are_arrivals_too() {
    let clock = ManualClock::new();
    let registry = tracked(&clock);
    let b = registry
        .bulkhead_policy(
            "waited",
            "test",
            &BulkheadConfig::builder()
                .max_concurrent(1)
                .max_wait(Duration::from_secs(10)),
        )
        .unwrap();
    let held = b.try_enter().unwrap();
    // A sync wait cut short by an outer deadline (a timeout's) ...
    assert!(b.enter_until(Some(registry.clock().now())).is_err());
    // ... and an async wait dropped while queued.
    let mut waiting = Box::pin(b.enter_async());
    let polled = std::future::Future::poll(
        waiting.as_mut(),
        &mut std::task::Context::from_waker(std::task::Waker::noop()),
    );
    assert!(polled.is_pending());
    assert_eq!(b.waiting_calls(), 1);
    drop(waiting);
    drop(held);
    let traffic = b.traffic().unwrap();
    assert_eq!(
        (traffic.admitted, traffic.rejected, traffic.abandoned),
        (1, 0, 2),
        "{traffic:?}"
    );
    assert_eq!(traffic.arrivals(), 3);
}

#[test]
fn a_bulkhead_whose_waiters_give_up_does_not_fit() {
    let clock = ManualClock::new();
    let registry = tracked(&clock);
    let b = registry
        .bulkhead_policy(
            "w",
            "t",
            &BulkheadConfig::builder()
                .max_concurrent(1)
                .max_wait(Duration::from_secs(10)),
        )
        .unwrap();
    for _ in 0..10 {
        let held = b.try_enter().unwrap();
        // A caller behind a timeout gives up waiting for the slot.
        assert!(b.enter_until(Some(registry.clock().now())).is_err());
        clock.advance(100 * MS);
        drop(held);
    }
    let sizing = registry.sizing().bulkhead("w").cloned().unwrap();
    assert_eq!(sizing.diagnosis, Diagnosis::LimitTooLow, "{sizing:?}");
}

#[test]
fn a_window_in_which_no_time_passed_says_the_rate_is_unknown() {
    let clock = ManualClock::new();
    let registry = tracked(&clock);
    let b = bulkhead(&registry, "instant", 1);
    // The clock never moves: one call completes while another is rejected.
    let held = b.try_enter().unwrap();
    assert!(b.try_enter().is_err());
    drop(held);
    let sizing = registry.sizing().bulkhead("instant").cloned().unwrap();
    assert_eq!(sizing.window, Duration::ZERO);
    assert_eq!(sizing.traffic.unwrap().completed, 1, "a call did complete");
    assert_ne!(sizing.diagnosis, Diagnosis::NoneCompleted, "{sizing:?}");
    assert_eq!(sizing.diagnosis, Diagnosis::NoTimePassed, "{sizing:?}");
    assert_eq!(sizing.usual_need, None);
    assert_eq!(sizing.recommended_max_concurrent, None);

    // The next window with a length has a rate, and a diagnosis from it.
    let held = b.try_enter().unwrap();
    assert!(b.try_enter().is_err());
    clock.advance(100 * MS);
    drop(held);
    let sizing = registry.sizing().bulkhead("instant").cloned().unwrap();
    assert!((sizing.arrival_rate - 20.0).abs() < 1e-9, "{sizing:?}");
    assert_ne!(sizing.diagnosis, Diagnosis::NoTimePassed);
}

#[test]
fn the_recommendation_never_exceeds_the_largest_limit_and_can_be_applied() {
    let clock = ManualClock::new();
    let registry = tracked(&clock);
    let b = bulkhead(&registry, "huge", 1);
    // A first window makes the usual hold time a long one ...
    let held = b.try_enter().unwrap();
    clock.advance(Duration::from_secs(1_000_000));
    drop(held);
    registry.sizing();
    // ... and a burst of rejections in a nanosecond then "needs" far more
    // slots than any bulkhead can have (2e9 arrivals/s x 1e6 s).
    let held = b.try_enter().unwrap();
    assert!(b.try_enter().is_err());
    clock.advance(Duration::from_nanos(1));
    let sizing = registry.sizing().bulkhead("huge").cloned().unwrap();
    drop(held);
    assert!(sizing.usual_need.unwrap() > 1e15, "{sizing:?}");
    assert_eq!(
        sizing.recommended_max_concurrent,
        Some(BulkheadConfig::MAX_CONCURRENT)
    );
    let handle = registry.bulkhead("huge").unwrap();
    handle
        .set_max_concurrent(sizing.recommended_max_concurrent.unwrap())
        .unwrap();
    assert_eq!(handle.max_concurrent(), BulkheadConfig::MAX_CONCURRENT);
}
