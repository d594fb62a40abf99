//! Sync methods through a generated wrapper: B1, B2, B3, B4, B5, B8
//! (sync), B10, B12, and plain delegation.

use std::thread;
use std::time::Duration;

use bulkhead::Registry;

use crate::support::{Hold, Service, ServiceError, assert_full, id, manual, service, wait_until};

#[test]
fn b1_a_call_holds_its_slot_while_it_runs_and_gives_it_back_when_it_returns() {
    let (_, registry) = manual();
    let service = service(&registry);
    let handle = registry.bulkhead(&id("call(Hold)")).unwrap();
    let (hold, release) = Hold::until_released();
    thread::scope(|s| {
        let running = s.spawn(|| service.call(hold));
        wait_until("the call holds a slot", || handle.concurrent_calls() == 1);
        release.release();
        assert_eq!(running.join().unwrap().unwrap(), 1);
    });
    assert_eq!(handle.concurrent_calls(), 0);
}

#[test]
fn b1_a_call_that_errs_gives_its_slot_back() {
    let (_, registry) = manual();
    let service = service(&registry);
    for _ in 0..3 {
        assert!(matches!(service.fails(), Err(ServiceError::Backend(m)) if m == "no such image"));
    }
    assert_eq!(
        registry
            .bulkhead(&id("fails()"))
            .unwrap()
            .concurrent_calls(),
        0
    );
    assert_eq!(service.runs(), 3);
}

#[test]
fn b1_at_most_max_concurrent_calls_hold_a_slot() {
    let (_, registry) = manual();
    let service = service(&registry);
    let handle = registry.bulkhead(&id("call(Hold)")).unwrap();
    let (first, release_first) = Hold::until_released();
    let (second, release_second) = Hold::until_released();
    thread::scope(|s| {
        let a = s.spawn(|| service.call(first));
        let b = s.spawn(|| service.call(second));
        wait_until("both calls hold a slot", || handle.concurrent_calls() == 2);
        assert_full(service.call(Hold::none()), &id("call(Hold)"));
        assert_eq!(handle.concurrent_calls(), 2);
        release_first.release();
        release_second.release();
        a.join().unwrap().unwrap();
        b.join().unwrap().unwrap();
    });
    assert_eq!(service.call(Hold::none()).unwrap(), 3);
}

#[test]
fn b2_a_full_bulkhead_rejects_at_once_without_calling_the_method() {
    let (_, registry) = manual();
    let service = service(&registry);
    let handle = registry.bulkhead(&id("call(Hold)")).unwrap();
    let (first, release_first) = Hold::until_released();
    let (second, release_second) = Hold::until_released();
    thread::scope(|s| {
        s.spawn(|| service.call(first).unwrap());
        s.spawn(|| service.call(second).unwrap());
        // A slot is taken just before the method runs: wait for both runs.
        wait_until("both calls run", || {
            handle.concurrent_calls() == 2 && service.runs() == 2
        });
        let runs = service.runs();
        assert_full(service.call(Hold::none()), &id("call(Hold)"));
        assert_eq!(
            service.runs(),
            runs,
            "a rejected call never reaches the method"
        );
        assert_eq!(handle.waiting_calls(), 0);
        release_first.release();
        release_second.release();
    });
    assert!(handle.snapshot().concurrent_calls == 0);
}

#[test]
fn b3_b8_a_blocked_caller_gets_a_slot_as_soon_as_one_is_released() {
    let (_, registry) = manual();
    let service = service(&registry);
    let handle = registry.bulkhead(&id("call_waiting(Hold)")).unwrap();
    let (hold, release) = Hold::until_released();
    thread::scope(|s| {
        let holder = s.spawn(|| service.call_waiting(hold));
        wait_until("the holder runs", || handle.concurrent_calls() == 1);
        let waiter = s.spawn(|| service.call_waiting(Hold::none()));
        wait_until("the second caller waits", || handle.waiting_calls() == 1);
        // However long this takes in real time, the clock has not moved.
        release.release();
        assert_eq!(holder.join().unwrap().unwrap(), 1);
        assert_eq!(waiter.join().unwrap().unwrap(), 2);
    });
    assert_eq!(handle.waiting_calls(), 0);
}

#[test]
fn b3_b8_a_blocked_caller_is_rejected_when_the_clock_passes_max_wait() {
    let (clock, registry) = manual();
    let service = service(&registry);
    let handle = registry.bulkhead(&id("call_waiting(Hold)")).unwrap();
    let (hold, release) = Hold::until_released();
    thread::scope(|s| {
        s.spawn(|| service.call_waiting(hold).unwrap());
        wait_until("the holder runs", || handle.concurrent_calls() == 1);
        let waiter = s.spawn(|| service.call_waiting(Hold::none()));
        wait_until("the second caller waits", || handle.waiting_calls() == 1);
        clock.advance(Duration::from_millis(999));
        assert_eq!(handle.waiting_calls(), 1, "999ms is not past max_wait");
        clock.advance(Duration::from_millis(1));
        assert_full(waiter.join().unwrap(), &id("call_waiting(Hold)"));
        assert_eq!(service.runs(), 1, "the rejected caller never ran");
        release.release();
    });
}

