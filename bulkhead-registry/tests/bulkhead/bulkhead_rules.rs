//! The bulkhead rules of `docs/bulkhead.md` (B1-B8, B11-B12), one test or
//! more per rule, through the `Bulkhead` primitive and `Pipeline`.

use crate::support;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::thread;
use std::time::Duration;

use bulkhead_core::{
    Bulkhead, BulkheadConfig, BulkheadEventKind, CallError, Event, ManualClock, Rejection,
};
use bulkhead_registry::{Pipeline, Registry};
use support::{CountingWaker, bulkhead, poll_noop, poll_once, wait_until};

fn registry(clock: &ManualClock) -> Registry {
    Registry::builder().clock(clock.clone()).build()
}

// ---------------------------------------------------------------- B1 Slots

#[test]
fn b1_a_call_holds_a_slot_while_it_runs_and_gives_it_back_when_it_returns() {
    let registry = Registry::new();
    let pipeline = Pipeline::builder(&registry, "b1-returns")
        .bulkhead(|b| b.max_concurrent(2))
        .build()
        .unwrap();
    let handle = registry.bulkhead("b1-returns").unwrap();
    let seen = pipeline.execute(|| Ok::<_, ()>(handle.concurrent_calls()));
    assert_eq!(seen, Ok(1));
    assert_eq!(handle.concurrent_calls(), 0);
    let failed = pipeline.execute(|| Err::<(), _>("boom"));
    assert_eq!(failed, Err(CallError::Inner("boom")));
    assert_eq!(handle.concurrent_calls(), 0, "an error gives the slot back");
}

#[test]
fn b1_a_slot_is_given_back_when_the_call_panics() {
    let registry = Registry::new();
    let pipeline = Pipeline::builder(&registry, "b1-panics")
        .bulkhead(|b| b.max_concurrent(1))
        .build()
        .unwrap();
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pipeline.execute(|| -> Result<(), ()> { panic!("the dependency blew up") })
    }));
    assert!(unwound.is_err());
    let handle = registry.bulkhead("b1-panics").unwrap();
    assert_eq!(handle.concurrent_calls(), 0);
    assert!(
        pipeline.execute(|| Ok::<_, ()>(())).is_ok(),
        "the slot is usable again"
    );
}

#[test]
fn b1_never_more_than_max_concurrent_calls_hold_a_slot() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let bulkhead = bulkhead(&registry, "b1-max", 3, Duration::from_secs(3600));
    let inside = AtomicU32::new(0);
    let most = AtomicU32::new(0);
    thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..500 {
                    let _permit = bulkhead.enter().unwrap();
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    thread::yield_now();
                    inside.fetch_sub(1, Ordering::SeqCst);
                }
            });
        }
    });
    assert_eq!(most.load(Ordering::SeqCst), 3);
    assert_eq!(bulkhead.concurrent_calls(), 0);
}

// --------------------------------------------------------------- B2 Reject

#[test]
fn b2_a_full_bulkhead_with_zero_max_wait_rejects_at_once_without_calling() {
    let registry = Registry::new();
    let pipeline = Pipeline::builder(&registry, "b2")
        .bulkhead(|b| b.max_concurrent(1))
        .build()
        .unwrap();
    let handle = registry.bulkhead("b2").unwrap();
    let _held = handle.bulkhead().try_enter().unwrap();
    let mut called = false;
    let outcome = pipeline.execute(|| {
        called = true;
        Ok::<_, ()>(())
    });
    match outcome {
        Err(CallError::Rejected(Rejection::BulkheadFull(full))) => {
            assert_eq!(full.instance(), "b2")
        }
        other => panic!("expected BulkheadFull, got {other:?}"),
    }
    assert!(!called, "the method is not called");
}

// ------------------------------------------------------------ B3 Sync wait

