//! Model checks of a keyed bulkhead's accounting: a key's limit, the
//! global one and a key's reservation hold in every interleaving, a slot
//! freed while someone waits reaches a waiter, and a sweep that evicts
//! keys racing calls of them frees only idle nodes and loses nothing.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bulkhead_core::{BulkheadConfig, KeyLimits, KeyedBulkhead, ManualClock, PolicyContext};
use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::thread;

use super::poll_noop;

fn keyed(max: u32, per_key: u32, max_wait: Duration, clock: &ManualClock) -> KeyedBulkhead<u8> {
    keyed_with(max, per_key, max_wait, clock, [])
}

fn keyed_with<const N: usize>(
    max: u32,
    per_key: u32,
    max_wait: Duration,
    clock: &ManualClock,
    keys: [(u8, KeyLimits); N],
) -> KeyedBulkhead<u8> {
    let config = BulkheadConfig::builder()
        .max_concurrent(max)
        .per_key(per_key)
        .max_wait(max_wait)
        .idle_evict(Duration::ZERO)
        .build()
        .unwrap();
    let context = PolicyContext::new(Arc::new(clock.clone()));
    KeyedBulkhead::with_keys("loom", config, context, keys).unwrap()
}

/// Nothing held, nobody waiting, and `max` slots to take again, across
/// keys `0..max` (each key 1).
fn assert_idle(keyed: &KeyedBulkhead<u8>, max: u32) {
    assert_eq!(keyed.concurrent_calls(), 0);
    assert_eq!(keyed.waiting_calls(), 0);
    let all: Vec<_> = (0..max as u8)
        .map(|k| keyed.try_enter(&(100 + k)))
        .collect();
    assert!(all.iter().all(Result::is_ok), "capacity was lost");
    assert!(keyed.try_enter(&99).is_err(), "capacity was duplicated");
}

