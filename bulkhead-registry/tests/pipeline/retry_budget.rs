//! The retry budget (`budget_ratio`, `budget_min_per_second`,
//! `budget_window`): over the window, a retry instance's retries stay
//! within `budget_ratio` times its first attempts plus the minimum; a retry
//! the budget refuses ends the call with its last failure and publishes
//! `BudgetExhausted`. Deterministic on a `ManualClock`, and a retry storm
//! from threads and tasks on the system clock.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use bulkhead_core::{CallError, Event, ManualClock, RetryEventKind};
use bulkhead_registry::{Pipeline, Registry};

fn budgeted(registry: &Registry, id: &str, ratio: f64, min_per_second: u32) -> Pipeline {
    Pipeline::builder(registry, id)
        .retry(|r| {
            r.max_attempts(3)
                .wait(Duration::ZERO)
                .budget_ratio(ratio)
                .budget_min_per_second(min_per_second)
                .budget_window(Duration::from_secs(10))
        })
        .build()
        .unwrap()
}

#[test]
fn a_retry_the_budget_refuses_ends_the_call_with_its_last_error_and_says_so() {
    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    let pipeline = budgeted(&registry, "budget-refused", 0.5, 0);
    let mut events = registry.subscribe();

    // Two calls that succeed earn one retry.
    for _ in 0..2 {
        assert_eq!(pipeline.execute(|| Ok::<_, &str>(())), Ok(()));
    }
    // The third call's first attempt earns half of one more: it gets the
    // one retry (2 attempts), then the budget refuses the third.
    let mut attempts = 0;
    let out = pipeline.execute(|| {
        attempts += 1;
        Err::<(), _>(if attempts == 1 { "first" } else { "second" })
    });
    assert_eq!(out, Err(CallError::Inner("second")), "the last error");
    assert_eq!(attempts, 2);
    let kinds: Vec<RetryEventKind> = events
        .drain()
        .filter_map(|event| match event {
            Event::Retry(event) => Some(event.kind),
            _ => None,
        })
        .collect();
    assert!(matches!(
        kinds[..],
        [
            RetryEventKind::Retrying { attempt: 1, .. },
            RetryEventKind::BudgetExhausted {
                attempts: 2,
                rejection: None
            }
        ]
    ));
    let snapshot = registry.retry("budget-refused").unwrap().snapshot();
    assert_eq!(snapshot.budget_ratio, Some(0.5));
    let budget = snapshot.budget.unwrap();
    assert_eq!(
        (budget.first_attempts, budget.retries, budget.available),
        (3, 1, 0)
    );
}

#[test]
fn the_window_slides_on_the_registrys_clock() {
    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    let pipeline = budgeted(&registry, "budget-window", 1.0, 0);
    let failing = |attempts: &mut u32| {
        pipeline.execute(|| {
            *attempts += 1;
            Err::<(), _>("down")
        })
    };
    let mut attempts = 0;
    // Each call earns one retry and takes it: 2 attempts each.
    for _ in 0..5 {
        assert!(failing(&mut attempts).is_err());
    }
    assert_eq!(attempts, 10);
    // Ten seconds later those calls are out of the window: the budget
    // counts the new ones alone.
    clock.advance(Duration::from_secs(10));
    let budget = registry.retry("budget-window").unwrap().snapshot().budget;
    assert_eq!(budget.unwrap().first_attempts, 0);
    let mut attempts = 0;
    assert!(failing(&mut attempts).is_err());
    assert_eq!(attempts, 2);
}

#[test]
fn the_minimum_lets_a_quiet_instance_retry() {
    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    // 1 retry per second over 10 s: 10 retries, whatever the first attempts.
    let pipeline = budgeted(&registry, "budget-minimum", 0.0, 1);
    let mut attempts = 0;
    for _ in 0..10 {
        let _ = pipeline.execute(|| {
            attempts += 1;
            Err::<(), _>("down")
        });
    }
    // 10 first attempts and 10 retries: the first five calls retried twice.
    assert_eq!(attempts, 20);
}

#[test]
fn without_a_budget_every_attempt_is_made() {
    let registry = Registry::new();
    let pipeline = Pipeline::builder(&registry, "budget-none")
        .retry(|r| r.max_attempts(3).wait(Duration::ZERO))
        .build()
        .unwrap();
    let mut attempts = 0;
    for _ in 0..100 {
        let _ = pipeline.execute(|| {
            attempts += 1;
            Err::<(), _>("down")
        });
    }
    assert_eq!(attempts, 300);
    assert!(
        registry
            .retry("budget-none")
            .unwrap()
            .snapshot()
            .budget
            .is_none()
    );
}

/// Attempts and calls of a storm against a dependency that fails every
/// call: 8 threads and 64 tasks, each making `calls` calls.
fn storm(pipeline: &Pipeline, calls: u64) -> (u64, u64) {
    let attempts = Arc::new(AtomicU64::new(0));
    let first = Arc::new(AtomicU64::new(0));
    let barrier = Barrier::new(8);
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                barrier.wait();
                for _ in 0..calls {
                    first.fetch_add(1, Relaxed);
                    let _ = pipeline.execute(|| {
                        attempts.fetch_add(1, Relaxed);
                        Err::<(), _>("down")
                    });
                }
            });
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        runtime.block_on(async {
            let tasks: Vec<_> = (0..64)
                .map(|_| {
                    let (pipeline, attempts, first) =
                        (pipeline.clone(), Arc::clone(&attempts), Arc::clone(&first));
                    tokio::spawn(async move {
                        for _ in 0..calls {
                            first.fetch_add(1, Relaxed);
                            let _ = pipeline
                                .execute_async(|| {
                                    attempts.fetch_add(1, Relaxed);
                                    async { Err::<(), _>("down") }
                                })
                                .await;
                            tokio::task::yield_now().await;
                        }
                    })
                })
                .collect();
            for task in tasks {
                task.await.unwrap();
            }
        });
    });
    (first.load(Relaxed), attempts.load(Relaxed))
}

#[test]
fn a_retry_storm_stays_within_the_budget_and_without_one_triples_the_load() {
    let registry = Registry::new();
    // The defaults but for the ratio: 10 retries a second over 10 s.
    let budgeted = Pipeline::builder(&registry, "storm-budgeted")
        .retry(|r| r.max_attempts(3).wait(Duration::ZERO).budget_ratio(0.2))
        .build()
        .unwrap();
    let unbudgeted = Pipeline::builder(&registry, "storm-unbudgeted")
        .retry(|r| r.max_attempts(3).wait(Duration::ZERO))
        .build()
        .unwrap();
    let (first, attempts) = storm(&budgeted, 2_000);
    assert_eq!(first, 72 * 2_000);
    // The storm takes far less than the 10 s window: the minimum is 100.
    let bound = 1.2 * first as f64 + 100.0;
    assert!(
        attempts as f64 <= bound,
        "{attempts} attempts for {first} calls: more than {bound}"
    );
    assert!(attempts > first, "the budget let some retries through");
    let (first, attempts) = storm(&unbudgeted, 2_000);
    assert_eq!(attempts, 3 * first);
}