#[test]
fn b3_a_sync_caller_blocks_until_a_slot_is_released() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let bulkhead = bulkhead(&registry, "b3-blocks", 1, Duration::from_secs(1));
    let held = bulkhead.try_enter().unwrap();
    thread::scope(|s| {
        let waiter = s.spawn(|| bulkhead.enter().map(|_| ()));
        wait_until("the thread waits", || bulkhead.waiting_calls() == 1);
        assert!(!waiter.is_finished());
        drop(held);
        assert_eq!(waiter.join().unwrap(), Ok(()));
    });
    assert_eq!(
        (bulkhead.concurrent_calls(), bulkhead.waiting_calls()),
        (0, 0)
    );
}

#[test]
fn b3_a_sync_caller_is_rejected_when_max_wait_passes() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let bulkhead = bulkhead(&registry, "b3-rejected", 1, Duration::from_millis(250));
    let _held = bulkhead.try_enter().unwrap();
    thread::scope(|s| {
        let waiter = s.spawn(|| bulkhead.enter().map(|_| ()));
        wait_until("the thread waits", || bulkhead.waiting_calls() == 1);
        clock.advance(Duration::from_millis(249));
        wait_until("the thread parks on the clock", || clock.sleepers() == 1);
        assert!(
            !waiter.is_finished(),
            "1 ms before its deadline it still waits"
        );
        clock.advance(Duration::from_millis(1));
        let full = waiter.join().unwrap().unwrap_err();
        assert_eq!(full.instance(), "b3-rejected");
    });
    assert_eq!(bulkhead.waiting_calls(), 0);
    assert_eq!(bulkhead.concurrent_calls(), 1, "only the held slot");
}

#[test]
fn b3_on_the_system_clock_a_sync_wait_ends_after_max_wait() {
    let bulkhead = Bulkhead::new(
        "b3-system",
        BulkheadConfig::builder()
            .max_concurrent(1)
            .max_wait(Duration::from_millis(20))
            .build()
            .unwrap(),
    );
    let _held = bulkhead.try_enter().unwrap();
    let started = std::time::Instant::now();
    assert!(bulkhead.enter().is_err());
    assert!(
        started.elapsed() >= Duration::from_millis(20),
        "it waited max_wait first"
    );
}

// ------------------------------------------------- B4 Caller's own thread

#[test]
fn b4_the_call_runs_on_the_callers_thread() {
    let registry = Registry::new();
    let pipeline = Pipeline::builder(&registry, "b4")
        .bulkhead(|b| b)
        .build()
        .unwrap();
    let caller = thread::current().id();
    assert_eq!(
        pipeline.execute(|| Ok::<_, ()>(thread::current().id())),
        Ok(caller)
    );
}

// ------------------------------------------------------------- B5 Disabled

#[test]
fn b5_a_disabled_bulkhead_lets_every_call_through_and_counts_nothing() {
    let registry = Registry::new();
    let pipeline = Pipeline::builder(&registry, "b5")
        .bulkhead(|b| b.max_concurrent(1).enabled(false))
        .build()
        .unwrap();
    let handle = registry.bulkhead("b5").unwrap();
    let held: Vec<_> = (0..10)
        .map(|_| handle.bulkhead().try_enter().unwrap())
        .collect();
    assert!(held.iter().all(|p| !p.holds_slot()));
    assert_eq!(
        pipeline.execute(|| Ok::<_, ()>(handle.concurrent_calls())),
        Ok(0)
    );
    assert_eq!(handle.snapshot().concurrent_calls, 0);
    assert!(!handle.snapshot().enabled);
}

// ---------------------------------------------------------------- B6 Async

#[tokio::test]
async fn b6_an_async_call_holds_its_slot_until_its_future_completes() {
    let registry = Registry::new();
    let pipeline = Pipeline::builder(&registry, "b6-holds")
        .bulkhead(|b| b.max_concurrent(1))
        .build()
        .unwrap();
    let handle = registry.bulkhead("b6-holds").unwrap();
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let mut released = Some(released);
    let call = pipeline.execute_async(move || {
        let released = released.take().unwrap();
        async move { released.await.map_err(|_| "sender dropped") }
    });
    assert_eq!(
        handle.concurrent_calls(),
        0,
        "nothing happens before the first poll"
    );
    let mut call = Box::pin(call);
    assert!(poll_noop(&mut call).is_pending());
    assert_eq!(
        handle.concurrent_calls(),
        1,
        "the slot is held while the future is pending"
    );
    release.send(()).unwrap();
    assert_eq!(call.await, Ok(()));
    assert_eq!(handle.concurrent_calls(), 0);
}