#[test]
fn one_key_never_exceeds_its_limit() {
    loom::model(|| {
        let clock = ManualClock::new();
        let keyed = keyed(2, 1, Duration::ZERO, &clock);
        let inside = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let (keyed, inside) = (keyed.clone(), Arc::clone(&inside));
                thread::spawn(move || {
                    if let Ok(_permit) = keyed.try_enter(&7) {
                        assert_eq!(inside.fetch_add(1, SeqCst), 0, "two calls of one key");
                        inside.fetch_sub(1, SeqCst);
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_idle(&keyed, 2);
    });
}

#[test]
fn two_keys_never_exceed_the_global_limit() {
    loom::model(|| {
        let clock = ManualClock::new();
        let keyed = keyed(1, 1, Duration::ZERO, &clock);
        let inside = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..2u8)
            .map(|key| {
                let (keyed, inside) = (keyed.clone(), Arc::clone(&inside));
                thread::spawn(move || {
                    if let Ok(_permit) = keyed.try_enter(&key) {
                        assert_eq!(inside.fetch_add(1, SeqCst), 0, "two calls at a limit of 1");
                        inside.fetch_sub(1, SeqCst);
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_idle(&keyed, 1);
    });
}

#[test]
fn a_reservation_is_free_at_once_while_others_churn() {
    loom::model(|| {
        let clock = ManualClock::new();
        // 2 slots, 1 reserved for key 0: the others share 1.
        let keyed = keyed_with(
            2,
            2,
            Duration::ZERO,
            &clock,
            [(0, KeyLimits::new(2).reserved(1))],
        );
        let other = keyed.try_enter_owned(&1).unwrap();
        let churn = {
            let keyed = keyed.clone();
            thread::spawn(move || {
                drop(other);
                let again = keyed.try_enter(&2);
                drop(again);
            })
        };
        let vip = keyed.try_enter(&0);
        assert!(vip.is_ok(), "the reserved slot was not free");
        drop(vip);
        churn.join().unwrap();
        assert_eq!(keyed.concurrent_calls(), 0);
        // 1 for the others, 2 for key 0 (1 reserved + 1 borrowed).
        let a = keyed.try_enter(&1).unwrap();
        assert!(keyed.try_enter(&2).is_err());
        let v = keyed.try_enter(&0).unwrap();
        drop((a, v));
    });
}

#[test]
fn a_blocked_thread_of_another_key_is_handed_the_released_slot() {
    loom::model(|| {
        let clock = ManualClock::new();
        let keyed = keyed(1, 1, Duration::from_secs(3600), &clock);
        let held = keyed.try_enter_owned(&0).unwrap();
        let waiter = {
            let keyed = keyed.clone();
            thread::spawn(move || keyed.enter(&1).map(drop).is_ok())
        };
        drop(held);
        assert!(
            waiter.join().unwrap(),
            "the clock never moved: it must get the slot"
        );
        assert_idle(&keyed, 1);
    });
}

#[test]
fn a_blocked_thread_of_the_same_key_is_handed_its_released_slot() {
    loom::model(|| {
        let clock = ManualClock::new();
        let keyed = keyed(4, 1, Duration::from_secs(3600), &clock);
        let held = keyed.try_enter_owned(&0).unwrap();
        let waiter = {
            let keyed = keyed.clone();
            thread::spawn(move || keyed.enter(&0).map(drop).is_ok())
        };
        drop(held);
        assert!(waiter.join().unwrap());
        assert_idle(&keyed, 4);
    });
}

#[test]
fn an_async_waiter_cancelled_while_a_slot_is_released_loses_nothing() {
    loom::model(|| {
        let clock = ManualClock::new();
        let keyed = keyed(1, 1, Duration::from_secs(3600), &clock);
        let held = keyed.try_enter_owned(&0).unwrap();
        let key = 1;
        let mut waiter = keyed.enter_async(&key);
        assert!(poll_noop(&mut waiter).is_pending());
        let releaser = thread::spawn(move || drop(held));
        drop(waiter);
        releaser.join().unwrap();
        assert_idle(&keyed, 1);
    });
}

/// The first poll of `enter_async` decides a live key's call inline (a
/// free slot taken, or a refusal with no wait returned at once, issue 33):
/// racing the release of the key's only slot, it is admitted or refused,
/// never both, and leaves nothing held, counted or queued either way.
#[test]
fn an_async_call_decided_at_its_first_poll_races_a_release_and_loses_nothing() {
    loom::model(|| {
        let clock = ManualClock::new();
        let keyed = keyed(2, 1, Duration::ZERO, &clock);
        let held = keyed.try_enter_owned(&0).unwrap();
        let releaser = thread::spawn(move || drop(held));
        let key = 0;
        let mut call = keyed.enter_async(&key);
        match poll_noop(&mut call) {
            std::task::Poll::Ready(Ok(permit)) => {
                // The key's only slot: the release came first.
                assert!(keyed.try_enter(&0).is_err(), "the key's limit doubled");
                drop(permit);
            }
            std::task::Poll::Ready(Err(_)) => {}
            std::task::Poll::Pending => panic!("no wait allowed, yet it waits"),
        }
        drop(call);
        releaser.join().unwrap();
        assert_idle(&keyed, 2);
    });
}

#[test]
fn a_sweep_racing_calls_frees_only_idle_keys() {
    loom::model(|| {
        let clock = ManualClock::new();
        let keyed = keyed(2, 1, Duration::ZERO, &clock);
        drop(keyed.try_enter(&0).unwrap());
        clock.advance(Duration::from_millis(1));
        let caller = {
            let keyed = keyed.clone();
            thread::spawn(move || {
                let permit = keyed.try_enter(&0);
                assert!(permit.is_ok());
                // Held: the sweep must not free it now.
                assert_eq!(keyed.in_flight(&0), 1);
            })
        };
        let evicted = keyed.evict_idle();
        caller.join().unwrap();
        assert!(evicted <= 1);
        assert!(keyed.keys() <= 1);
        assert_idle(&keyed, 2);
    });
}

#[test]
fn a_blocked_thread_within_its_reservation_is_handed_its_released_slot() {
    loom::model(|| {
        let clock = ManualClock::new();
        // Key 0's one slot is reserved: its release frees no global slot,
        // only its own.
        let keyed = keyed_with(
            2,
            1,
            Duration::from_secs(3600),
            &clock,
            [(0, KeyLimits::new(1).reserved(1))],
        );
        let held = keyed.try_enter_owned(&0).unwrap();
        let waiter = {
            let keyed = keyed.clone();
            thread::spawn(move || keyed.enter(&0).map(drop).is_ok())
        };
        drop(held);
        assert!(waiter.join().unwrap());
        assert_eq!(keyed.concurrent_calls(), 0);
        assert_eq!(keyed.waiting_calls(), 0);
        let (a, b) = (keyed.try_enter(&0).unwrap(), keyed.try_enter(&1).unwrap());
        assert!(keyed.try_enter(&2).is_err());
        drop((a, b));
    });
}

#[test]
fn a_newcomer_racing_a_release_never_takes_the_slot_a_waiter_is_owed() {
    loom::model(|| {
        let clock = ManualClock::new();
        let keyed = keyed(1, 1, Duration::from_secs(3600), &clock);
        let held = keyed.try_enter_owned(&0).unwrap();
        let key = 1;
        let mut waiter = keyed.enter_async(&key);
        assert!(poll_noop(&mut waiter).is_pending());
        let releaser = thread::spawn(move || drop(held));
        // A newcomer of a third key never takes the slot the waiter is
        // owed (no barging past a waiter), before or after the release.
        let newcomer = keyed.try_enter(&2);
        releaser.join().unwrap();
        assert!(newcomer.is_err(), "a newcomer barged past the waiter");
        let served = poll_noop(&mut waiter);
        assert!(
            matches!(served, std::task::Poll::Ready(Ok(_))),
            "the released slot was lost"
        );
        drop(newcomer);
        drop(served);
        drop(waiter);
        assert_idle(&keyed, 1);
    });
}

#[test]
fn a_waiter_held_back_by_its_key_then_by_the_global_limit_is_served() {
    loom::model(|| {
        let clock = ManualClock::new();
        // 3 slots, 1 per key: keys 0 and 1 hold one each, key 0's waiter is
        // held back by its key alone (the flag stays clear, other keys'
        // calls stay on the fast path).
        let keyed = keyed(3, 1, Duration::from_secs(3600), &clock);
        let a = keyed.try_enter_owned(&0).unwrap();
        let b = keyed.try_enter_owned(&1).unwrap();
        let key = 0;
        let mut waiter = keyed.enter_async(&key);
        assert!(poll_noop(&mut waiter).is_pending());
        // A newcomer of key 2 takes the last global slot and gives it back,
        // racing key 0's release: whichever order, the waiter is served.
        let newcomer = {
            let keyed = keyed.clone();
            thread::spawn(move || {
                let permit = keyed.try_enter(&2);
                drop(permit);
            })
        };
        let releaser = thread::spawn(move || drop(a));
        newcomer.join().unwrap();
        releaser.join().unwrap();
        let served = poll_noop(&mut waiter);
        assert!(
            matches!(served, std::task::Poll::Ready(Ok(_))),
            "the waiter was left behind"
        );
        drop(served);
        drop(waiter);
        drop(b);
        assert_idle(&keyed, 3);
    });
}

#[test]
fn a_newcomer_racing_a_release_never_takes_the_slot_its_keys_waiter_is_owed() {
    loom::model(|| {
        let clock = ManualClock::new();
        // One slot in all, 1 per key: key 0 holds it, its waiter is held
        // back by its key (the flag stays clear). Key 0's release frees the
        // global slot too: the waiter is owed it, a newcomer of key 1 that
        // races the release never takes it.
        let keyed = keyed(1, 1, Duration::from_secs(3600), &clock);
        let held = keyed.try_enter_owned(&0).unwrap();
        let key = 0;
        let mut waiter = keyed.enter_async(&key);
        assert!(poll_noop(&mut waiter).is_pending());
        let releaser = thread::spawn(move || drop(held));
        let newcomer = keyed.try_enter(&1);
        releaser.join().unwrap();
        assert!(newcomer.is_err(), "a newcomer barged past the waiter");
        let served = poll_noop(&mut waiter);
        assert!(
            matches!(served, std::task::Poll::Ready(Ok(_))),
            "the released slot was lost"
        );
        drop(newcomer);
        drop(served);
        drop(waiter);
        assert_idle(&keyed, 1);
    });
}

/// A waker that panics when woken (a broken executor's).
struct PanickyWaker;

impl std::task::Wake for PanickyWaker {
    fn wake(self: Arc<Self>) {
        panic!("a waker panicked");
    }
}

#[test]
fn a_waiter_whose_waker_panics_in_its_own_enqueue_loses_no_slot() {
    loom::model(|| {
        let clock = ManualClock::new();
        let keyed = keyed(1, 1, Duration::from_secs(3600), &clock);
        let held = keyed.try_enter_owned(&0).unwrap();
        // The release may wake the waiter's waker (and raise its panic).
        let releaser = thread::spawn(move || {
            let released = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(held)));
            drop(released);
        });
        // Key 1's call queues; the release may come between its refusal
        // and its count as a waiter: it is then granted in its own enqueue
        // and its waker, which panics, is woken there.
        let key = 1;
        let waker = std::task::Waker::from(Arc::new(PanickyWaker));
        let polled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut waiter = keyed.enter_async(&key);
            let poll = std::pin::Pin::new(&mut waiter)
                .poll(&mut std::task::Context::from_waker(&waker))
                .map(|entered| entered.map(drop).is_ok());
            drop(waiter);
            poll
        }));
        releaser.join().unwrap();
        drop(polled);
        assert_idle(&keyed, 1);
    });
}

#[test]
fn two_new_keys_racing_never_pass_max_keys() {
    // Keys 0 to 9 over the models' two shards: some pair shares none.
    for other in 1..10u8 {
        loom::model(move || {
            let clock = ManualClock::new();
            let config = BulkheadConfig::builder()
                .max_concurrent(4)
                .max_keys(1)
                .idle_evict(Duration::from_secs(3600))
                .build()
                .unwrap();
            let context = PolicyContext::new(Arc::new(clock.clone()));
            let keyed: KeyedBulkhead<u8> = KeyedBulkhead::with_context("loom", config, context);
            let racer = {
                let keyed = keyed.clone();
                thread::spawn(move || keyed.try_enter(&other).map(drop).is_ok())
            };
            let mine = keyed.try_enter(&0).map(drop).is_ok();
            let theirs = racer.join().unwrap();
            assert!(keyed.keys() <= 1, "{} keys live, max_keys 1", keyed.keys());
            assert!(!(mine && theirs), "two new keys admitted with max_keys 1");
        });
    }
}

#[test]
fn a_key_granted_while_a_sweep_stamps_it_is_not_evicted_early() {
    loom::model(|| {
        let clock = ManualClock::new();
        let config = BulkheadConfig::builder()
            .max_concurrent(2)
            .per_key(1)
            .max_wait(Duration::from_secs(3600))
            .idle_evict(Duration::from_millis(4))
            .build()
            .unwrap();
        let context = PolicyContext::new(Arc::new(clock.clone()));
        let keyed: KeyedBulkhead<u8> = KeyedBulkhead::with_context("loom", config, context);
        let held = keyed.try_enter_owned(&0).unwrap();
        let key = 0;
        let mut waiter = keyed.enter_async(&key);
        assert!(poll_noop(&mut waiter).is_pending());
        // At 1 ms a sweep (busy key: stamped with it) races the release
        // that hands key 0's slot to its waiter.
        clock.advance(Duration::from_millis(1));
        let releaser = thread::spawn(move || drop(held));
        let first = keyed.evict_idle();
        releaser.join().unwrap();
        assert_eq!(first, 0);
        let std::task::Poll::Ready(Ok(permit)) = poll_noop(&mut waiter) else {
            panic!("the waiter was not served");
        };
        drop(waiter);
        // Its call ends at 1.9 ms: kept until 5.9 ms at least. Sweeps at
        // 2, 3, 4 and 5 ms.
        clock.advance(Duration::from_micros(900));
        drop(permit);
        clock.advance(Duration::from_micros(100));
        assert_eq!(keyed.evict_idle(), 0, "at 2 ms");
        for _ in 0..3 {
            clock.advance(Duration::from_millis(1));
            let n = keyed.evict_idle();
            assert_eq!(n, 0, "at {:?}", clock.elapsed());
        }
        assert!(
            keyed.is_live(&0),
            "evicted at 5 ms, idle since 1.9 ms with idle_evict 4 ms"
        );
    });
}