#[test]
fn b4_the_method_runs_on_the_callers_thread() {
    use std::sync::Mutex;

    struct Where(Mutex<Option<thread::ThreadId>>);
    #[bulkhead::resilient]
    trait Probe {
        #[bulkhead(max_concurrent = 1)]
        fn probe(&self) -> Result<(), ServiceError>;
    }
    impl Probe for Where {
        fn probe(&self) -> Result<(), ServiceError> {
            *self.0.lock().unwrap() = Some(thread::current().id());
            Ok(())
        }
    }
    let registry = Registry::new();
    let probe = ResilientProbe::new(Where(Mutex::new(None)), &registry).unwrap();
    probe.probe().unwrap();
    assert_eq!(
        *probe.delegate().0.lock().unwrap(),
        Some(thread::current().id())
    );
}

#[test]
fn b10_handles_and_snapshots_show_what_the_wrapper_declared() {
    let (_, registry) = manual();
    let service = service(&registry);
    let snapshot = registry
        .bulkhead(&id("call_waiting(Hold)"))
        .unwrap()
        .snapshot();
    assert_eq!(snapshot.instance, id("call_waiting(Hold)"));
    assert_eq!(snapshot.max_concurrent, 1);
    assert_eq!(snapshot.max_wait, Duration::from_secs(1));
    assert_eq!(snapshot.concurrent_calls, 0);
    assert_eq!(snapshot.waiting_calls, 0);

    let ids: Vec<String> = registry
        .snapshot()
        .bulkheads()
        .iter()
        .map(|b| b.instance.clone())
        .collect();
    assert_eq!(
        ids,
        [
            id("call(Hold)"),
            id("call_async(AsyncHold)"),
            id("call_async_no_wait(AsyncHold)"),
            id("call_waiting(Hold)"),
            id("disabled(Hold)"),
            id("fails()"),
            id("panics()"),
            id("panics_async()"),
            "shared".to_owned(),
        ]
    );
    drop(service);
}

#[test]
fn b10_an_unknown_id_is_reg_009() {
    let (_, registry) = manual();
    let err = registry.bulkhead(&id("call(Hold)")).unwrap_err();
    assert_eq!(
        err.code(),
        "REG-009",
        "nothing exists before a trait is wrapped"
    );
    let _service = service(&registry);
    assert_eq!(
        registry.bulkhead(&id("runs()")).unwrap_err().code(),
        "REG-009"
    );
    assert!(registry.bulkhead(&id("call(Hold)")).is_ok());
}

#[test]
fn methods_without_a_policy_delegate_unchanged() {
    let (_, registry) = manual();
    let service = service(&registry);
    service.call(Hold::none()).unwrap();
    assert_eq!(service.runs(), 1);
    assert_eq!(service.delegate().runs(), 1);
    let backend = service.into_inner();
    assert_eq!(backend.runs(), 1);
}

#[test]
fn a_second_wrapper_on_the_same_registry_shares_the_slots() {
    let (_, registry) = manual();
    let first = service(&registry);
    let second = service(&registry);
    let handle = registry.bulkhead(&id("call(Hold)")).unwrap();
    let (a, release_a) = Hold::until_released();
    let (b, release_b) = Hold::until_released();
    thread::scope(|s| {
        s.spawn(|| first.call(a).unwrap());
        s.spawn(|| first.call(b).unwrap());
        wait_until("the first wrapper fills the bulkhead", || {
            handle.concurrent_calls() == 2
        });
        assert_full(second.call(Hold::none()), &id("call(Hold)"));
        release_a.release();
        release_b.release();
    });
}

#[test]
fn clones_share_the_slots_of_the_original() {
    #[derive(Clone, Debug, Default)]
    struct Cheap;
    #[bulkhead::resilient]
    trait Ping {
        #[bulkhead(max_concurrent = 1)]
        fn ping(&self, hold: Hold) -> Result<(), ServiceError>;
    }
    impl Ping for Cheap {
        fn ping(&self, hold: Hold) -> Result<(), ServiceError> {
            hold.0.map(|rx| rx.recv());
            Ok(())
        }
    }
    let registry = Registry::new();
    let original = ResilientPing::new(Cheap, &registry).unwrap();
    let clone = original.clone();
    let (hold, release) = Hold::until_released();
    let handle = registry
        .bulkhead("macros::sync_calls::Ping#ping(Hold)")
        .unwrap();
    thread::scope(|s| {
        s.spawn(|| original.ping(hold).unwrap());
        wait_until("the original holds the slot", || {
            handle.concurrent_calls() == 1
        });
        assert_full(
            clone.ping(Hold::none()),
            "macros::sync_calls::Ping#ping(Hold)",
        );
        release.release();
    });
    let debug = format!("{clone:?}");
    assert!(
        debug.starts_with("ResilientPing { delegate: Cheap, ping: Bulkhead {"),
        "{debug}"
    );
}

