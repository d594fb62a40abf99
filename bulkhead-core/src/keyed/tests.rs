//! The keyed bulkhead's rules, one by one, on a `ManualClock` where time
//! matters.

use std::future::Future;
use std::hash::{Hash, Hasher};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use super::*;
use crate::{EventBus, ManualClock};

fn config(max: u32, per_key: u32) -> BulkheadConfig {
    BulkheadConfig::builder()
        .max_concurrent(max)
        .per_key(per_key)
        .build()
        .unwrap()
}

fn on(clock: &ManualClock, config: BulkheadConfig) -> KeyedBulkhead<String> {
    KeyedBulkhead::with_context("keyed", config, PolicyContext::new(Arc::new(clock.clone())))
}

/// A keyed bulkhead on a clock of its own (no ticker thread: Miri wants
/// every thread joined).
fn manual<K: Hash + Eq + Send + Sync + 'static>(config: BulkheadConfig) -> KeyedBulkhead<K> {
    let context = PolicyContext::new(Arc::new(ManualClock::new()));
    KeyedBulkhead::with_context("k", config, context)
}

fn waiting(max: u32, per_key: u32, clock: &ManualClock) -> KeyedBulkhead<String> {
    let config = BulkheadConfig::builder()
        .max_concurrent(max)
        .per_key(per_key)
        .max_wait(Duration::from_secs(10))
        .build()
        .unwrap();
    on(clock, config)
}

fn poll<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
    Pin::new(future).poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn a_key_gets_per_key_and_all_keys_max_concurrent() {
    let keyed: KeyedBulkhead<String> = manual(config(3, 2));
    let a1 = keyed.try_enter("a").unwrap();
    let a2 = keyed.try_enter("a").unwrap();
    assert!(keyed.try_enter("a").is_err());
    assert_eq!(keyed.in_flight("a"), 2);
    let b1 = keyed.try_enter("b").unwrap();
    let err = keyed.try_enter("c").unwrap_err();
    assert_eq!(err.instance(), "k");
    assert_eq!(keyed.concurrent_calls(), 3);
    drop(a1);
    let c1 = keyed.try_enter("c").unwrap();
    drop((a2, b1, c1));
    assert_eq!(keyed.concurrent_calls(), 0);
    assert_eq!(keyed.inner.slots.used(), 0);
}

#[test]
fn reserved_slots_are_free_at_once_whatever_other_keys_hold() {
    let clock = ManualClock::new();
    let keyed = KeyedBulkhead::with_keys(
        "k",
        config(4, 4),
        PolicyContext::new(Arc::new(clock)),
        [("vip".to_owned(), KeyLimits::new(3).reserved(2))],
    )
    .unwrap();
    // The others share the 2 slots nobody reserved.
    let others: Vec<_> = ["a", "b"]
        .iter()
        .map(|k| keyed.try_enter(*k).unwrap())
        .collect();
    assert!(keyed.try_enter("c").is_err(), "2 are reserved");
    let v1 = keyed.try_enter("vip").unwrap();
    let v2 = keyed.try_enter("vip").unwrap();
    assert!(
        keyed.try_enter("vip").is_err(),
        "beyond its reservation it borrows: none left"
    );
    drop(others);
    let v3 = keyed.try_enter("vip").unwrap();
    assert!(keyed.try_enter("vip").is_err(), "its own per_key is 3");
    // vip holds 3 (2 reserved + 1 borrowed): 1 left for the others.
    let a = keyed.try_enter("a").unwrap();
    assert!(keyed.try_enter("b").is_err());
    drop((v1, v2, v3, a));
    assert_eq!(keyed.inner.slots.used(), 2, "the reservation stays counted");
    assert!(keyed.is_live("vip"));
    assert_eq!(keyed.limits_of("vip"), KeyLimits::new(3).reserved(2));
    assert_eq!(keyed.limits_of("nobody"), KeyLimits::new(4));
}

#[test]
fn bad_key_limits_are_refused_with_codes() {
    let context = || PolicyContext::new(Arc::new(ManualClock::new()));
    let err = |keys: Vec<(String, KeyLimits)>, max_keys: u32| {
        let config = BulkheadConfig::builder()
            .max_concurrent(4)
            .max_keys(max_keys)
            .build()
            .unwrap();
        KeyedBulkhead::with_keys("k", config, context(), keys).unwrap_err()
    };
    let e = err(vec![("a".into(), KeyLimits::new(2).reserved(3))], 10);
    assert_eq!(e.code(), "ATR-020");
    assert!(e.to_string().contains("above the key's per_key"), "{e}");
    let e = err(
        vec![
            ("a".into(), KeyLimits::new(3).reserved(3)),
            ("b".into(), KeyLimits::new(3).reserved(2)),
        ],
        10,
    );
    assert!(
        e.to_string()
            .contains("add up to 5, above max_concurrent (4)"),
        "{e}"
    );
    let e = err(vec![("a".into(), KeyLimits::new(0))], 10);
    assert_eq!(e.code(), "ATR-003");
    let e = err(vec![("a".into(), KeyLimits::new(1 << 24))], 10);
    assert_eq!(e.code(), "ATR-003");
    let e = err(
        vec![
            ("a".into(), KeyLimits::new(1)),
            ("b".into(), KeyLimits::new(1)),
        ],
        1,
    );
    assert!(e.to_string().contains("above max_keys (1)"), "{e}");
    let e = err(
        vec![
            ("a".into(), KeyLimits::new(1)),
            ("a".into(), KeyLimits::new(2)),
        ],
        10,
    );
    assert!(e.to_string().contains("listed twice"), "{e}");
}