#[test]
fn b6_with_zero_max_wait_an_async_call_is_rejected_on_first_poll() {
    let bulkhead = Bulkhead::new(
        "b6-zero",
        BulkheadConfig::builder().max_concurrent(1).build().unwrap(),
    );
    let _held = bulkhead.try_enter().unwrap();
    let mut enter = bulkhead.enter_async();
    match poll_noop(&mut enter) {
        Poll::Ready(Err(full)) => assert_eq!(full.instance(), "b6-zero"),
        other => panic!("expected an immediate rejection, got {other:?}"),
    }
    assert_eq!(bulkhead.waiting_calls(), 0);
}

#[test]
fn b6_queued_async_callers_receive_released_slots_in_arrival_order() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let bulkhead = bulkhead(&registry, "b6-fifo", 1, Duration::from_secs(1));
    let held = bulkhead.try_enter().unwrap();
    let wakers: Vec<_> = (0..3).map(|_| CountingWaker::new()).collect();
    let mut waiters: Vec<_> = (0..3).map(|_| bulkhead.enter_async()).collect();
    for (waiter, (_, waker)) in waiters.iter_mut().zip(&wakers) {
        assert!(poll_once(waiter, waker).is_pending());
    }
    assert_eq!(bulkhead.waiting_calls(), 3);

    // A newcomer does not overtake the queue.
    assert!(bulkhead.try_enter().is_err());

    drop(held);
    assert_eq!(
        wakers.iter().map(|(c, _)| c.wakes()).collect::<Vec<_>>(),
        [1, 0, 0]
    );
    assert_eq!(bulkhead.concurrent_calls(), 1, "handed over, never freed");
    let Poll::Ready(Ok(first)) = poll_once(&mut waiters[0], &wakers[0].1) else {
        panic!("the oldest waiter gets the slot");
    };
    assert!(
        poll_once(&mut waiters[2], &wakers[2].1).is_pending(),
        "the youngest keeps waiting"
    );
    drop(first);
    assert_eq!(
        wakers.iter().map(|(c, _)| c.wakes()).collect::<Vec<_>>(),
        [1, 1, 0]
    );
    assert!(matches!(
        poll_once(&mut waiters[1], &wakers[1].1),
        Poll::Ready(Ok(_))
    ));
    assert_eq!(wakers[2].0.wakes(), 1, "then the last one");
    assert!(matches!(
        poll_once(&mut waiters[2], &wakers[2].1),
        Poll::Ready(Ok(_))
    ));
    drop(waiters);
    assert_eq!(
        (bulkhead.concurrent_calls(), bulkhead.waiting_calls()),
        (0, 0)
    );
}

#[tokio::test(flavor = "current_thread")]
async fn b6_an_async_waiter_never_blocks_its_thread() {
    // One thread runs both the waiter and the call that releases the slot:
    // if waiting blocked the thread, this test would never finish.
    let registry = Registry::new();
    let pipeline = Pipeline::builder(&registry, "b6-nonblocking")
        .bulkhead(|b| b.max_concurrent(1).max_wait(Duration::from_secs(60)))
        .build()
        .unwrap();
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let mut released = Some(released);
    let slow = pipeline.clone();
    let first = tokio::spawn(async move {
        slow.execute_async(move || {
            let released = released.take().unwrap();
            async move { released.await.map_err(|_| ()) }
        })
        .await
    });
    tokio::task::yield_now().await;
    let second = tokio::spawn({
        let pipeline = pipeline.clone();
        async move {
            pipeline
                .execute_async(|| async { Ok::<_, ()>("second") })
                .await
        }
    });
    tokio::task::yield_now().await;
    assert_eq!(
        registry.bulkhead("b6-nonblocking").unwrap().waiting_calls(),
        1
    );
    release.send(()).unwrap();
    assert_eq!(first.await.unwrap(), Ok(()));
    assert_eq!(second.await.unwrap(), Ok("second"));
}