#[test]
fn b1_a_call_that_panics_gives_its_slot_back() {
    let (_, registry) = manual();
    let service = service(&registry);
    let handle = registry.bulkhead(&id("panics()")).unwrap();
    for _ in 0..2 {
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| service.panics()));
        assert!(unwound.is_err(), "the panic reaches the caller");
        assert_eq!(handle.concurrent_calls(), 0);
    }
    assert_eq!(
        service.runs(),
        2,
        "the second call was admitted: the slot came back"
    );
}

#[test]
fn b5_a_disabled_bulkhead_lets_every_call_through_and_counts_nothing() {
    let (_, registry) = manual();
    let service = service(&registry);
    let handle = registry.bulkhead(&id("disabled(Hold)")).unwrap();
    assert!(!handle.snapshot().enabled);
    let (a, release_a) = Hold::until_released();
    let (b, release_b) = Hold::until_released();
    thread::scope(|s| {
        s.spawn(|| service.disabled(a).unwrap());
        s.spawn(|| service.disabled(b).unwrap());
        wait_until("both calls run", || service.runs() == 2);
        assert_eq!(
            service.disabled(Hold::none()).unwrap(),
            3,
            "max_concurrent = 1 is ignored"
        );
        assert_eq!(handle.concurrent_calls(), 0);
        release_a.release();
        release_b.release();
    });
}

#[test]
fn b12_a_rejection_through_a_wrapper_publishes_an_event_and_admitted_calls_none() {
    let (_, registry) = manual();
    let mut events = registry.subscribe();
    let service = service(&registry);
    service.call(Hold::none()).unwrap();
    assert!(
        events.try_recv().is_none(),
        "admitted calls publish nothing"
    );
    let handle = registry.bulkhead(&id("call(Hold)")).unwrap();
    let _slots = [
        handle.bulkhead().try_enter().unwrap(),
        handle.bulkhead().try_enter().unwrap(),
    ];
    assert_full(service.call(Hold::none()), &id("call(Hold)"));
    let event = events.try_recv().expect("the rejection was published");
    assert_eq!(event.instance(), id("call(Hold)"));
    assert!(matches!(
        event,
        bulkhead::events::Event::Bulkhead(bulkhead::events::BulkheadEvent {
            kind: bulkhead::events::BulkheadEventKind::Rejected {
                max_concurrent: 2,
                waited: false
            },
            ..
        })
    ));
}

/// A trait whose calls advance a manual clock while they hold their slot
/// and fail when asked to, for the adaptive and pooled cases below.
mod timed {
    use bulkhead::{ManualClock, resilient};

    use crate::support::ServiceError;

    #[resilient]
    pub trait Timed {
        #[bulkhead(name = "paths", max_concurrent = 8, max_wait = "1s")]
        fn call(&self, fail: bool) -> Result<u32, ServiceError>;

        #[bulkhead(name = "paths_owned", max_concurrent = 8)]
        fn consume(self, fail: bool) -> Result<u32, ServiceError>
        where
            Self: Sized;

        #[bulkhead(name = "paths_mut", max_concurrent = 8)]
        fn count(&mut self, by: u32, fail: bool) -> Result<u32, ServiceError>;
    }

    #[derive(Clone)]
    pub struct Backend {
        pub clock: ManualClock,
        pub total: u32,
    }

    impl Timed for Backend {
        fn call(&self, fail: bool) -> Result<u32, ServiceError> {
            self.clock.advance(std::time::Duration::from_millis(1));
            if fail {
                Err(ServiceError::Backend("no such row".into()))
            } else {
                Ok(1)
            }
        }

        fn consume(self, fail: bool) -> Result<u32, ServiceError> {
            self.call(fail).map(|one| one + self.total)
        }

        fn count(&mut self, by: u32, fail: bool) -> Result<u32, ServiceError> {
            self.call(fail)?;
            self.total += by;
            Ok(self.total)
        }
    }
}

fn adaptive_registry(clock: &bulkhead::ManualClock, id: &str) -> Registry {
    let sampling = bulkhead::adaptive::Sampling::builder()
        .min_samples(4)
        .build()
        .unwrap();
    Registry::builder()
        .clock(clock.clone())
        .bulkhead_instance(id, move |b| {
            b.min_concurrent(1)
                .initial_concurrent(4)
                .adaptive(bulkhead::Adaptive::Gradient2)
                .sampling(sampling)
        })
        .build()
}

