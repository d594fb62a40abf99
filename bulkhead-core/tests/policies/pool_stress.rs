//! Several bulkheads on one pool under load: threads and tasks, waits,
//! random cancellation, limits and reservations moving all the while. Inside
//! every call the pool's invariant is checked (the sum over the bulkheads of
//! `max(calls inside, reserved)` within the budget); at the end every count
//! is back to zero and every reserved slot can be taken at once.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use bulkhead_core::{Bulkhead, BulkheadConfig, PolicyContext, SharedPool};

const BUDGET: u32 = 12;
/// Each bulkhead's reservation moves between these two values; the
/// invariant is checked with the smaller (the reservation in force is never
/// below it), which the larger ones' sum keeps within the budget.
const RESERVED: [(u32, u32); 4] = [(1, 3), (2, 3), (0, 2), (3, 4)];

struct Check {
    inside: Mutex<[u32; 4]>,
    calls: AtomicU64,
}

impl Check {
    fn enter(&self, which: usize) {
        let mut inside = self.inside.lock().unwrap();
        inside[which] += 1;
        let used: u32 = (0..4).map(|i| inside[i].max(RESERVED[i].0)).sum();
        assert!(
            used <= BUDGET,
            "{inside:?}: {used} slots in use, budget {BUDGET}"
        );
        self.calls.fetch_add(1, Relaxed);
    }

    fn leave(&self, which: usize) {
        self.inside.lock().unwrap()[which] -= 1;
    }
}

fn bulkheads(pool: &SharedPool) -> Vec<Bulkhead> {
    RESERVED
        .iter()
        .enumerate()
        .map(|(i, &(low, _))| {
            let config = BulkheadConfig::builder()
                .max_concurrent(8)
                .reserved(low)
                .max_wait(Duration::from_millis(if i.is_multiple_of(2) {
                    2
                } else {
                    0
                }))
                .build()
                .unwrap();
            Bulkhead::with_pool(
                &format!("stress-{i}"),
                config,
                PolicyContext::default(),
                pool,
            )
        })
        .collect()
}