#[test]
fn a_freed_global_slot_goes_to_the_waiting_key_holding_the_fewest() {
    let clock = ManualClock::new();
    let keyed = waiting(2, 2, &clock);
    let a1 = keyed.try_enter("a").unwrap();
    let a2 = keyed.try_enter("a").unwrap();
    // a waits first, b after: max-min fair serves b (holding 0) first.
    let mut a3 = Box::pin(keyed.enter_async("a"));
    assert!(poll(&mut a3).is_pending());
    let mut b1 = Box::pin(keyed.enter_async("b"));
    assert!(poll(&mut b1).is_pending());
    assert_eq!(keyed.waiting_calls(), 2);
    // A new call of c does not barge past the waiters.
    assert!(keyed.try_enter("c").is_err());
    drop(a1);
    assert!(poll(&mut a3).is_pending(), "a holds 1, b holds 0: b first");
    let Poll::Ready(Ok(b1)) = poll(&mut b1) else {
        panic!("b was not served")
    };
    drop(a2);
    let Poll::Ready(Ok(a3)) = poll(&mut a3) else {
        panic!("a was not served next")
    };
    assert_eq!((keyed.in_flight("a"), keyed.in_flight("b")), (1, 1));
    assert_eq!(keyed.waiting_calls(), 0);
    drop((a3, b1));
    assert_eq!(keyed.inner.slots.used(), 0);
}

#[test]
fn a_key_at_its_limit_waits_for_its_own_release_and_others_pass() {
    let clock = ManualClock::new();
    let keyed = waiting(4, 1, &clock);
    let a1 = keyed.try_enter("a").unwrap();
    let mut a2 = Box::pin(keyed.enter_async("a"));
    assert!(poll(&mut a2).is_pending());
    // b is not held up by a's waiter: the global limit has room.
    let b1 = keyed.try_enter("b").unwrap();
    drop(a1);
    assert!(matches!(poll(&mut a2), Poll::Ready(Ok(_))));
    drop(b1);
}

#[test]
fn a_waiter_gives_up_at_max_wait_and_a_dropped_one_passes_its_slot_on() {
    let clock = ManualClock::new();
    let keyed = waiting(1, 1, &clock);
    let held = keyed.try_enter("a").unwrap();
    let mut b = Box::pin(keyed.enter_async("b"));
    assert!(poll(&mut b).is_pending());
    clock.advance(Duration::from_secs(10));
    assert!(matches!(poll(&mut b), Poll::Ready(Err(_))));
    assert_eq!(keyed.waiting_calls(), 0);
    // Handed a slot, then dropped: the slot goes on to the next waiter.
    let mut c = Box::pin(keyed.enter_async("c"));
    let mut d = Box::pin(keyed.enter_async("d"));
    assert!(poll(&mut c).is_pending());
    assert!(poll(&mut d).is_pending());
    drop(held);
    drop(c);
    assert!(matches!(poll(&mut d), Poll::Ready(Ok(_))));
    drop(d);
    assert_eq!(keyed.inner.slots.used(), 0);
    assert_eq!(keyed.waiting_calls(), 0);
}

#[test]
#[cfg_attr(miri, ignore = "threads, runtimes or large data: slow under Miri")]
fn a_blocked_thread_is_served_and_one_that_waits_too_long_is_refused() {
    let clock = ManualClock::new();
    let keyed = waiting(1, 1, &clock);
    let held = keyed.try_enter("a").unwrap();
    std::thread::scope(|s| {
        let waiter = s.spawn(|| keyed.enter("b").map(drop).is_ok());
        while keyed.waiting_calls() == 0 {
            std::thread::yield_now();
        }
        drop(held);
        assert!(waiter.join().unwrap());
    });
    let held = keyed.try_enter("a").unwrap();
    std::thread::scope(|s| {
        let waiter = s.spawn(|| keyed.enter("b").map(drop).is_ok());
        while keyed.waiting_calls() == 0 || clock.sleepers() == 0 {
            std::thread::yield_now();
        }
        clock.advance(Duration::from_secs(11));
        assert!(!waiter.join().unwrap());
    });
    drop(held);
    assert_eq!(keyed.inner.slots.used(), 0);
}