#[test]
fn b6_an_async_waiter_is_rejected_when_max_wait_passes_on_the_clock() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let bulkhead = bulkhead(&registry, "b6-deadline", 1, Duration::from_secs(1));
    let _held = bulkhead.try_enter().unwrap();
    let (counter, waker) = CountingWaker::new();
    let mut waiter = bulkhead.enter_async();
    assert!(poll_once(&mut waiter, &waker).is_pending());
    clock.advance(Duration::from_millis(999));
    assert_eq!(counter.wakes(), 0);
    assert!(poll_once(&mut waiter, &waker).is_pending());
    clock.advance(Duration::from_millis(1));
    assert_eq!(counter.wakes(), 1, "advancing the clock wakes the waiter");
    assert!(matches!(
        poll_once(&mut waiter, &waker),
        Poll::Ready(Err(_))
    ));
    assert_eq!(bulkhead.waiting_calls(), 0);
}

#[test]
fn b6_a_dropped_queued_waiter_leaves_the_queue_and_never_runs() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let pipeline = Pipeline::builder(&registry, "b6-dropped")
        .bulkhead(|b| b.max_concurrent(1).max_wait(Duration::from_secs(1)))
        .build()
        .unwrap();
    let handle = registry.bulkhead("b6-dropped").unwrap();
    let held = handle.bulkhead().try_enter().unwrap();
    let ran = Arc::new(AtomicBool::new(false));
    let mut call = Box::pin(pipeline.execute_async({
        let ran = Arc::clone(&ran);
        move || {
            ran.store(true, Ordering::SeqCst);
            async { Ok::<_, ()>(()) }
        }
    }));
    assert!(poll_noop(&mut call).is_pending());
    assert_eq!(handle.waiting_calls(), 1);
    drop(call);
    assert_eq!(handle.waiting_calls(), 0, "it left the queue at once");
    drop(held);
    assert_eq!(
        handle.concurrent_calls(),
        0,
        "the released slot went to nobody"
    );
    assert!(!ran.load(Ordering::SeqCst));
}

#[test]
fn b6_dropping_a_pending_call_frees_its_slot_at_once() {
    let registry = Registry::new();
    let pipeline = Pipeline::builder(&registry, "b6-cancel-running")
        .bulkhead(|b| b.max_concurrent(1))
        .build()
        .unwrap();
    let mut call = Box::pin(pipeline.execute_async(std::future::pending::<Result<(), ()>>));
    assert!(poll_noop(&mut call).is_pending());
    let handle = registry.bulkhead("b6-cancel-running").unwrap();
    assert_eq!(handle.concurrent_calls(), 1);
    drop(call);
    assert_eq!(handle.concurrent_calls(), 0);
}

#[test]
fn b6_a_waiter_dropped_after_being_handed_a_slot_passes_it_on() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let bulkhead = bulkhead(&registry, "b6-pass-on", 1, Duration::from_secs(1));
    let held = bulkhead.try_enter().unwrap();
    let mut first = bulkhead.enter_async();
    let mut second = bulkhead.enter_async();
    assert!(poll_noop(&mut first).is_pending());
    assert!(poll_noop(&mut second).is_pending());
    drop(held); // handed to `first`, which never picks it up
    drop(first);
    assert!(
        matches!(poll_noop(&mut second), Poll::Ready(Ok(_))),
        "the slot went on to the next waiter"
    );
    drop(second);
    assert_eq!(
        (bulkhead.concurrent_calls(), bulkhead.waiting_calls()),
        (0, 0)
    );
}