#[test]
fn many_callers_on_one_pool_keep_the_invariant_and_give_everything_back() {
    let pool = SharedPool::new(BUDGET);
    let bulkheads = bulkheads(&pool);
    let check = Arc::new(Check {
        inside: Mutex::new([0; 4]),
        calls: AtomicU64::new(0),
    });
    let stop = Arc::new(AtomicBool::new(false));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();

    // Tasks: enter_async, some dropped at a random point by a timeout.
    let tasks: Vec<_> = (0..16)
        .map(|n| {
            let (bulkhead, check, stop) = (
                bulkheads[n % 4].clone(),
                Arc::clone(&check),
                Arc::clone(&stop),
            );
            runtime.spawn(async move {
                let mut i = 0u64;
                while !stop.load(Relaxed) {
                    i += 1;
                    let call = async {
                        if let Ok(_permit) = bulkhead.enter_async().await {
                            // Dropped before the permit, also when the call
                            // is cancelled inside.
                            let _inside = Inside::new(&check, n % 4);
                            let micros = if i.is_multiple_of(3) {
                                300
                            } else {
                                50 * (i % 7)
                            };
                            tokio::time::sleep(Duration::from_micros(micros)).await;
                        }
                    };
                    // A third of the calls are cancelled, waiting or inside.
                    if i.is_multiple_of(3) {
                        let _ = tokio::time::timeout(Duration::from_micros(100), call).await;
                    } else {
                        call.await;
                    }
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();

    // Threads: enter (blocking up to max_wait) and try_enter.
    let threads: Vec<_> = (0..4)
        .map(|n| {
            let (bulkhead, check, stop) = (
                bulkheads[(n + 1) % 4].clone(),
                Arc::clone(&check),
                Arc::clone(&stop),
            );
            thread::spawn(move || {
                let mut i = 0u32;
                while !stop.load(Relaxed) {
                    i += 1;
                    let permit = if i.is_multiple_of(2) {
                        bulkhead.enter()
                    } else {
                        bulkhead.try_enter()
                    };
                    if let Ok(_permit) = permit {
                        let _inside = Inside::new(&check, (n + 1) % 4);
                        if i.is_multiple_of(5) {
                            thread::sleep(Duration::from_micros(100));
                        }
                    }
                }
            })
        })
        .collect();

    // Resizing: limits and reservations move while all that runs.
    let resizer = {
        let (bulkheads, stop) = (bulkheads.clone(), Arc::clone(&stop));
        thread::spawn(move || {
            let mut step = 0usize;
            while !stop.load(Relaxed) {
                step += 1;
                let which = step % 4;
                let (low, high) = RESERVED[which];
                let reserved = if step.is_multiple_of(3) { high } else { low };
                let max = 4 + (step % 5) as u32;
                let bulkhead = &bulkheads[which];
                if step.is_multiple_of(2) {
                    bulkhead.set_max_concurrent(max.max(high)).unwrap();
                }
                bulkhead.set_reserved(Some(reserved)).unwrap();
                thread::sleep(Duration::from_micros(200));
            }
            for (bulkhead, &(low, _)) in bulkheads.iter().zip(&RESERVED) {
                bulkhead.set_max_concurrent(8).unwrap();
                bulkhead.set_reserved(Some(low)).unwrap();
            }
        })
    };

    thread::sleep(Duration::from_secs(2));
    stop.store(true, Relaxed);
    for thread in threads {
        thread.join().unwrap();
    }
    resizer.join().unwrap();
    runtime.block_on(async {
        for task in tasks {
            task.await.unwrap();
        }
    });
    drop(runtime);

    assert!(
        check.calls.load(Relaxed) > 1000,
        "too little traffic to judge"
    );
    assert_eq!(*check.inside.lock().unwrap(), [0; 4]);
    assert_eq!(pool.borrowed(), 0, "pool slots lost");
    for (bulkhead, &(low, _)) in bulkheads.iter().zip(&RESERVED) {
        assert_eq!(bulkhead.concurrent_calls(), 0);
        assert_eq!(bulkhead.waiting_calls(), 0);
        assert_eq!(bulkhead.reserved(), low);
    }
    let reserved: u32 = RESERVED.iter().map(|r| r.0).sum();
    assert_eq!(pool.unreserved(), BUDGET - reserved);
    // Every reserved slot at once, and exactly the unreserved ones beyond.
    let mut held = Vec::new();
    for (bulkhead, &(low, _)) in bulkheads.iter().zip(&RESERVED) {
        for _ in 0..low {
            held.push(bulkhead.try_enter().expect("a reserved slot"));
        }
    }
    for _ in 0..BUDGET - reserved {
        held.push(bulkheads[0].try_enter().expect("an unreserved slot"));
    }
    assert!(bulkheads.iter().all(|b| b.try_enter().is_err()));
}

/// A call inside its bulkhead, counted by the check while it lives.
struct Inside<'a>(&'a Check, usize);

impl<'a> Inside<'a> {
    fn new(check: &'a Check, which: usize) -> Self {
        check.enter(which);
        Inside(check, which)
    }
}

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        self.0.leave(self.1);
    }
}

/// Bulkheads moved among six pools and off them while threads and tasks
/// call, wait and give up (each visits more pools than its state word has
/// link fields, so fields are mapped again and again while releases race
/// the moves): a move lets the new pool count calls past its budget until
/// they finish (documented), so the check here is that no slot is lost or
/// counted twice: at the end every pool is whole and every bulkhead takes
/// exactly what its last pool gives it.
#[test]
fn bulkheads_moving_between_pools_under_load_lose_no_slot() {
    let pools: Arc<Vec<SharedPool>> = Arc::new((0..6).map(|_| SharedPool::new(BUDGET)).collect());
    let bulkheads = bulkheads(&pools[0]);
    let stop = Arc::new(AtomicBool::new(false));
    let calls = Arc::new(AtomicU64::new(0));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let tasks: Vec<_> = (0..8)
        .map(|n| {
            let (bulkhead, stop, calls) = (
                bulkheads[n % 4].clone(),
                Arc::clone(&stop),
                Arc::clone(&calls),
            );
            runtime.spawn(async move {
                let mut i = 0u64;
                while !stop.load(Relaxed) {
                    i += 1;
                    let call = async {
                        if let Ok(_permit) = bulkhead.enter_async().await {
                            calls.fetch_add(1, Relaxed);
                            tokio::time::sleep(Duration::from_micros(50 * (i % 7))).await;
                        }
                    };
                    if i.is_multiple_of(3) {
                        let _ = tokio::time::timeout(Duration::from_micros(100), call).await;
                    } else {
                        call.await;
                    }
                    tokio::task::yield_now().await;
                }
            })
        })
        .collect();
    let threads: Vec<_> = (0..3)
        .map(|n| {
            let (bulkhead, stop, calls) = (
                bulkheads[(n + 1) % 4].clone(),
                Arc::clone(&stop),
                Arc::clone(&calls),
            );
            thread::spawn(move || {
                let mut i = 0u32;
                while !stop.load(Relaxed) {
                    i += 1;
                    let permit = if i.is_multiple_of(2) {
                        bulkhead.enter()
                    } else {
                        bulkhead.try_enter()
                    };
                    if permit.is_ok() {
                        calls.fetch_add(1, Relaxed);
                        if i.is_multiple_of(5) {
                            thread::sleep(Duration::from_micros(100));
                        }
                    }
                }
            })
        })
        .collect();
    let mover = {
        let (bulkheads, pools, stop) = (bulkheads.clone(), pools.clone(), Arc::clone(&stop));
        thread::spawn(move || {
            let mut step = 0usize;
            while !stop.load(Relaxed) {
                step += 1;
                let to = match step % 7 {
                    0 => None,
                    n => Some(&pools[(n + step / 7) % pools.len()]),
                };
                bulkheads[step % 4].move_to_pool(to);
                thread::sleep(Duration::from_micros(150));
            }
            // Everyone back on the first pool.
            for bulkhead in &bulkheads {
                bulkhead.move_to_pool(Some(&pools[0]));
            }
        })
    };

    thread::sleep(Duration::from_secs(2));
    stop.store(true, Relaxed);
    for thread in threads {
        thread.join().unwrap();
    }
    mover.join().unwrap();
    runtime.block_on(async {
        for task in tasks {
            task.await.unwrap();
        }
    });
    drop(runtime);

    assert!(calls.load(Relaxed) > 1000, "too little traffic to judge");
    for (i, pool) in pools.iter().enumerate() {
        assert_eq!(pool.borrowed(), 0, "pool slots of pool {i} lost");
        if i > 0 {
            assert_eq!(pool.unreserved(), BUDGET, "a reservation left on {i}");
        }
    }
    let reserved: u32 = RESERVED.iter().map(|r| r.0).sum();
    assert_eq!(pools[0].unreserved(), BUDGET - reserved);
    let mut held = Vec::new();
    for (bulkhead, &(low, _)) in bulkheads.iter().zip(&RESERVED) {
        assert_eq!(
            (bulkhead.concurrent_calls(), bulkhead.waiting_calls()),
            (0, 0)
        );
        assert!(bulkhead.is_on(&pools[0]));
        for _ in 0..low {
            held.push(bulkhead.try_enter().expect("a reserved slot"));
        }
    }
    for _ in 0..BUDGET - reserved {
        held.push(bulkheads[0].try_enter().expect("an unreserved slot"));
    }
    assert!(bulkheads.iter().all(|b| b.try_enter().is_err()));
}

/// A clock that panics while `fail` is set.
#[derive(Debug, Clone, Default)]
struct FlakyClock {
    inner: bulkhead_core::ManualClock,
    fail: Arc<AtomicBool>,
}

impl bulkhead_core::Clock for FlakyClock {
    fn now(&self) -> std::time::Instant {
        assert!(!self.fail.load(Relaxed), "clock failure");
        self.inner.now()
    }
    fn sleep_until(&self, deadline: std::time::Instant) -> bulkhead_core::Sleep {
        self.inner.sleep_until(deadline)
    }
    fn park_until(&self, deadline: std::time::Instant) {
        self.inner.park_until(deadline);
    }
}

fn poll_noop<F: std::future::Future + Unpin>(future: &mut F) -> std::task::Poll<F::Output> {
    std::pin::Pin::new(future).poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
}

/// On `pool`: a reserved call, a borrowed one and a queued waiter; the
/// borrowed one is released while the clock panics (its hand-off serves
/// the waiter, then raises the panic).
fn release_borrowed_while_the_clock_panics(
    bulkhead: &Bulkhead,
    pool: &SharedPool,
    clock: &FlakyClock,
) {
    assert!(bulkhead.is_on(pool));
    let own = bulkhead.try_enter().unwrap();
    let borrowed = bulkhead.try_enter().unwrap();
    assert_eq!(pool.borrowed(), 1);
    let mut waiter = bulkhead.enter_async();
    assert!(poll_noop(&mut waiter).is_pending());
    clock.fail.store(true, Relaxed);
    let released = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(borrowed)));
    clock.fail.store(false, Relaxed);
    assert!(
        released.is_err(),
        "the clock's panic is raised by the release"
    );
    let std::task::Poll::Ready(Ok(served)) = poll_noop(&mut waiter) else {
        panic!("the waiter was served");
    };
    drop((served, own));
    assert_eq!((pool.borrowed(), bulkhead.concurrent_calls()), (0, 0));
}