#[test]
fn idle_keys_are_evicted_and_busy_ones_kept() {
    let clock = ManualClock::new();
    let config = BulkheadConfig::builder()
        .max_concurrent(10)
        .idle_evict(Duration::from_secs(60))
        .build()
        .unwrap();
    let keyed = on(&clock, config);
    drop(keyed.try_enter("idle").unwrap());
    let busy = keyed.try_enter("busy").unwrap();
    assert_eq!(keyed.keys(), 2);
    // Nothing is evicted before idle_evict has passed.
    for _ in 0..4 {
        clock.advance(Duration::from_secs(15));
        keyed.evict_idle();
        assert!(keyed.is_live("idle") || clock.elapsed() >= Duration::from_secs(60));
    }
    clock.advance(Duration::from_secs(15));
    keyed.evict_idle();
    clock.advance(Duration::from_secs(15));
    keyed.evict_idle();
    assert!(!keyed.is_live("idle"), "idle for 90 s with idle_evict 60 s");
    assert!(
        keyed.is_live("busy"),
        "a key holding a slot is never evicted"
    );
    // Busy for long, then released: idle from then on, not from its call.
    drop(busy);
    clock.advance(Duration::from_secs(15));
    assert_eq!(keyed.evict_idle(), 0);
    assert!(keyed.is_live("busy"));
    for _ in 0..6 {
        clock.advance(Duration::from_secs(15));
        keyed.evict_idle();
    }
    assert_eq!(keyed.keys(), 0);
    // A key comes back as new.
    drop(keyed.try_enter("idle").unwrap());
    assert_eq!(keyed.keys(), 1);
}

#[test]
#[cfg_attr(miri, ignore = "threads, runtimes or large data: slow under Miri")]
fn a_key_is_never_evicted_before_idle_evict_after_its_last_call() {
    let clock = ManualClock::new();
    let config = BulkheadConfig::builder()
        .max_concurrent(10)
        .idle_evict(Duration::from_secs(4))
        .build()
        .unwrap();
    let keyed = on(&clock, config);
    // Calls at uneven times, sweeps every second: each key lives at least
    // 4 s after its last call, and is gone within 6 s.
    let mut last_call = std::collections::HashMap::new();
    for step in 0..200u64 {
        let key = format!("k{}", (step * 7) % 5);
        if step % 3 == 0 {
            drop(keyed.try_enter(&key).unwrap());
            last_call.insert(key, clock.elapsed());
        }
        clock.advance(Duration::from_millis(300 + (step % 4) * 200));
        keyed.evict_idle();
        for (key, at) in &last_call {
            let idle = clock.elapsed() - *at;
            if idle < Duration::from_secs(4) {
                assert!(keyed.is_live(key.as_str()), "{key} evicted after {idle:?}");
            }
            if idle > Duration::from_secs(7) {
                assert!(!keyed.is_live(key.as_str()), "{key} kept after {idle:?}");
            }
        }
    }
}

#[test]
fn max_keys_refuses_new_keys_until_idle_ones_are_evicted() {
    let clock = ManualClock::new();
    let bus = EventBus::new(64);
    let mut events = bus.subscribe();
    let config = BulkheadConfig::builder()
        .max_concurrent(10)
        .max_keys(2)
        .idle_evict(Duration::from_secs(1))
        .build()
        .unwrap();
    let keyed: KeyedBulkhead<String> = KeyedBulkhead::with_context(
        "k",
        config,
        PolicyContext::new(Arc::new(clock.clone())).with_events(bus),
    );
    drop(keyed.try_enter("a").unwrap());
    drop(keyed.try_enter("b").unwrap());
    assert!(keyed.try_enter("c").is_err());
    assert_eq!(keyed.refused_keys(), 1);
    assert!(keyed.try_enter("a").is_ok(), "live keys are still served");
    let event = events.try_recv().unwrap();
    assert!(matches!(
        event,
        Event::Bulkhead(BulkheadEvent {
            kind: BulkheadEventKind::KeyRejected {
                reason: KeyRefusal::TooManyKeys,
                limit: 2,
                waited: false
            },
            ..
        })
    ));
    // Once a and b are idle long enough, the refused call sweeps them.
    clock.advance(Duration::from_millis(300));
    keyed.evict_idle();
    clock.advance(Duration::from_secs(2));
    assert!(keyed.try_enter("c").is_ok());
    assert_eq!(keyed.keys(), 1);
}

/// A key whose hash changes with every call: each call makes a new key.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Inconsistent(u32);

static SALT: AtomicU64 = AtomicU64::new(0);

impl Hash for Inconsistent {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash(state);
        SALT.fetch_add(1, Ordering::Relaxed).hash(state);
    }
}

#[test]
#[cfg_attr(miri, ignore = "threads, runtimes or large data: slow under Miri")]
fn keys_that_do_not_hash_consistently_cost_keys_not_memory() {
    let config = BulkheadConfig::builder()
        .max_concurrent(100)
        .per_key(1)
        .max_keys(16)
        .build()
        .unwrap();
    let keyed: KeyedBulkhead<Inconsistent> = manual(config);
    let mut admitted = 0;
    for _ in 0..1000 {
        if let Ok(permit) = keyed.try_enter(&Inconsistent(7)) {
            admitted += 1;
            drop(permit);
        }
    }
    // Each call may land in a new node: max_keys bounds them, nothing
    // panics, and every slot comes back.
    assert!(keyed.keys() <= 16);
    assert!(admitted >= 16);
    assert_eq!(keyed.concurrent_calls(), 0);
    assert_eq!(keyed.inner.slots.used(), 0);
}