#[test]
fn b6_waiters_that_time_out_keep_no_slots() {
    // The known failure: timed-out waiters stay queued, later receive slots
    // nobody uses, and capacity falls to zero.
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let bulkhead = bulkhead(&registry, "b6-timeouts", 2, Duration::from_millis(10));
    for round in 0..50 {
        let a = bulkhead.try_enter().unwrap();
        let b = bulkhead.try_enter().unwrap();
        let mut waiters: Vec<_> = (0..5).map(|_| bulkhead.enter_async()).collect();
        for w in &mut waiters {
            assert!(poll_noop(w).is_pending());
        }
        clock.advance(Duration::from_millis(10));
        for w in &mut waiters {
            assert!(matches!(poll_noop(w), Poll::Ready(Err(_))), "round {round}");
        }
        drop((a, b));
        assert_eq!(
            (bulkhead.concurrent_calls(), bulkhead.waiting_calls()),
            (0, 0)
        );
    }
    let all: Vec<_> = (0..2).map(|_| bulkhead.try_enter()).collect();
    assert!(
        all.iter().all(Result::is_ok),
        "full capacity is still there"
    );
}

// -------------------------------------------------------- B7 Shared slots

#[test]
fn b7_sync_and_async_callers_share_the_same_slots() {
    let registry = Registry::new();
    let bulkhead = bulkhead(&registry, "b7-shared", 2, Duration::ZERO);
    let sync_slot = bulkhead.enter().unwrap();
    let mut enter = bulkhead.enter_async();
    let Poll::Ready(Ok(async_slot)) = poll_noop(&mut enter) else {
        panic!()
    };
    assert_eq!(bulkhead.concurrent_calls(), 2);
    assert!(bulkhead.enter().is_err());
    assert!(matches!(
        poll_noop(&mut bulkhead.enter_async()),
        Poll::Ready(Err(_))
    ));
    drop((sync_slot, async_slot));
}

#[test]
fn b7_released_slots_alternate_between_async_waiters_and_blocked_threads() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let bulkhead = bulkhead(&registry, "b7-alternate", 1, Duration::from_secs(60));
    let order = Arc::new(Mutex::new(Vec::new()));
    let held = bulkhead.try_enter().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .build()
        .unwrap();
    // Each admitted caller records itself, then gives its slot back, which
    // hands it to the next waiter: the records are the order of hand-offs.
    let tasks: Vec<_> = (1..=3)
        .map(|queued| {
            let (bulkhead2, order) = (bulkhead.clone(), Arc::clone(&order));
            let task = runtime.spawn(async move {
                let _slot = bulkhead2.enter_async().await.unwrap();
                order.lock().unwrap().push("task");
            });
            wait_until("the task waits", || bulkhead.waiting_calls() == queued);
            task
        })
        .collect();
    thread::scope(|s| {
        for queued in 4..=6 {
            s.spawn(|| {
                let _slot = bulkhead.enter().unwrap();
                order.lock().unwrap().push("thread");
            });
            wait_until("the thread waits", || bulkhead.waiting_calls() == queued);
        }
        drop(held);
    });
    for task in tasks {
        runtime.block_on(task).unwrap();
    }
    let order = order.lock().unwrap().clone();
    assert_eq!(
        order,
        ["task", "thread", "task", "thread", "task", "thread"]
    );
    assert_eq!(
        (bulkhead.concurrent_calls(), bulkhead.waiting_calls()),
        (0, 0)
    );
}

// ----------------------------------------------------------------- B8 Clock

#[test]
fn b8_a_waiter_on_a_manual_clock_waits_as_long_as_the_clock_does_not_move() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let bulkhead = bulkhead(&registry, "b8-still", 1, Duration::from_millis(1));
    let held = bulkhead.try_enter().unwrap();
    thread::scope(|s| {
        let sync_waiter = s.spawn(|| bulkhead.enter().map(|_| ()));
        let mut async_waiter = bulkhead.enter_async();
        assert!(poll_noop(&mut async_waiter).is_pending());
        wait_until("both wait", || bulkhead.waiting_calls() == 2);
        // Far more real time than max_wait passes; the clock does not move.
        thread::sleep(Duration::from_millis(50));
        assert!(!sync_waiter.is_finished());
        assert!(poll_noop(&mut async_waiter).is_pending());
        assert_eq!(bulkhead.waiting_calls(), 2);
        // And a released slot still reaches them.
        drop(held);
        let Poll::Ready(Ok(slot)) = poll_noop(&mut async_waiter) else {
            panic!("the async waiter got the slot first")
        };
        drop(slot);
        assert_eq!(sync_waiter.join().unwrap(), Ok(()));
    });
}