fn timed_service(
    clock: &bulkhead::ManualClock,
    registry: &Registry,
) -> timed::ResilientTimed<timed::Backend> {
    let backend = timed::Backend {
        clock: clock.clone(),
        total: 0,
    };
    timed::ResilientTimed::new(backend, registry).unwrap()
}

/// The generated sync method takes a free slot inline and gives it back
/// with the call's outcome: an adaptive bulkhead sees its errors as errors
/// (a permit left at its default outcome would count them as successes).
#[test]
fn an_adaptive_bulkhead_behind_a_wrapper_sees_each_calls_outcome() {
    use timed::Timed as _;
    let clock = bulkhead::ManualClock::new();
    let registry = adaptive_registry(&clock, "paths");
    let service = timed_service(&clock, &registry);
    for i in 0..400 {
        clock.advance(Duration::from_millis(1));
        assert_eq!(service.call(i % 4 == 0).is_err(), i % 4 == 0);
    }
    let handle = registry.bulkhead("paths").unwrap();
    assert_eq!(handle.concurrent_calls(), 0);
    let adaptive = handle.snapshot().adaptive.unwrap();
    assert!(adaptive.windows > 3, "{adaptive:?}");
    assert!(
        adaptive.successes > 0 && adaptive.errors > 0 && adaptive.drops == 0,
        "{adaptive:?}"
    );
    assert!(
        adaptive.errors * 3 <= adaptive.successes + 3,
        "one call in four failed: {adaptive:?}"
    );
}

/// A call that has to wait goes the out-of-line way (`enter_then`): it
/// waits, runs with the slot it was handed, gives it back with its
/// outcome, and a call that finds the bulkhead full and waits past
/// `max_wait` is rejected by the clock.
#[test]
fn a_wrapper_call_that_waits_runs_with_the_slot_it_is_handed() {
    use timed::Timed as _;
    let clock = bulkhead::ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    let service = timed_service(&clock, &registry);
    let handle = registry.bulkhead("paths").unwrap();
    let held: Vec<_> = (0..8)
        .map(|_| handle.bulkhead().try_enter_owned().unwrap())
        .collect();
    thread::scope(|s| {
        let waiting = s.spawn(|| service.call(true));
        wait_until("the call waits", || handle.bulkhead().waiting_calls() == 1);
        drop(held);
        assert!(matches!(
            waiting.join().unwrap(),
            Err(ServiceError::Backend(m)) if m == "no such row"
        ));
    });
    assert_eq!(handle.concurrent_calls(), 0);
    let held: Vec<_> = (0..8)
        .map(|_| handle.bulkhead().try_enter_owned().unwrap())
        .collect();
    thread::scope(|s| {
        let waiting = s.spawn(|| service.call(false));
        wait_until("the call waits", || handle.bulkhead().waiting_calls() == 1);
        clock.advance(Duration::from_secs(2));
        assert_full(waiting.join().unwrap(), "paths");
    });
    drop(held);
    assert_eq!(service.call(false).unwrap(), 1);
    assert_eq!(handle.concurrent_calls(), 0);
}

/// Receivers taken by value and by `&mut` reach the delegate on both
/// paths: the free one, and a rejection (which must not call it).
#[test]
fn owned_and_mut_receivers_reach_the_delegate_and_give_their_slots_back() {
    use timed::{ResilientTimed, Timed as _};
    let (clock, registry) = manual();
    let backend = timed::Backend { clock, total: 5 };
    let mut service = ResilientTimed::new(backend.clone(), &registry).unwrap();
    assert_eq!(service.count(2, false).unwrap(), 7);
    assert_eq!(service.count(3, false).unwrap(), 10);
    assert!(service.count(1, true).is_err());
    let counting = registry.bulkhead("paths_mut").unwrap();
    assert_eq!(counting.concurrent_calls(), 0);
    let held: Vec<_> = (0..8)
        .map(|_| counting.bulkhead().try_enter_owned().unwrap())
        .collect();
    assert_full(service.count(100, false), "paths_mut");
    drop(held);
    assert_eq!(
        service.count(1, false).unwrap(),
        11,
        "the rejected call did not run"
    );
    assert_eq!(service.clone().consume(false).unwrap(), 12);
    let consuming = registry.bulkhead("paths_owned").unwrap();
    assert_eq!(consuming.concurrent_calls(), 0);
    let held: Vec<_> = (0..8)
        .map(|_| consuming.bulkhead().try_enter_owned().unwrap())
        .collect();
    assert_full(service.consume(false), "paths_owned");
    drop(held);
    assert_eq!(consuming.concurrent_calls(), 0);
}