#[test]
#[cfg_attr(miri, ignore = "threads, runtimes or large data: slow under Miri")]
fn empty_and_huge_keys_are_keys_like_any_other() {
    let keyed: KeyedBulkhead<String> = manual(config(4, 1));
    let huge = "x".repeat(1 << 20);
    let e = keyed.try_enter("").unwrap();
    let h = keyed.try_enter(huge.as_str()).unwrap();
    assert!(keyed.try_enter("").is_err());
    assert!(keyed.try_enter(huge.as_str()).is_err());
    assert_eq!(keyed.in_flight(""), 1);
    drop((e, h));
    let keyed: KeyedBulkhead<Vec<u8>> = manual(config(4, 1));
    let p = keyed.try_enter(&[1u8, 2][..]).unwrap();
    assert!(keyed.try_enter(&vec![1u8, 2]).is_err());
    drop(p);
}

#[test]
fn owned_permits_outlive_the_handle_and_release_into_it() {
    let keyed: KeyedBulkhead<u64> = manual(config(2, 1));
    let permit = keyed.try_enter_owned(&7).unwrap();
    let clone = keyed.clone();
    drop(keyed);
    assert!(clone.try_enter(&7).is_err());
    drop(clone);
    // The last handle is gone; the permit still points at live state.
    drop(permit);
}

#[test]
fn a_disabled_keyed_bulkhead_admits_everything() {
    let config = BulkheadConfig::builder()
        .max_concurrent(1)
        .enabled(false)
        .build()
        .unwrap();
    let keyed: KeyedBulkhead<u64> = manual(config);
    let permits: Vec<_> = (0..10).map(|_| keyed.try_enter(&1).unwrap()).collect();
    assert!(permits.iter().all(|p| !p.holds_slot()));
    assert_eq!(keyed.keys(), 0);
}

#[test]
fn limits_change_live_and_a_raise_serves_waiters() {
    let clock = ManualClock::new();
    let keyed = waiting(1, 1, &clock);
    let a = keyed.try_enter("a").unwrap();
    let mut b = Box::pin(keyed.enter_async("b"));
    assert!(poll(&mut b).is_pending());
    keyed.set_max_concurrent(2).unwrap();
    assert!(matches!(poll(&mut b), Poll::Ready(Ok(_))));
    let mut a2 = Box::pin(keyed.enter_async("a"));
    assert!(poll(&mut a2).is_pending(), "a holds its per_key");
    keyed.set_max_concurrent(3).unwrap();
    assert!(poll(&mut a2).is_pending(), "still its per_key");
    keyed.set_per_key(2).unwrap();
    assert!(matches!(poll(&mut a2), Poll::Ready(Ok(_))));
    assert_eq!(keyed.set_per_key(0).unwrap_err().code(), "ATR-003");
    drop(a);
    assert_eq!(keyed.config().per_key(), 2);
    assert_eq!(keyed.config().max_concurrent(), 3);
}

#[test]
fn a_lowered_limit_admits_nobody_until_below_it() {
    let keyed: KeyedBulkhead<u64> = manual(config(3, 3));
    let held: Vec<_> = (0..3).map(|_| keyed.try_enter(&1).unwrap()).collect();
    keyed.set_max_concurrent(1).unwrap();
    let mut held = held;
    held.pop();
    assert!(keyed.try_enter(&2).is_err());
    held.pop();
    assert!(keyed.try_enter(&2).is_err(), "1 in flight at a limit of 1");
    held.pop();
    assert!(keyed.try_enter(&2).is_ok());
}

#[test]
fn the_snapshot_shows_totals_and_the_heaviest_keys() {
    let clock = ManualClock::new();
    let keyed = waiting(10, 3, &clock);
    let mut held = Vec::new();
    for (key, n) in [("a", 3), ("b", 1), ("c", 2), ("d", 1)] {
        for _ in 0..n {
            held.push(keyed.try_enter(key).unwrap());
        }
    }
    let mut a4 = Box::pin(keyed.enter_async("a"));
    assert!(poll(&mut a4).is_pending());
    let snapshot = keyed.snapshot(2);
    assert_eq!(snapshot.in_flight, 7);
    assert_eq!(snapshot.waiting, 1);
    assert_eq!(snapshot.keys, 4);
    assert_eq!(snapshot.busy_keys, 4);
    let top: Vec<_> = snapshot
        .top
        .iter()
        .map(|k| (k.key.as_str(), k.in_flight, k.waiting))
        .collect();
    assert_eq!(top, [("a", 3, 1), ("c", 2, 0)]);
    drop(a4);
    drop(held);
    assert_eq!(keyed.snapshot(5).top, []);
}

/// What the stress test counts from outside the library: the calls of
/// each key inside, and all of them.
struct Inside {
    total: AtomicU64,
    per_key: Vec<AtomicU64>,
}