#[test]
fn b8_advancing_a_manual_clock_rejects_every_waiter_past_its_deadline() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let bulkhead = bulkhead(&registry, "b8-advance", 1, Duration::from_secs(1));
    let _held = bulkhead.try_enter().unwrap();
    thread::scope(|s| {
        let sync_waiters: Vec<_> = (0..2)
            .map(|_| s.spawn(|| bulkhead.enter().map(|_| ())))
            .collect();
        let mut async_waiter = bulkhead.enter_async();
        assert!(poll_noop(&mut async_waiter).is_pending());
        wait_until("all wait", || bulkhead.waiting_calls() == 3);
        clock.advance(Duration::from_secs(1));
        for waiter in sync_waiters {
            assert!(waiter.join().unwrap().is_err());
        }
        assert!(matches!(poll_noop(&mut async_waiter), Poll::Ready(Err(_))));
    });
    assert_eq!(bulkhead.waiting_calls(), 0);
}

// ----------------------------------------------------------------- B12 Events

#[test]
fn b12_a_rejection_publishes_an_event_and_an_admitted_call_publishes_none() {
    let registry = Registry::new();
    let mut events = registry.subscribe();
    let pipeline = Pipeline::builder(&registry, "b12")
        .bulkhead(|b| b.max_concurrent(1))
        .build()
        .unwrap();
    assert!(pipeline.execute(|| Ok::<_, ()>(())).is_ok());
    assert_eq!(events.try_recv(), None, "admitted calls publish nothing");
    let handle = registry.bulkhead("b12").unwrap();
    let _held = handle.bulkhead().try_enter().unwrap();
    assert!(pipeline.execute(|| Ok::<_, ()>(())).is_err());
    match events.try_recv() {
        Some(Event::Bulkhead(event)) => {
            assert_eq!(event.instance, "b12");
            assert_eq!(
                event.kind,
                BulkheadEventKind::Rejected {
                    max_concurrent: 1,
                    waited: false
                }
            );
        }
        other => panic!("expected a rejection event, got {other:?}"),
    }
    assert_eq!(events.try_recv(), None);
}

/// A rejection with nobody listening returns at once without publishing
/// (the quiet path); a subscriber that comes later sees every rejection
/// from then on, by each way in, and once it leaves the rejections are
/// quiet again. (Whether the quiet path made a call or not is not
/// observable here; BENCHMARKS.md measures that. This guards what a
/// listener sees across it.)
#[test]
fn b12_rejections_publish_exactly_while_someone_listens() {
    let registry = Registry::new();
    let bulkhead = bulkhead(&registry, "b12-listen", 1, Duration::ZERO);
    let _held = bulkhead.try_enter().unwrap();
    let reject_three_ways = || {
        assert_eq!(bulkhead.try_enter().unwrap_err().instance(), "b12-listen");
        assert_eq!(bulkhead.enter().unwrap_err().instance(), "b12-listen");
        match poll_noop(&mut std::pin::pin!(bulkhead.enter_async())) {
            Poll::Ready(Err(full)) => assert_eq!(full.instance(), "b12-listen"),
            other => panic!("expected a rejection, got {other:?}"),
        }
    };
    reject_three_ways();
    let mut events = registry.subscribe();
    assert_eq!(events.try_recv(), None, "nobody listened before");
    reject_three_ways();
    let published = events.drain().count();
    assert_eq!(published, 3, "one event per rejection while listened to");
    drop(events);
    reject_three_ways();
    let mut late = registry.subscribe();
    assert_eq!(late.try_recv(), None);
}

#[test]
fn b12_a_subscriber_that_falls_behind_loses_old_events_without_slowing_callers() {
    let registry = Registry::builder().event_capacity(4).build();
    let mut events = registry.subscribe();
    let bulkhead = bulkhead(&registry, "b12-lag", 1, Duration::ZERO);
    let _held = bulkhead.try_enter().unwrap();
    for _ in 0..10 {
        assert!(bulkhead.try_enter().is_err());
    }
    assert_eq!(events.drain().count(), 4);
    assert_eq!(events.missed(), 6);
}