/// A release of a borrowed slot that unwinds (a panicking clock, or
/// waker) still settles what it owed its pool: later moves to new pools,
/// which need its link field to owe nothing, go through at once.
#[test]
fn a_release_that_unwinds_leaves_nothing_owed_and_moves_go_on() {
    let clock = FlakyClock::default();
    let pools: Vec<_> = (0..4).map(|_| SharedPool::new(2)).collect();
    let config = BulkheadConfig::builder()
        .max_concurrent(3)
        .reserved(1)
        .max_wait(Duration::from_secs(3600))
        .build()
        .unwrap();
    let context = PolicyContext::new(Arc::new(clock.clone()));
    let bulkhead = Bulkhead::with_pool("unwound", config, context, &pools[0]);
    release_borrowed_while_the_clock_panics(&bulkhead, &pools[0], &clock);
    bulkhead.move_to_pool(Some(&pools[1]));
    release_borrowed_while_the_clock_panics(&bulkhead, &pools[1], &clock);
    bulkhead.move_to_pool(Some(&pools[2]));
    // A fourth pool maps the field of one of the first two again.
    let (done, moved) = std::sync::mpsc::channel();
    let (mover, target) = (bulkhead.clone(), pools[3].clone());
    thread::spawn(move || {
        mover.move_to_pool(Some(&target));
        let _ = done.send(());
    });
    assert!(
        moved.recv_timeout(Duration::from_secs(10)).is_ok(),
        "the move waits for a field whose release unwound"
    );
    assert!(bulkhead.is_on(&pools[3]));
    bulkhead.set_max_concurrent(2).unwrap();
}