impl Inside {
    fn new(keys: usize) -> Self {
        Inside {
            total: AtomicU64::new(0),
            per_key: (0..keys).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    fn enter(&self, key: u64, limit: u64, max: u64) {
        let total = self.total.fetch_add(1, Ordering::SeqCst) + 1;
        assert!(total <= max, "{total} in flight at a limit of {max}");
        let n = self.per_key[key as usize].fetch_add(1, Ordering::SeqCst) + 1;
        assert!(
            n <= limit,
            "key {key}: {n} in flight at its limit of {limit}"
        );
    }

    fn leave(&self, key: u64) {
        self.per_key[key as usize].fetch_sub(1, Ordering::SeqCst);
        self.total.fetch_sub(1, Ordering::SeqCst);
    }
}

#[test]
#[cfg_attr(miri, ignore = "threads, runtimes or large data: slow under Miri")]
fn sixteen_threads_and_tasks_keep_both_limits_and_the_reservation_while_keys_are_evicted() {
    const MAX: u64 = 12;
    const PER_KEY: u64 = 3;
    const KEYS: u64 = 40;
    let config = BulkheadConfig::builder()
        .max_concurrent(MAX as u32)
        .per_key(PER_KEY as u32)
        .max_wait(Duration::from_millis(2))
        .idle_evict(Duration::ZERO)
        .build()
        .unwrap();
    // Key 0 has 2 slots reserved (and a limit of 4): its one caller, which
    // never holds more than 2, must never be refused.
    let keyed: KeyedBulkhead<u64> = KeyedBulkhead::with_keys(
        "stress",
        config,
        PolicyContext::default(),
        [(0, KeyLimits::new(4).reserved(2))],
    )
    .unwrap();
    let inside = Arc::new(Inside::new(KEYS as usize));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    std::thread::scope(|s| {
        // 16 threads, sync callers of keys 1..40, some waiting.
        for t in 0..16u64 {
            let (keyed, inside) = (&keyed, &inside);
            s.spawn(move || {
                for i in 0..2000u64 {
                    let key = 1 + (t * 31 + i * 17) % (KEYS - 1);
                    let permit = if i % 3 == 0 {
                        keyed.enter(&key)
                    } else {
                        keyed.try_enter(&key)
                    };
                    let Ok(permit) = permit else {
                        continue;
                    };
                    inside.enter(key, PER_KEY, MAX);
                    if i % 7 == 0 {
                        std::thread::yield_now();
                    }
                    inside.leave(key);
                    drop(permit);
                }
            });
        }
        // 32 tasks, async callers of the same keys, some given up early.
        let tasks: Vec<_> = (0..32u64)
            .map(|t| {
                let (keyed, inside) = (keyed.clone(), Arc::clone(&inside));
                rt.spawn(async move {
                    for i in 0..300u64 {
                        let key = 1 + (t * 13 + i * 7) % (KEYS - 1);
                        let enter = keyed.enter_async(&key);
                        let permit = if i % 5 == 0 {
                            match tokio::time::timeout(Duration::from_micros(100), enter).await {
                                Ok(permit) => permit,
                                Err(_) => continue,
                            }
                        } else {
                            enter.await
                        };
                        if let Ok(_permit) = permit {
                            inside.enter(key, PER_KEY, MAX);
                            tokio::task::yield_now().await;
                            inside.leave(key);
                        }
                    }
                })
            })
            .collect();
        // The reserved key's caller.
        let vip = {
            let (keyed, inside, done) = (&keyed, &inside, &done);
            s.spawn(move || {
                let mut refused = 0;
                while !done.load(Ordering::Relaxed) {
                    let a = keyed.try_enter(&0);
                    let b = keyed.try_enter(&0);
                    refused += usize::from(a.is_err()) + usize::from(b.is_err());
                    if a.is_ok() && b.is_ok() {
                        inside.enter(0, 4, MAX);
                        inside.enter(0, 4, MAX);
                        inside.leave(0);
                        inside.leave(0);
                    }
                }
                refused
            })
        };
        // Sweeps racing all of it.
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                keyed.evict_idle();
                std::thread::sleep(Duration::from_micros(200));
            }
        });
        for task in tasks {
            rt.block_on(task).unwrap();
        }
        // Let the threads finish before the vip and the sweeper stop.
        while inside.total.load(Ordering::SeqCst) > 0 || keyed.waiting_calls() > 0 {
            std::thread::yield_now();
        }
        std::thread::sleep(Duration::from_millis(20));
        done.store(true, Ordering::Relaxed);
        assert_eq!(vip.join().unwrap(), 0, "the reserved key was refused");
    });
    assert_eq!(keyed.concurrent_calls(), 0);
    assert_eq!(keyed.waiting_calls(), 0);
    assert_eq!(
        keyed.inner.slots.used(),
        2,
        "only the reservation is counted"
    );
    std::thread::sleep(Duration::from_millis(5));
    keyed.evict_idle();
    std::thread::sleep(Duration::from_millis(5));
    keyed.evict_idle();
    assert_eq!(keyed.keys(), 1, "all evicted but the pinned key");
    // Capacity intact: MAX - 2 for others, 2 reserved.
    let others: Vec<_> = (100..100 + MAX - 2)
        .map(|k| keyed.try_enter(&k).unwrap())
        .collect();
    assert!(keyed.try_enter(&999).is_err());
    let vip: Vec<_> = (0..2).map(|_| keyed.try_enter(&0).unwrap()).collect();
    drop((others, vip));
}