#[tokio::test]
async fn b6_on_the_system_clock_an_async_waiter_is_rejected_when_max_wait_passes() {
    let bulkhead = Bulkhead::new(
        "b6-system",
        BulkheadConfig::builder()
            .max_concurrent(1)
            .max_wait(Duration::from_millis(20))
            .build()
            .unwrap(),
    );
    let _held = bulkhead.try_enter().unwrap();
    // The outer timeout only turns a hang into a failure: it must not be what
    // completes the wait (it would answer `Err(Elapsed)`).
    let outcome = tokio::time::timeout(Duration::from_secs(30), bulkhead.enter_async()).await;
    assert!(
        matches!(outcome, Ok(Err(_))),
        "the timer rejected the waiter: {outcome:?}"
    );
    assert_eq!(bulkhead.waiting_calls(), 0);
}

#[test]
fn a_clock_that_panics_while_a_caller_queues_leaves_no_ghost_waiter() {
    #[derive(Debug)]
    struct PanickingClock(ManualClock);
    impl bulkhead_core::Clock for PanickingClock {
        fn now(&self) -> std::time::Instant {
            self.0.now()
        }
        fn sleep_until(&self, _: std::time::Instant) -> bulkhead_core::Sleep {
            panic!("this clock cannot sleep")
        }
        fn park_until(&self, deadline: std::time::Instant) {
            self.0.park_until(deadline);
        }
    }
    let registry = Registry::builder()
        .clock(PanickingClock(ManualClock::new()))
        .build();
    let bulkhead = bulkhead(&registry, "ghost", 1, Duration::from_secs(1));
    let held = bulkhead.try_enter().unwrap();
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = poll_noop(&mut bulkhead.enter_async());
    }));
    assert!(unwound.is_err());
    assert_eq!(bulkhead.waiting_calls(), 0);
    drop(held);
    assert!(
        bulkhead.try_enter().is_ok(),
        "the released slot is free, not handed to a ghost"
    );
}

#[tokio::test]
async fn b12_an_event_stream_ends_once_the_registry_and_its_policies_are_gone() {
    let registry = Registry::new();
    let mut events = registry.subscribe();
    let bulkhead = bulkhead(&registry, "b12-end", 1, Duration::ZERO);
    let held = bulkhead.try_enter().unwrap();
    assert!(bulkhead.try_enter().is_err());
    drop(held);
    drop((bulkhead, registry));
    assert!(
        matches!(events.recv().await, Some(Event::Bulkhead(_))),
        "what was published is still read"
    );
    let end = tokio::time::timeout(Duration::from_secs(30), events.recv()).await;
    assert_eq!(end, Ok(None));
}

#[test]
fn an_outer_deadline_cuts_a_sync_wait_short_and_says_so() {
    use bulkhead_core::{Clock, EnterError};
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let bulkhead = bulkhead(&registry, "deadline-cut", 1, Duration::from_secs(1));
    let _held = bulkhead.try_enter().unwrap();
    thread::scope(|s| {
        let outer = clock.now() + Duration::from_millis(100);
        let b = &bulkhead;
        let early = s.spawn(move || b.enter_until(Some(outer)).map(drop));
        wait_until("the thread waits", || bulkhead.waiting_calls() == 1);
        clock.advance(Duration::from_millis(100));
        assert_eq!(early.join().unwrap(), Err(EnterError::DeadlineReached));

        let outer = clock.now() + Duration::from_secs(5);
        let late = s.spawn(move || b.enter_until(Some(outer)).map(drop));
        wait_until("the thread waits", || bulkhead.waiting_calls() == 1);
        clock.advance(Duration::from_secs(1));
        assert!(
            matches!(late.join().unwrap(), Err(EnterError::Full(_))),
            "max_wait came first"
        );
    });
    let without_wait = self::bulkhead(&registry, "deadline-nowait", 1, Duration::ZERO);
    let _held = without_wait.try_enter().unwrap();
    let far = Some(clock.now() + Duration::from_secs(5));
    assert!(matches!(
        without_wait.enter_until(far),
        Err(EnterError::Full(_))
    ));
}