#[test]
#[cfg_attr(miri, ignore = "threads, runtimes or large data: slow under Miri")]
fn many_tasks_waiting_get_served_and_cancel_cleanly() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_time()
        .build()
        .unwrap();
    let config = BulkheadConfig::builder()
        .max_concurrent(6)
        .per_key(2)
        .max_wait(Duration::from_millis(50))
        .build()
        .unwrap();
    let keyed: KeyedBulkhead<u64> = KeyedBulkhead::new("tasks", config);
    let inside = Arc::new(AtomicU64::new(0));
    rt.block_on(async {
        let mut tasks = Vec::new();
        for t in 0..64u64 {
            let (keyed, inside) = (keyed.clone(), Arc::clone(&inside));
            tasks.push(tokio::spawn(async move {
                let mut served = 0;
                for i in 0..50u64 {
                    let key = (t + i) % 8;
                    let enter = keyed.enter_async(&key);
                    // Some give up early: their future is dropped queued.
                    let permit = if i % 5 == 0 {
                        match tokio::time::timeout(Duration::from_micros(50), enter).await {
                            Ok(p) => p,
                            Err(_) => continue,
                        }
                    } else {
                        enter.await
                    };
                    if let Ok(_permit) = permit {
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        assert!(now <= 6);
                        tokio::task::yield_now().await;
                        inside.fetch_sub(1, Ordering::SeqCst);
                        served += 1;
                    }
                }
                served
            }));
        }
        let mut served = 0;
        for task in tasks {
            served += task.await.unwrap();
        }
        assert!(served > 0);
    });
    assert_eq!(keyed.concurrent_calls(), 0);
    assert_eq!(keyed.waiting_calls(), 0);
    assert_eq!(keyed.inner.slots.used(), 0);
    let all: Vec<_> = (0..3)
        .flat_map(|k| [keyed.try_enter(&k), keyed.try_enter(&k)])
        .collect();
    assert!(all.iter().all(Result::is_ok), "capacity lost");
}

#[test]
fn a_key_with_limits_that_never_comes_keeps_its_reservation_and_is_never_evicted() {
    let clock = ManualClock::new();
    let config = BulkheadConfig::builder()
        .max_concurrent(3)
        .per_key(3)
        .idle_evict(Duration::from_secs(1))
        .build()
        .unwrap();
    let keyed = KeyedBulkhead::with_keys(
        "k",
        config,
        PolicyContext::new(Arc::new(clock.clone())),
        [("ghost".to_owned(), KeyLimits::new(2).reserved(2))],
    )
    .unwrap();
    // Live from the start, counted as a key, holding nothing.
    assert_eq!(keyed.keys(), 1);
    assert!(keyed.is_live("ghost"));
    assert_eq!(keyed.in_flight("ghost"), 0);
    // Its 2 reserved slots are kept for it: the others share 1.
    let a = keyed.try_enter("a").unwrap();
    assert!(keyed.try_enter("b").is_err());
    for _ in 0..10 {
        clock.advance(Duration::from_secs(1));
        keyed.evict_idle();
    }
    assert!(keyed.is_live("ghost"), "a key with limits of its own stays");
    assert!(!keyed.is_live("a") || keyed.in_flight("a") == 1);
    drop(a);
    assert_eq!(keyed.snapshot(3).reserved, 2);
}

#[test]
fn freed_slots_go_to_the_key_holding_the_fewest_then_the_oldest_waiter() {
    let clock = ManualClock::new();
    let keyed = waiting(4, 3, &clock);
    let a = [keyed.try_enter("a").unwrap(), keyed.try_enter("a").unwrap()];
    let c = keyed.try_enter("c").unwrap();
    let d = keyed.try_enter("d").unwrap();
    // Waiting in this order: a (holding 2), b (0), c (1).
    let mut wa = Box::pin(keyed.enter_async("a"));
    let mut wb = Box::pin(keyed.enter_async("b"));
    let mut wc = Box::pin(keyed.enter_async("c"));
    for w in [&mut wa, &mut wb, &mut wc] {
        assert!(poll(w).is_pending());
    }
    drop(d);
    let Poll::Ready(Ok(pb)) = poll(&mut wb) else {
        panic!("b holds the fewest: it goes first");
    };
    let (pa, pc) = (poll(&mut wa), poll(&mut wc));
    assert!(pa.is_pending() && pc.is_pending(), "{pa:?} {pc:?}");
    // a 2, b 1, c 1: a freed slot of a's goes to... a holds 1 then, as b
    // and c: the oldest waiter among the keys holding the fewest, a's.
    let [a1, a2] = a;
    drop(a1);
    let Poll::Ready(Ok(pa)) = poll(&mut wa) else {
        panic!("a waited first among equals");
    };
    assert!(poll(&mut wc).is_pending());
    // The next slot goes to c, the one key left waiting.
    drop(a2);
    let Poll::Ready(Ok(pc)) = poll(&mut wc) else {
        panic!("c holds fewer than a");
    };
    assert_eq!(keyed.waiting_calls(), 0);
    assert_eq!(
        (
            keyed.in_flight("a"),
            keyed.in_flight("b"),
            keyed.in_flight("c")
        ),
        (1, 1, 2)
    );
    drop((pa, pb, pc, c));
}

#[test]
fn an_async_permit_outlives_the_key_it_was_taken_for() {
    let clock = ManualClock::new();
    let keyed = waiting(2, 1, &clock);
    let permit = {
        let key = String::from("tenant-7");
        let mut enter = Box::pin(keyed.enter_async(key.as_str()));
        let Poll::Ready(Ok(permit)) = poll(&mut enter) else {
            panic!("a free slot");
        };
        permit
        // `key` and the future end here; the permit stays.
    };
    assert_eq!(keyed.in_flight("tenant-7"), 1);
    drop(permit);
    assert_eq!(keyed.in_flight("tenant-7"), 0);
}

#[test]
fn a_key_held_across_the_first_sweeps_is_idle_only_from_its_release() {
    let clock = ManualClock::new();
    let config = BulkheadConfig::builder()
        .max_concurrent(10)
        .idle_evict(Duration::from_secs(60))
        .build()
        .unwrap();
    let keyed = on(&clock, config);
    // Taken at 0, held while the first sweeps (15, 30, 45 s: none can
    // evict yet) run, given back at 50 s.
    let held = keyed.try_enter("long").unwrap();
    for _ in 0..3 {
        clock.advance(Duration::from_secs(15));
        keyed.evict_idle();
    }
    clock.advance(Duration::from_secs(5));
    drop(held);
    // Idle since 50 s: kept through 105 s at least.
    for _ in 0..3 {
        clock.advance(Duration::from_secs(15));
        keyed.evict_idle();
        let idle = clock.elapsed() - Duration::from_secs(50);
        assert!(keyed.is_live("long"), "evicted after {idle:?} idle");
    }
    for _ in 0..4 {
        clock.advance(Duration::from_secs(15));
        keyed.evict_idle();
    }
    assert!(!keyed.is_live("long"), "idle for 110 s");
}

/// Whether dropping a [`Grumpy`] key panics now.
static GRUMPY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// How many [`Grumpy`] keys were dropped while grumpy.
static GRUMPY_DROPS: AtomicU64 = AtomicU64::new(0);

/// A key whose drop panics while [`GRUMPY`] is set.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Grumpy(u32);

impl Drop for Grumpy {
    fn drop(&mut self) {
        if GRUMPY.load(Ordering::SeqCst) {
            GRUMPY_DROPS.fetch_add(1, Ordering::SeqCst);
            panic!("a key's drop panicked");
        }
    }
}

#[test]
fn a_key_whose_drop_panics_in_a_sweep_leaves_the_table_sound() {
    let clock = ManualClock::new();
    let config = BulkheadConfig::builder()
        .max_concurrent(4)
        .idle_evict(Duration::from_secs(4))
        .build()
        .unwrap();
    let context = PolicyContext::new(Arc::new(clock.clone()));
    // Not dropped if the test fails: a table still holding a freed node
    // would free it again.
    let keyed = std::mem::ManuallyDrop::new(KeyedBulkhead::with_context("grumpy", config, context));
    drop(keyed.try_enter(&Grumpy(1)).unwrap());
    GRUMPY.store(true, Ordering::SeqCst);
    let swept = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        for _ in 0..8 {
            clock.advance(Duration::from_secs(1));
            keyed.evict_idle();
        }
    }));
    GRUMPY.store(false, Ordering::SeqCst);
    assert!(swept.is_err(), "the key's drop panicked in the sweep");
    assert_eq!(GRUMPY_DROPS.load(Ordering::SeqCst), 1);
    // The node was freed: the table neither counts nor keeps it.
    assert_eq!(keyed.keys(), 0, "the table still holds a freed node");
    assert!(!keyed.is_live(&Grumpy(1)));
    drop(keyed.try_enter(&Grumpy(1)).unwrap());
    assert_eq!(keyed.keys(), 1);
    drop(std::mem::ManuallyDrop::into_inner(keyed));
}

/// A keyed bulkhead on `clock` whose events go to a bus subscribed to.
fn observed(
    clock: &ManualClock,
    config: BulkheadConfig,
) -> (KeyedBulkhead<String>, crate::events::EventStream) {
    let bus = EventBus::new(64);
    let events = bus.subscribe();
    let context = PolicyContext::new(Arc::new(clock.clone())).with_events(bus);
    (KeyedBulkhead::with_context("k", config, context), events)
}

/// The one `KeyRejected` event published since the last call, if any.
fn key_rejected(events: &mut crate::events::EventStream) -> Option<(KeyRefusal, u32, bool)> {
    let mut found = None;
    while let Some(event) = events.try_recv() {
        if let Event::Bulkhead(BulkheadEvent {
            kind:
                BulkheadEventKind::KeyRejected {
                    reason,
                    limit,
                    waited,
                },
            ..
        }) = event
        {
            assert!(found.is_none(), "one KeyRejected event per refusal");
            found = Some((reason, limit, waited));
        }
    }
    found
}

#[test]
fn an_async_call_refused_with_no_wait_is_rejected_at_once_counted_and_leaks_nothing() {
    let clock = ManualClock::new();
    let config = BulkheadConfig::builder()
        .max_concurrent(2)
        .per_key(1)
        .idle_evict(Duration::from_secs(1))
        .build()
        .unwrap();
    let (keyed, mut events) = observed(&clock, config);
    // A live key at its per_key.
    let held = keyed.try_enter("a").unwrap();
    let mut refused = Box::pin(keyed.enter_async("a"));
    match poll(&mut refused) {
        Poll::Ready(Err(full)) => assert_eq!(full.instance(), "k"),
        other => panic!("refused at the first poll, got {other:?}"),
    }
    drop(refused);
    assert_eq!(
        key_rejected(&mut events),
        Some((KeyRefusal::KeyFull, 1, false))
    );
    assert_eq!(
        (keyed.in_flight("a"), keyed.concurrent_calls()),
        (1, 1),
        "the refusal took nothing"
    );
    assert_eq!((keyed.keys(), keyed.waiting_calls()), (1, 0));
    // A live key with room while all keys hold max_concurrent.
    drop(keyed.try_enter("b").unwrap());
    let other = keyed.try_enter("c").unwrap();
    assert!(matches!(
        poll(&mut Box::pin(keyed.enter_async("b"))),
        Poll::Ready(Err(_))
    ));
    assert_eq!(
        key_rejected(&mut events),
        Some((KeyRefusal::GlobalFull, 2, false))
    );
    // The blocking path refuses the same way.
    assert!(keyed.enter("b").is_err());
    assert_eq!(
        key_rejected(&mut events),
        Some((KeyRefusal::GlobalFull, 2, false))
    );
    drop(other);
    assert!(keyed.enter("a").is_err());
    assert_eq!(
        key_rejected(&mut events),
        Some((KeyRefusal::KeyFull, 1, false))
    );
    assert_eq!(keyed.inner.slots.used(), 1);
    // Released, the keys are idle and swept: no refusal kept one alive.
    drop(held);
    for _ in 0..4 {
        clock.advance(Duration::from_secs(1));
        keyed.evict_idle();
    }
    assert_eq!(keyed.keys(), 0);
    assert_eq!(keyed.inner.slots.used(), 0);
}

#[test]
fn an_async_call_admitted_at_once_gives_its_slot_back_on_drop() {
    let keyed: KeyedBulkhead<String> = manual(config(2, 1));
    drop(keyed.try_enter("a").unwrap());
    // The key live: the fast path; then a new key: the slow one.
    for key in ["a", "b"] {
        let permit = match poll(&mut Box::pin(keyed.enter_async(key))) {
            Poll::Ready(Ok(permit)) => permit,
            other => panic!("admitted at the first poll, got {other:?}"),
        };
        assert_eq!((keyed.in_flight(key), keyed.concurrent_calls()), (1, 1));
        assert!(keyed.try_enter(key).is_err(), "the slot is held");
        drop(permit);
        assert_eq!((keyed.in_flight(key), keyed.concurrent_calls()), (0, 0));
        drop(keyed.try_enter(key).unwrap());
    }
    assert_eq!(keyed.inner.slots.used(), 0);
}

#[test]
fn a_live_key_at_its_limit_still_waits_when_max_wait_allows() {
    let clock = ManualClock::new();
    let config = BulkheadConfig::builder()
        .max_concurrent(4)
        .per_key(1)
        .max_wait(Duration::from_secs(10))
        .build()
        .unwrap();
    let (keyed, mut events) = observed(&clock, config);
    // The key live and at its per_key, global room: the fast lookup
    // refuses, the call queues rather than failing.
    let held = keyed.try_enter("a").unwrap();
    let mut waiter = Box::pin(keyed.enter_async("a"));
    assert!(poll(&mut waiter).is_pending());
    assert_eq!(keyed.waiting_calls(), 1);
    assert_eq!(key_rejected(&mut events), None);
    drop(held);
    let permit = match poll(&mut waiter) {
        Poll::Ready(Ok(permit)) => permit,
        other => panic!("served once the slot came free, got {other:?}"),
    };
    assert_eq!((keyed.in_flight("a"), keyed.waiting_calls()), (1, 0));
    // The same with all keys at max_concurrent, a live key with room.
    drop(keyed.try_enter("e").unwrap());
    let more: Vec<_> = ["b", "c", "d"]
        .iter()
        .map(|key| keyed.try_enter(*key).unwrap())
        .collect();
    let mut global = Box::pin(keyed.enter_async("e"));
    assert!(poll(&mut global).is_pending());
    drop(permit);
    assert!(matches!(poll(&mut global), Poll::Ready(Ok(_))));
    drop((global, more));
    assert_eq!(keyed.inner.slots.used(), 0);
    // Past a deadline scope, the wait is over before it starts: refused
    // at once, as with no max_wait.
    let _held = keyed.try_enter("a").unwrap();
    let past = crate::clock::Clock::now(&clock);
    clock.advance(Duration::from_secs(1));
    let refused = crate::deadline::with(past, || poll(&mut Box::pin(keyed.enter_async("a"))));
    assert!(matches!(refused, Poll::Ready(Err(_))));
    assert_eq!(
        key_rejected(&mut events),
        Some((KeyRefusal::KeyFull, 1, false))
    );
    assert_eq!(keyed.waiting_calls(), 0);
}
