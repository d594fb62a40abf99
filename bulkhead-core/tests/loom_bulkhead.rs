//! Model checks of the slot accounting with loom: every interleaving of
//! enter, exit, hand-off, cancellation, deadlines and limit changes at 2-3
//! threads keeps the invariants (never more than `max` in flight, no slot
//! lost or duplicated, an empty queue at the end).
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p bulkhead-core --release --test loom_bulkhead`.
#![cfg(loom)]

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bulkhead_core::{Bulkhead, BulkheadConfig, CallOutcome, Clock, ManualClock, PolicyContext};
use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::thread;

#[path = "loom_bulkhead/keyed.rs"]
mod keyed;

fn bulkhead(max: u32, max_wait: Duration, clock: &ManualClock) -> Bulkhead {
    let config = BulkheadConfig::builder()
        .max_concurrent(max)
        .max_wait(max_wait)
        .build()
        .unwrap();
    Bulkhead::with_context("loom", config, PolicyContext::new(Arc::new(clock.clone())))
}

fn poll_noop<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
    Pin::new(future).poll(&mut Context::from_waker(Waker::noop()))
}

/// Everything is given back and nobody is left queued.
fn assert_idle(bulkhead: &Bulkhead, max: u32) {
    assert_eq!(bulkhead.concurrent_calls(), 0);
    assert_eq!(bulkhead.waiting_calls(), 0);
    let all: Vec<_> = (0..max).map(|_| bulkhead.try_enter()).collect();
    assert!(all.iter().all(Result::is_ok), "capacity was lost");
    assert!(bulkhead.try_enter().is_err(), "capacity was duplicated");
}

#[test]
fn try_enter_and_exit_never_exceed_the_limit() {
    loom::model(|| {
        let clock = ManualClock::new();
        let bulkhead = bulkhead(1, Duration::ZERO, &clock);
        let inside = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let (bulkhead, inside) = (bulkhead.clone(), Arc::clone(&inside));
                thread::spawn(move || {
                    if let Ok(_permit) = bulkhead.try_enter() {
                        assert_eq!(inside.fetch_add(1, SeqCst), 0, "two calls inside");
                        inside.fetch_sub(1, SeqCst);
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_idle(&bulkhead, 1);
    });
}

#[test]
fn a_blocked_thread_is_handed_the_released_slot() {
    loom::model(|| {
        let clock = ManualClock::new();
        let bulkhead = bulkhead(1, Duration::from_secs(3600), &clock);
        let held = bulkhead.try_enter().unwrap();
        let waiter = {
            let bulkhead = bulkhead.clone();
            thread::spawn(move || bulkhead.enter().map(drop).is_ok())
        };
        drop(held);
        assert!(
            waiter.join().unwrap(),
            "the clock never moved: it must get the slot"
        );
        assert_idle(&bulkhead, 1);
    });
}

#[test]
fn an_async_waiter_cancelled_while_a_slot_is_released_loses_nothing() {
    loom::model(|| {
        let clock = ManualClock::new();
        let bulkhead = bulkhead(1, Duration::from_secs(3600), &clock);
        let held = bulkhead.try_enter_owned().unwrap();
        let mut waiter = bulkhead.enter_async();
        assert!(poll_noop(&mut waiter).is_pending());
        let releaser = thread::spawn(move || drop(held));
        // Drop the waiter at any point around the release: either it was
        // still queued, or the slot was handed to it and must be passed on.
        drop(waiter);
        releaser.join().unwrap();
        assert_idle(&bulkhead, 1);
    });
}

#[test]
fn two_async_waiters_with_one_cancelled_the_other_gets_the_slot() {
    loom::model(|| {
        let clock = ManualClock::new();
        let bulkhead = bulkhead(1, Duration::from_secs(3600), &clock);
        let held = bulkhead.try_enter_owned().unwrap();
        let mut first = bulkhead.enter_async();
        assert!(poll_noop(&mut first).is_pending());
        let second = {
            let bulkhead = bulkhead.clone();
            thread::spawn(move || {
                let permit = loom::future::block_on(bulkhead.enter_async());
                permit.is_ok()
            })
        };
        let releaser = thread::spawn(move || drop(held));
        drop(first);
        releaser.join().unwrap();
        assert!(second.join().unwrap());
        assert_idle(&bulkhead, 1);
    });
}

#[test]
fn a_deadline_racing_a_release_either_admits_or_rejects_cleanly() {
    loom::model(|| {
        let clock = ManualClock::new();
        let bulkhead = bulkhead(1, Duration::from_secs(1), &clock);
        let held = bulkhead.try_enter().unwrap();
        let waiter = {
            let bulkhead = bulkhead.clone();
            thread::spawn(move || bulkhead.enter().map(drop).is_ok())
        };
        let advancer = {
            let clock = clock.clone();
            thread::spawn(move || clock.advance(Duration::from_secs(1)))
        };
        drop(held);
        advancer.join().unwrap();
        // Admitted or rejected, it returns: the advance or the hand-off woke it.
        let _ = waiter.join().unwrap();
        assert_idle(&bulkhead, 1);
    });
}

#[test]
fn an_async_deadline_racing_a_release_either_admits_or_rejects_cleanly() {
    loom::model(|| {
        let clock = ManualClock::new();
        let bulkhead = bulkhead(1, Duration::from_secs(1), &clock);
        let held = bulkhead.try_enter_owned().unwrap();
        let waiter = {
            let bulkhead = bulkhead.clone();
            thread::spawn(move || {
                loom::future::block_on(bulkhead.enter_async())
                    .map(drop)
                    .is_ok()
            })
        };
        let releaser = thread::spawn(move || drop(held));
        clock.advance(Duration::from_secs(1));
        releaser.join().unwrap();
        let _ = waiter.join().unwrap();
        assert_idle(&bulkhead, 1);
    });
}

#[test]
fn a_sync_and_an_async_waiter_both_get_served() {
    // Three threads: at 4 preemptions this search took 4 minutes of CI's
    // 2 cores; 3 takes 4 s (see `model_bounded`).
    model_bounded(3, || {
        let clock = ManualClock::new();
        let bulkhead = bulkhead(1, Duration::from_secs(3600), &clock);
        let held = bulkhead.try_enter().unwrap();
        let sync_waiter = {
            let bulkhead = bulkhead.clone();
            thread::spawn(move || bulkhead.enter().map(drop).is_ok())
        };
        let async_waiter = {
            let bulkhead = bulkhead.clone();
            thread::spawn(move || {
                loom::future::block_on(bulkhead.enter_async())
                    .map(drop)
                    .is_ok()
            })
        };
        drop(held);
        assert!(sync_waiter.join().unwrap());
        assert!(async_waiter.join().unwrap());
        assert_idle(&bulkhead, 1);
    });
}

#[test]
fn raising_the_limit_while_a_slot_is_released_admits_the_waiter() {
    loom::model(|| {
        let clock = ManualClock::new();
        let bulkhead = bulkhead(1, Duration::from_secs(3600), &clock);
        let held = bulkhead.try_enter().unwrap();
        let waiter = {
            let bulkhead = bulkhead.clone();
            thread::spawn(move || bulkhead.enter().map(drop).is_ok())
        };
        let grower = {
            let bulkhead = bulkhead.clone();
            thread::spawn(move || bulkhead.set_max_concurrent(2).unwrap())
        };
        drop(held);
        grower.join().unwrap();
        assert!(waiter.join().unwrap());
        assert_idle(&bulkhead, 2);
    });
}

#[test]
fn the_manual_clock_reads_the_same_time_on_every_thread() {
    loom::model(|| {
        let clock = ManualClock::new();
        let start = clock.now();
        let other = {
            let clock = clock.clone();
            thread::spawn(move || clock.now())
        };
        clock.advance(Duration::from_secs(1));
        let seen = other.join().unwrap();
        assert!(seen == start || seen == start + Duration::from_secs(1));
    });
}

/// A slot released to a queued async waiter while a newcomer tries to
/// take one with `newcomer` (true if it got one): the newcomer never
/// does, and the waiter is served.
fn a_release_to_a_queued_waiter_racing(newcomer: fn(&Bulkhead) -> bool) {
    loom::model(move || {
        let clock = ManualClock::new();
        let bulkhead = bulkhead(1, Duration::from_secs(3600), &clock);
        let held = bulkhead.try_enter_owned().unwrap();
        let mut waiter = bulkhead.enter_async();
        assert!(poll_noop(&mut waiter).is_pending());
        let releaser = thread::spawn(move || drop(held));
        let overtaken = {
            let bulkhead = bulkhead.clone();
            thread::spawn(move || newcomer(&bulkhead))
        };
        assert!(
            !overtaken.join().unwrap(),
            "the newcomer overtook the queue"
        );
        releaser.join().unwrap();
        assert!(matches!(poll_noop(&mut waiter), Poll::Ready(Ok(_))));
        drop(waiter);
        assert_idle(&bulkhead, 1);
    });
}

#[test]
fn a_newcomer_never_takes_a_slot_released_to_a_queued_waiter() {
    a_release_to_a_queued_waiter_racing(|bulkhead| bulkhead.try_enter().map(drop).is_ok());
}

/// A generated sync method's fast path: `enter_at_once`, and `enter` when
/// it cannot decide (`None`), as the wrapper calls them.
fn enter_as_a_wrapper(bulkhead: &Bulkhead) -> Option<bulkhead_core::BulkheadPermit<'_>> {
    match bulkhead.enter_at_once() {
        Some(entered) => entered.ok(),
        None => bulkhead.enter().ok(),
    }
}

#[test]
fn enter_at_once_racing_a_release_and_another_caller_never_exceeds_the_limit() {
    loom::model(|| {
        let clock = ManualClock::new();
        let bulkhead = bulkhead(1, Duration::ZERO, &clock);
        let held = bulkhead.try_enter_owned().unwrap();
        let inside = Arc::new(AtomicUsize::new(0));
        let releaser = thread::spawn(move || drop(held));
        let callers: Vec<_> = (0..2)
            .map(|_| {
                let (bulkhead, inside) = (bulkhead.clone(), Arc::clone(&inside));
                thread::spawn(move || {
                    if let Some(_permit) = enter_as_a_wrapper(&bulkhead) {
                        assert_eq!(inside.fetch_add(1, SeqCst), 0, "two calls inside");
                        inside.fetch_sub(1, SeqCst);
                    }
                })
            })
            .collect();
        callers.into_iter().for_each(|t| t.join().unwrap());
        releaser.join().unwrap();
        assert_idle(&bulkhead, 1);
    });
}

#[test]
fn enter_at_once_never_takes_a_slot_released_to_a_queued_waiter() {
    // `Some(Ok)` would be a slot taken past the queue; `None` sends the
    // wrapper to `enter`, which queues behind the waiter.
    a_release_to_a_queued_waiter_racing(|bulkhead| matches!(bulkhead.enter_at_once(), Some(Ok(_))));
}

#[test]
fn two_concurrent_releases_serve_two_waiters() {
    loom::model(|| {
        let clock = ManualClock::new();
        let bulkhead = bulkhead(2, Duration::from_secs(3600), &clock);
        let (a, b) = (
            bulkhead.try_enter_owned().unwrap(),
            bulkhead.try_enter_owned().unwrap(),
        );
        let mut first = bulkhead.enter_async();
        let mut second = bulkhead.enter_async();
        assert!(poll_noop(&mut first).is_pending());
        assert!(poll_noop(&mut second).is_pending());
        let releasers = [
            thread::spawn(move || drop(a)),
            thread::spawn(move || drop(b)),
        ];
        releasers.into_iter().for_each(|r| r.join().unwrap());
        assert!(matches!(poll_noop(&mut first), Poll::Ready(Ok(_))));
        assert!(matches!(poll_noop(&mut second), Poll::Ready(Ok(_))));
        drop((first, second));
        assert_idle(&bulkhead, 2);
    });
}

#[test]
fn a_waiter_whose_deadline_passed_before_the_release_never_gets_the_slot() {
    loom::model(|| {
        let clock = ManualClock::new();
        let bulkhead = bulkhead(1, Duration::from_secs(1), &clock);
        let held = bulkhead.try_enter_owned().unwrap();
        let mut waiter = bulkhead.enter_async();
        assert!(poll_noop(&mut waiter).is_pending());
        clock.advance(Duration::from_secs(1));
        // The release, a newcomer and the expired waiter's own poll race.
        let releaser = thread::spawn(move || drop(held));
        let newcomer = {
            let bulkhead = bulkhead.clone();
            thread::spawn(move || bulkhead.try_enter().map(drop).is_ok())
        };
        assert!(
            matches!(poll_noop(&mut waiter), Poll::Ready(Err(_))),
            "an expired waiter was handed a slot"
        );
        releaser.join().unwrap();
        let _ = newcomer.join().unwrap();
        drop(waiter);
        assert_idle(&bulkhead, 1);
    });
}

#[test]
fn a_cancelled_waiter_passes_its_slot_over_an_expired_one() {
    loom::model(|| {
        let clock = ManualClock::new();
        let bulkhead = bulkhead(1, Duration::from_secs(1), &clock);
        let held = bulkhead.try_enter_owned().unwrap();
        let mut first = bulkhead.enter_async();
        assert!(poll_noop(&mut first).is_pending());
        clock.advance(Duration::from_millis(500));
        let mut second = bulkhead.enter_async();
        assert!(poll_noop(&mut second).is_pending());
        // `first` expires, `second` does not; `first` is dropped while the
        // slot is released.
        clock.advance(Duration::from_millis(500));
        let releaser = thread::spawn(move || drop(held));
        drop(first);
        releaser.join().unwrap();
        assert!(matches!(poll_noop(&mut second), Poll::Ready(Ok(_))));
        drop(second);
        assert_idle(&bulkhead, 1);
    });
}

/// An adaptive bulkhead (ceiling 4, starting at 2) past its first window,
/// whose next release closes a window.
fn adaptive(clock: &ManualClock) -> Bulkhead {
    use bulkhead_core::Adaptive;
    use bulkhead_core::adaptive::Sampling;

    let config = BulkheadConfig::builder()
        .max_concurrent(4)
        .initial_concurrent(2)
        .adaptive(Adaptive::Gradient2)
        .sampling(Sampling::builder().min_samples(1).build().unwrap())
        .build()
        .unwrap();
    let bulkhead =
        Bulkhead::with_context("loom", config, PolicyContext::new(Arc::new(clock.clone())));
    while bulkhead.adaptive().unwrap().no_load.is_none() {
        let permits: Vec<_> = (0..2).map(|_| bulkhead.try_enter().unwrap()).collect();
        clock.advance(Duration::from_millis(50));
        drop(permits);
    }
    clock.advance(Duration::from_secs(1));
    bulkhead
}

#[test]
fn an_adaptive_window_closing_while_the_ceiling_moves_never_exceeds_it() {
    loom::model(|| {
        let clock = ManualClock::new();
        let bulkhead = adaptive(&clock);
        let inside = Arc::new(AtomicUsize::new(0));
        let caller = {
            let (bulkhead, inside) = (bulkhead.clone(), Arc::clone(&inside));
            thread::spawn(move || {
                for _ in 0..2 {
                    if let Ok(mut permit) = bulkhead.try_enter() {
                        assert!(inside.fetch_add(1, SeqCst) < 4, "over the ceiling");
                        inside.fetch_sub(1, SeqCst);
                        // A drop: the window it closes cuts the limit.
                        permit.set_outcome(CallOutcome::Dropped);
                    }
                }
            })
        };
        bulkhead.set_max_concurrent(1).unwrap();
        caller.join().unwrap();
        assert_eq!(
            bulkhead.max_concurrent(),
            1,
            "the limit in force obeys the ceiling"
        );
        assert_eq!(bulkhead.config().max_concurrent(), 1);
        assert_idle(&bulkhead, 1);
    });
}

#[test]
fn concurrent_adaptive_completions_never_admit_more_than_the_limit_in_force() {
    loom::model(|| {
        let clock = ManualClock::new();
        let bulkhead = adaptive(&clock);
        let inside = Arc::new(AtomicUsize::new(0));
        let callers: Vec<_> = (0..2)
            .map(|_| {
                let (bulkhead, inside) = (bulkhead.clone(), Arc::clone(&inside));
                thread::spawn(move || {
                    if let Ok(mut permit) = bulkhead.try_enter() {
                        let now = inside.fetch_add(1, SeqCst) + 1;
                        // Admitted only below the limit, which the window
                        // closer cuts (the call is dropped) and never
                        // beyond the ceiling.
                        assert!(now <= 2, "over the limit in force");
                        inside.fetch_sub(1, SeqCst);
                        permit.set_outcome(CallOutcome::Dropped);
                    }
                })
            })
            .collect();
        callers.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(bulkhead.max_concurrent(), 1, "the drops cut the limit");
        assert_idle(&bulkhead, 1);
    });
}

#[test]
fn an_adaptive_window_closing_while_a_cap_is_set_never_leaves_the_limit_above_it() {
    loom::model(|| {
        let clock = ManualClock::new();
        let bulkhead = adaptive(&clock);
        let caller = {
            let bulkhead = bulkhead.clone();
            thread::spawn(move || {
                for _ in 0..2 {
                    // Successes at a full bulkhead: the window they close
                    // would let the algorithm grow.
                    drop(bulkhead.try_enter());
                }
            })
        };
        assert!(bulkhead.set_limit_cap(Some(1)) <= 1);
        caller.join().unwrap();
        assert!(bulkhead.max_concurrent() <= 1, "the cap holds");
        assert!(bulkhead.adaptive().unwrap().limit <= 1, "the algorithm too");
        assert_eq!(bulkhead.config().max_concurrent(), 4, "the ceiling is kept");
    });
}

// Two bulkheads on one pool. The invariant, checked inside every body
// under a lock of the model: the sum over the bulkheads of
// max(calls inside, reserved) never exceeds the budget (calls inside are
// counted after entering and before leaving, so they never exceed the
// bulkhead's own count).

use bulkhead_core::SharedPool;

struct Inside {
    counts: loom::sync::Mutex<[u32; 2]>,
    reserved: [u32; 2],
    budget: u32,
}

impl Inside {
    fn new(reserved: [u32; 2], budget: u32) -> Arc<Self> {
        Arc::new(Inside {
            counts: loom::sync::Mutex::new([0; 2]),
            reserved,
            budget,
        })
    }

    fn run(&self, which: usize) {
        let mut counts = self.counts.lock().unwrap();
        counts[which] += 1;
        let used: u32 = (0..2).map(|i| counts[i].max(self.reserved[i])).sum();
        assert!(used <= self.budget, "{counts:?} over the budget");
        drop(counts);
        self.counts.lock().unwrap()[which] -= 1;
    }
}

fn pooled(pool: &SharedPool, clock: &ManualClock, reserved: u32, max: u32) -> Bulkhead {
    let config = BulkheadConfig::builder()
        .max_concurrent(max)
        .reserved(reserved)
        .max_wait(Duration::from_secs(3600))
        .build()
        .unwrap();
    Bulkhead::with_pool(
        "loom-pool",
        config,
        PolicyContext::new(Arc::new(clock.clone())),
        pool,
    )
}

/// Everything given back to the pool: nothing borrowed, and the whole
/// unreserved part can be borrowed again by `bulkhead`.
fn assert_pool_idle(pool: &SharedPool, bulkheads: &[&Bulkhead]) {
    assert_eq!(pool.borrowed(), 0, "a pool slot was lost");
    for bulkhead in bulkheads {
        assert_eq!(bulkhead.concurrent_calls(), 0);
        assert_eq!(bulkhead.waiting_calls(), 0);
    }
}

#[test]
fn a_reserved_slot_is_never_refused_while_the_other_borrows() {
    loom::model(|| {
        let (clock, pool) = (ManualClock::new(), SharedPool::new(4));
        let a = pooled(&pool, &clock, 1, 3);
        let b = pooled(&pool, &clock, 2, 3);
        let inside = Inside::new([1, 2], 4);
        let own = a.try_enter_owned().unwrap();
        let borrower = {
            let (a, inside) = (a.clone(), Arc::clone(&inside));
            thread::spawn(move || {
                // Past its reservation: borrows the one unreserved slot.
                let permit = a.try_enter().expect("the unreserved slot is free");
                inside.run(0);
                drop(permit);
            })
        };
        let reserved = {
            let (b, inside) = (b.clone(), Arc::clone(&inside));
            thread::spawn(move || {
                let permit = b.try_enter().expect("a reserved slot is never refused");
                inside.run(1);
                drop(permit);
            })
        };
        let second = b.try_enter().expect("a reserved slot is never refused");
        inside.run(1);
        drop(second);
        borrower.join().unwrap();
        reserved.join().unwrap();
        drop(own);
        assert_pool_idle(&pool, &[&a, &b]);
        assert_eq!(pool.unreserved(), 1);
    });
}

#[test]
fn two_borrowers_race_for_one_pool_slot() {
    loom::model(|| {
        let (clock, pool) = (ManualClock::new(), SharedPool::new(3));
        let a = pooled(&pool, &clock, 1, 2);
        let b = pooled(&pool, &clock, 1, 2);
        let inside = Inside::new([1, 1], 3);
        let (a1, b1) = (a.try_enter_owned().unwrap(), b.try_enter_owned().unwrap());
        let admitted = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = [(a.clone(), 0), (b.clone(), 1)]
            .into_iter()
            .map(|(bulkhead, which)| {
                let (inside, admitted) = (Arc::clone(&inside), Arc::clone(&admitted));
                thread::spawn(move || {
                    if let Ok(_permit) = bulkhead.try_enter() {
                        admitted.fetch_add(1, SeqCst);
                        inside.run(which);
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert!(admitted.load(SeqCst) >= 1, "the free pool slot went unused");
        drop((a1, b1));
        assert_pool_idle(&pool, &[&a, &b]);
    });
}

#[test]
fn a_pool_waiter_cancelled_while_a_borrowed_slot_comes_back_loses_nothing() {
    loom::model(|| {
        let (clock, pool) = (ManualClock::new(), SharedPool::new(3));
        let a = pooled(&pool, &clock, 1, 3);
        let b = pooled(&pool, &clock, 1, 3);
        let a1 = a.try_enter_owned().unwrap();
        let borrowed = a.try_enter_owned().unwrap();
        let b1 = b.try_enter_owned().unwrap();
        let mut waiter = b.enter_async();
        assert!(poll_noop(&mut waiter).is_pending());
        let releaser = thread::spawn(move || drop(borrowed));
        drop(waiter);
        releaser.join().unwrap();
        drop((a1, b1));
        assert_pool_idle(&pool, &[&a, &b]);
        // The unreserved slot can be borrowed again.
        let (x, y) = (b.try_enter().unwrap(), b.try_enter().unwrap());
        assert!(b.try_enter().is_err());
        drop((x, y));
    });
}

#[test]
fn a_pool_waiter_is_handed_a_borrowed_slot_released_on_another_bulkhead() {
    loom::model(|| {
        let (clock, pool) = (ManualClock::new(), SharedPool::new(3));
        let a = pooled(&pool, &clock, 1, 3);
        let b = pooled(&pool, &clock, 1, 3);
        let inside = Inside::new([1, 1], 3);
        let a1 = a.try_enter_owned().unwrap();
        let borrowed = a.try_enter_owned().unwrap();
        let b1 = b.try_enter_owned().unwrap();
        let waiter = {
            let (b, inside) = (b.clone(), Arc::clone(&inside));
            thread::spawn(move || {
                let permit = b.enter().expect("the clock never moved");
                inside.run(1);
                drop(permit);
            })
        };
        drop(borrowed);
        waiter.join().unwrap();
        drop((a1, b1));
        assert_pool_idle(&pool, &[&a, &b]);
    });
}

#[test]
fn raising_a_reservation_while_the_other_borrows_keeps_the_invariant() {
    loom::model(|| {
        let (clock, pool) = (ManualClock::new(), SharedPool::new(4));
        let a = pooled(&pool, &clock, 1, 3);
        let b = pooled(&pool, &clock, 1, 3);
        // a's own call is inside from the start.
        let counts = Arc::new(loom::sync::Mutex::new([1u32, 0]));
        let own = a.try_enter_owned().unwrap();
        let borrower = {
            let (a, b, counts) = (a.clone(), b.clone(), Arc::clone(&counts));
            thread::spawn(move || {
                if let Ok(permit) = a.try_enter() {
                    let mut inside = counts.lock().unwrap();
                    inside[0] += 1;
                    // a's reservation does not change: only b's, read last
                    // (its calls are not counted: it reserves them all).
                    let used = inside[0].max(1) + b.reserved();
                    assert!(used <= 4, "{inside:?}, b reserves {}", b.reserved());
                    inside[0] -= 1;
                    drop(inside);
                    drop(permit);
                }
            })
        };
        b.set_reserved(Some(3)).unwrap();
        let b_own: Vec<_> = (0..b.reserved()).map(|_| b.try_enter().unwrap()).collect();
        borrower.join().unwrap();
        drop((own, b_own));
        assert_pool_idle(&pool, &[&a, &b]);
        assert_eq!(
            b.reserved(),
            3,
            "the raise took effect once the slot came back: {pool:?}"
        );
        assert_eq!(pool.unreserved(), 0);
    });
}

/// A bulkhead on `from` (budget 2, reserving 1 of its limit of 3) holding
/// its reserved slot and a borrowed one, and one on `to` (budget 3)
/// reserving 1 of its 2.
fn mover(clock: &ManualClock) -> (SharedPool, SharedPool, Bulkhead, Bulkhead) {
    let (from, to) = (SharedPool::new(2), SharedPool::new(3));
    let mover = pooled(&from, clock, 1, 3);
    let other = pooled(&to, clock, 1, 2);
    (from, to, mover, other)
}

/// After the move and everything released: nothing owed to either pool,
/// the mover's reservation on `to`, and `to` lending its free slot.
fn assert_moved(from: &SharedPool, to: &SharedPool, mover: &Bulkhead, other: &Bulkhead) {
    assert_pool_idle(from, &[mover, other]);
    assert_pool_idle(to, &[mover, other]);
    assert!(mover.is_on(to));
    assert_eq!((from.unreserved(), to.unreserved()), (2, 1));
    let held: Vec<_> = (0..2).map(|_| mover.try_enter().unwrap()).collect();
    assert!(mover.try_enter().is_err());
    drop(held);
}

#[test]
fn a_move_racing_a_borrowed_release_gives_the_slot_back_to_its_lender_once() {
    loom::model(|| {
        let clock = ManualClock::new();
        let (from, to, mover, other) = mover(&clock);
        let own = mover.try_enter_owned().unwrap();
        let borrowed = mover.try_enter_owned().unwrap();
        assert_eq!(from.borrowed(), 1);
        let releaser = thread::spawn(move || drop(borrowed));
        mover.move_to_pool(Some(&to));
        releaser.join().unwrap();
        drop(own);
        assert_moved(&from, &to, &mover, &other);
    });
}

#[test]
fn a_move_racing_a_borrower_leaves_it_on_one_pool_or_the_other() {
    loom::model(|| {
        let clock = ManualClock::new();
        let (from, to, mover, other) = mover(&clock);
        let own = mover.try_enter_owned().unwrap();
        let borrower = {
            let mover = mover.clone();
            // Borrows on whichever pool it finds (both have a free slot).
            thread::spawn(move || mover.try_enter_owned().expect("a pool slot is free"))
        };
        mover.move_to_pool(Some(&to));
        let borrowed = borrower.join().unwrap();
        assert_eq!(from.borrowed() + to.borrowed(), 1, "counted once");
        drop((own, borrowed));
        assert_moved(&from, &to, &mover, &other);
    });
}

/// A sync caller that enters and, while inside, checks that it is alone.
fn enter_alone(bulkhead: Bulkhead, inside: Arc<AtomicUsize>) -> thread::JoinHandle<bool> {
    thread::spawn(move || match bulkhead.enter() {
        Ok(permit) => {
            assert_eq!(inside.fetch_add(1, SeqCst), 0, "two calls inside");
            inside.fetch_sub(1, SeqCst);
            drop(permit);
            true
        }
        Err(_) => false,
    })
}

#[test]
fn a_sync_newcomer_may_take_a_slot_offered_to_a_waking_thread_and_both_are_served() {
    // Three threads: 3 preemptions (2 s, against 2 minutes at 4); removing
    // the passed-over waiter's `link_front` still fails at 3.
    model_bounded(3, || {
        let clock = ManualClock::new();
        let bulkhead = bulkhead(1, Duration::from_secs(3600), &clock);
        let held = bulkhead.try_enter().unwrap();
        let inside = Arc::new(AtomicUsize::new(0));
        // Either may queue first; the release offers the slot to whoever
        // did, and the other may take it while it wakes up.
        let waiter = enter_alone(bulkhead.clone(), Arc::clone(&inside));
        let newcomer = enter_alone(bulkhead.clone(), Arc::clone(&inside));
        drop(held);
        assert!(waiter.join().unwrap(), "the clock never moved");
        assert!(newcomer.join().unwrap(), "the clock never moved");
        assert_idle(&bulkhead, 1);
    });
}

#[test]
fn an_offered_slot_racing_a_deadline_and_a_newcomer_is_never_lost() {
    // Three threads: 3 preemptions (2 s, against 3 minutes at 4); removing
    // the passed-over waiter's `link_front` still fails at 3.
    model_bounded(3, || {
        let clock = ManualClock::new();
        let bulkhead = bulkhead(1, Duration::from_secs(1), &clock);
        let held = bulkhead.try_enter().unwrap();
        let inside = Arc::new(AtomicUsize::new(0));
        let waiter = enter_alone(bulkhead.clone(), Arc::clone(&inside));
        let newcomer = enter_alone(bulkhead.clone(), Arc::clone(&inside));
        drop(held);
        clock.advance(Duration::from_secs(1));
        // Admitted or rejected, both return, and the slot is free again.
        let _ = waiter.join().unwrap();
        let _ = newcomer.join().unwrap();
        assert_idle(&bulkhead, 1);
    });
}

/// `loom::model` with at most `bound` preemptions (below `LOOM_MAX_PREEMPTIONS`
/// if that is lower): for the models of three threads, whose full search at
/// the suite's bound takes minutes.
fn model_bounded<F: Fn() + Sync + Send + 'static>(bound: usize, f: F) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(builder.preemption_bound.map_or(bound, |b| b.min(bound)));
    builder.check(f);
}

/// `to` is fully reserved by `other` (budget 1, reserved 1): nobody
/// may ever borrow from it. The mover arrives with two calls in flight, both
/// past its reservation (0 granted). A release of one of them between the
/// move's compare-exchange and its `lend` gives a slot back to `to` before
/// `to` counted it: the borrowed field wraps and borrows from the cap field,
/// so `room` reads huge and `other` borrows a slot that does not exist.
#[test]
fn a_release_between_a_moves_swap_and_its_loan_lets_nobody_borrow_what_is_not_there() {
    model_bounded(3, || {
        let clock = ManualClock::new();
        let (from, to) = (SharedPool::new(2), SharedPool::new(1));
        let mover = pooled(&from, &clock, 1, 3);
        let other = pooled(&to, &clock, 1, 2);
        let other_own = other.try_enter_owned().unwrap();
        let own = mover.try_enter_owned().unwrap();
        let borrowed = mover.try_enter_owned().unwrap();
        assert_eq!((from.borrowed(), to.unreserved()), (1, 0));
        let releaser = thread::spawn(move || drop(borrowed));
        let borrower = {
            let other = other.clone();
            thread::spawn(move || other.try_enter_owned().is_ok())
        };
        mover.move_to_pool(Some(&to));
        releaser.join().unwrap();
        let borrowed_from_nothing = borrower.join().unwrap();
        assert!(
            !borrowed_from_nothing,
            "other borrowed from a pool with no unreserved slot: {to:?}"
        );
        drop((own, other_own));
    });
}

/// a blocked waiter of the mover is served whichever side of the
/// move the release of a borrowed slot falls.
#[test]
fn a_move_racing_a_release_serves_the_movers_blocked_waiter() {
    model_bounded(2, || {
        let clock = ManualClock::new();
        let (from, to, mover, other) = mover(&clock);
        let own = mover.try_enter_owned().unwrap();
        let borrowed = mover.try_enter_owned().unwrap();
        let third = mover.try_enter_owned();
        assert!(third.is_err(), "from lent its only slot");
        let waiter = {
            let mover = mover.clone();
            thread::spawn(move || mover.enter().is_ok())
        };
        let releaser = thread::spawn(move || drop(borrowed));
        mover.move_to_pool(Some(&to));
        releaser.join().unwrap();
        assert!(waiter.join().unwrap(), "the waiter is served");
        drop(own);
        assert_moved(&from, &to, &mover, &other);
    });
}

/// a move off the pool racing the release of the slot it borrowed
/// serves the other bulkhead's blocked waiter exactly once.
#[test]
fn a_move_off_the_pool_racing_its_borrowed_release_serves_the_lenders_waiter() {
    model_bounded(2, || {
        let clock = ManualClock::new();
        let from = SharedPool::new(2);
        let mover = pooled(&from, &clock, 1, 3);
        let other = pooled(&from, &clock, 0, 1);
        let own = mover.try_enter_owned().unwrap();
        let borrowed = mover.try_enter_owned().unwrap();
        let waiter = {
            let other = other.clone();
            thread::spawn(move || other.enter().is_ok())
        };
        let releaser = thread::spawn(move || drop(borrowed));
        mover.move_to_pool(None);
        releaser.join().unwrap();
        assert!(waiter.join().unwrap(), "the lender's waiter is served");
        drop(own);
        assert_pool_idle(&from, &[&other]);
        assert_eq!((from.borrowed(), from.unreserved()), (0, 2));
    });
}

/// A bulkhead on a pool whose `reserved` follows its `max_concurrent` (no
/// `reserved` given), its limit lowered from 3 to 1 while a caller holds
/// one slot and tries for another. Once the caller has seen the new limit
/// in force, nothing may admit it past that limit (its first slot is
/// then the only one the limit allows).
#[test]
fn a_live_lowered_limit_on_a_pool_admits_nobody_past_it_once_in_force() {
    // 3 preemptions find the old order's admission past the limit (1 s,
    // against a minute at 4).
    model_bounded(3, || {
        let clock = ManualClock::new();
        let pool = SharedPool::new(4);
        let config = BulkheadConfig::builder().max_concurrent(3).build().unwrap();
        let bulkhead = Bulkhead::with_pool(
            "loom-resize",
            config,
            PolicyContext::new(Arc::new(clock.clone())),
            &pool,
        );
        let caller = {
            let bulkhead = bulkhead.clone();
            thread::spawn(move || {
                let first = bulkhead.try_enter().expect("3 slots free");
                let seen = bulkhead.max_concurrent();
                let second = bulkhead.try_enter();
                if seen == 1 {
                    assert!(second.is_err(), "admitted past the limit in force");
                }
                drop((first, second));
            })
        };
        bulkhead.set_max_concurrent(1).unwrap();
        caller.join().unwrap();
        assert_eq!((bulkhead.max_concurrent(), bulkhead.reserved()), (1, 1));
        assert_pool_idle(&pool, &[&bulkhead]);
    });
}

/// The invariants of one reading of the slots (`Bulkhead::occupancy`).
fn assert_agrees(now: &bulkhead_core::Occupancy) {
    assert!(now.available <= now.max_concurrent, "{now:?}");
    assert!(now.reserved <= now.max_concurrent, "{now:?}");
    assert!(
        now.available == 0 || now.concurrent_calls + now.available <= now.max_concurrent,
        "{now:?}"
    );
    // On a pool, the calls past `reserved`; off one, none.
    assert!(
        now.borrowed == 0 || now.borrowed == now.concurrent_calls.saturating_sub(now.reserved),
        "{now:?}"
    );
}

/// A reload on a pool (the limit lowered, then raised past where it was,
/// the reservation following it) racing a call and two readings: each
/// reading agrees with itself.
#[test]
fn a_reading_taken_while_a_pooled_limit_moves_agrees_with_itself() {
    model_bounded(3, || {
        let clock = ManualClock::new();
        let pool = SharedPool::new(4);
        let config = BulkheadConfig::builder().max_concurrent(3).build().unwrap();
        let bulkhead = Bulkhead::with_pool(
            "loom-reading",
            config,
            PolicyContext::new(Arc::new(clock.clone())),
            &pool,
        );
        let resizer = {
            let bulkhead = bulkhead.clone();
            thread::spawn(move || {
                bulkhead.set_max_concurrent(1).unwrap();
                bulkhead.set_max_concurrent(4).unwrap();
            })
        };
        let caller = {
            let bulkhead = bulkhead.clone();
            thread::spawn(move || drop(bulkhead.try_enter()))
        };
        assert_agrees(&bulkhead.occupancy());
        assert_agrees(&bulkhead.occupancy());
        resizer.join().unwrap();
        caller.join().unwrap();
        let end = bulkhead.occupancy();
        assert_agrees(&end);
        assert_eq!((end.max_concurrent, end.reserved, end.available), (4, 4, 4));
        assert_pool_idle(&pool, &[&bulkhead]);
    });
}

/// The same on a bulkhead off any pool, its limit moved by a cap (as a
/// fleet share does) while a call comes and goes.
#[test]
fn a_reading_taken_while_a_cap_moves_agrees_with_itself() {
    loom::model(|| {
        let clock = ManualClock::new();
        let bulkhead = bulkhead(3, Duration::ZERO, &clock);
        let capper = {
            let bulkhead = bulkhead.clone();
            thread::spawn(move || {
                bulkhead.set_limit_cap(Some(1));
                bulkhead.set_limit_cap(None);
            })
        };
        let permit = bulkhead.try_enter();
        assert_agrees(&bulkhead.occupancy());
        drop(permit);
        capper.join().unwrap();
        assert_agrees(&bulkhead.occupancy());
        assert_idle(&bulkhead, 3);
    });
}

/// A bulkhead reserving nothing (every call borrows), ceiling 2, taken
/// from `pools[0]` through `pools[1]` to `pools[2]`: every link field of its
/// word is mapped, so any further pool maps a field again.
fn through_three(pools: &[SharedPool], clock: &ManualClock) -> Bulkhead {
    let mover = pooled(&pools[0], clock, 0, 2);
    mover.move_to_pool(Some(&pools[1]));
    mover.move_to_pool(Some(&pools[2]));
    mover
}

/// Nothing borrowed anywhere, every budget unreserved, and the mover on
/// `last` with its two borrowable slots there.
fn assert_all_home(pools: &[SharedPool], mover: &Bulkhead, last: &SharedPool) {
    for (i, pool) in pools.iter().enumerate() {
        assert_eq!(pool.borrowed(), 0, "pool {i}: {pool:?}");
        assert_eq!(pool.unreserved(), 2, "pool {i}: {pool:?}");
    }
    assert!(mover.is_on(last));
    let held: Vec<_> = (0..2).map(|_| mover.try_enter().unwrap()).collect();
    assert!(mover.try_enter().is_err());
    assert_eq!(last.borrowed(), 2);
    drop(held);
}

/// A borrowed slot released while the bulkhead moves on through two more
/// pools, so that a link field is mapped again (the one its release may
/// still be giving back through, or another): the slot goes back to the
/// pool that lent it, once, and no field is mapped away from under it.
#[test]
fn a_borrowed_release_racing_moves_past_three_pools_goes_home_once() {
    model_bounded(3, || {
        bulkhead_core::explore_remaps(true);
        let clock = ManualClock::new();
        let pools: Vec<_> = (0..6).map(|_| SharedPool::new(2)).collect();
        let mover = through_three(&pools, &clock);
        let held = mover.try_enter_owned().unwrap();
        assert_eq!(pools[2].borrowed(), 1);
        let releaser = thread::spawn(move || drop(held));
        // The third of these maps the field of pools[2] again, unless a
        // release is still giving back through it.
        for pool in &pools[3..] {
            mover.move_to_pool(Some(pool));
        }
        releaser.join().unwrap();
        assert_all_home(&pools, &mover, &pools[5]);
    });
}

/// A borrower racing moves past three pools: it borrows on exactly one
/// of them (or on none), is counted there once, and gives back there.
#[test]
fn a_borrower_racing_moves_past_three_pools_is_counted_once() {
    model_bounded(2, || {
        bulkhead_core::explore_remaps(true);
        let clock = ManualClock::new();
        let pools: Vec<_> = (0..6).map(|_| SharedPool::new(2)).collect();
        let mover = through_three(&pools, &clock);
        let borrower = {
            let mover = mover.clone();
            thread::spawn(move || mover.try_enter_owned().ok())
        };
        for pool in &pools[3..] {
            mover.move_to_pool(Some(pool));
        }
        let permit = borrower.join().unwrap();
        let lent: u32 = pools.iter().map(SharedPool::borrowed).sum();
        assert_eq!(lent, u32::from(permit.is_some()), "counted once: {pools:?}");
        drop(permit);
        assert_all_home(&pools, &mover, &pools[5]);
    });
}

/// Only the ceiling is lowered (the reservation, 1, stays): the setter
/// holds one reserved and one borrowed call and sets the limit to 2. A
/// borrower that read the old ceiling before the change and adds itself
/// to the word after it must not be admitted once the setter has seen
/// 2 calls in flight after its change returned. (The setter's reading is
/// made fresh by a failing `try_enter`, whose borrow attempt is a
/// read-modify-write of the word.)
#[test]
fn a_lowered_ceiling_admits_no_borrower_after_the_change_returned() {
    model_bounded(3, || {
        let clock = ManualClock::new();
        let pool = SharedPool::new(4);
        let bulkhead = pooled(&pool, &clock, 1, 3);
        let own = bulkhead.try_enter().unwrap();
        let borrowed = bulkhead.try_enter().unwrap();
        assert_eq!((bulkhead.reserved(), bulkhead.borrowed()), (1, 1));
        let caller = {
            let bulkhead = bulkhead.clone();
            thread::spawn(move || bulkhead.try_enter_owned().ok())
        };
        bulkhead.set_max_concurrent(2).unwrap();
        assert!(bulkhead.try_enter().is_err(), "2 in flight, limit 2");
        let seen = bulkhead.concurrent_calls();
        let third = caller.join().unwrap();
        if seen == 2 {
            assert!(third.is_none(), "a third call admitted after the change");
        }
        drop((third, borrowed, own));
        assert_pool_idle(&pool, &[&bulkhead]);
    });
}

/// The same with the reservation lowered too (limit 3 -> 1, the
/// reservation following it), the setter holding one call.
#[test]
fn a_lowered_limit_and_reservation_admit_no_borrower_after_the_change_returned() {
    model_bounded(3, || {
        let clock = ManualClock::new();
        let pool = SharedPool::new(4);
        let config = BulkheadConfig::builder().max_concurrent(3).build().unwrap();
        let bulkhead = Bulkhead::with_pool(
            "loom-lowered",
            config,
            PolicyContext::new(Arc::new(clock.clone())),
            &pool,
        );
        let own = bulkhead.try_enter().unwrap();
        let caller = {
            let bulkhead = bulkhead.clone();
            thread::spawn(move || bulkhead.try_enter_owned().ok())
        };
        bulkhead.set_max_concurrent(1).unwrap();
        assert!(bulkhead.try_enter().is_err(), "1 in flight, limit 1");
        let seen = bulkhead.concurrent_calls();
        let second = caller.join().unwrap();
        if seen == 1 {
            assert!(second.is_none(), "a second call admitted after the change");
        }
        drop((second, own));
        assert_pool_idle(&pool, &[&bulkhead]);
    });
}

/// The smallest race of a borrowed release with the remapping of its
/// field: the release's `fetch_sub` names field 3 (`pools[2]`); the
/// bulkhead moves back to `pools[1]` (field 2, still mapped: no wait),
/// then to a new pool, for which field 3 comes first. Only what the
/// release owes keeps field 3 from being mapped to `pools[3]` before the
/// release reads it (removing the quiet check in `Links::field_for` fails
/// here at once).
#[test]
fn a_borrowed_release_racing_a_move_back_and_one_to_a_new_pool_goes_home() {
    model_bounded(2, || {
        bulkhead_core::explore_remaps(true);
        let clock = ManualClock::new();
        let pools: Vec<_> = (0..4).map(|_| SharedPool::new(2)).collect();
        let mover = through_three(&pools, &clock);
        let held = mover.try_enter_owned().unwrap();
        assert_eq!(pools[2].borrowed(), 1);
        let releaser = thread::spawn(move || drop(held));
        mover.move_to_pool(Some(&pools[1]));
        mover.move_to_pool(Some(&pools[3]));
        releaser.join().unwrap();
        assert_all_home(&pools, &mover, &pools[3]);
    });
}

// Classes: a call's class (`priority::with`) and its share of the limit
// (`shed_at`; Sheddable's default is half).

use bulkhead_core::{Priority, priority};

/// A classed permit moved to another thread and dropped there gives its
/// class its slot back once, while a call of the same class comes and
/// goes on a third: nothing held at the end, every slot there again.
#[test]
fn a_classed_permit_released_by_another_thread_decrements_its_class_once() {
    model_bounded(3, || {
        let clock = ManualClock::new();
        let bulkhead = bulkhead(2, Duration::ZERO, &clock);
        let high = priority::with(Priority::High, || bulkhead.try_enter_owned()).unwrap();
        let releaser = thread::spawn(move || drop(high));
        let other = {
            let bulkhead = bulkhead.clone();
            thread::spawn(move || {
                let permit = priority::with(Priority::High, || bulkhead.try_enter());
                assert!(permit.is_ok(), "one of two slots was free");
            })
        };
        releaser.join().unwrap();
        other.join().unwrap();
        let occupancy = bulkhead.occupancy();
        assert!(
            occupancy.classes.iter().all(|c| c.held == 0),
            "{occupancy:?}"
        );
        assert_idle(&bulkhead, 2);
    });
}

/// Two Sheddable calls race a limit lowered from 4 to 2 (Sheddable's
/// threshold from 2 to 1): an attempt that starts once the lower limit is
/// in force is judged by it, as the threshold comes from the same load of
/// the word as the compare-exchange that admits.
#[test]
fn a_shed_check_racing_a_lowered_limit_admits_nobody_past_the_new_threshold() {
    model_bounded(3, || {
        let clock = ManualClock::new();
        let bulkhead = bulkhead(4, Duration::ZERO, &clock);
        let lowered = Arc::new(loom::sync::atomic::AtomicBool::new(false));
        let admitted = Arc::new(AtomicUsize::new(0));
        let sheddable: Vec<_> = (0..2)
            .map(|_| {
                let (bulkhead, lowered) = (bulkhead.clone(), Arc::clone(&lowered));
                let admitted = Arc::clone(&admitted);
                thread::spawn(move || {
                    let after = lowered.load(SeqCst);
                    let permit =
                        priority::with(Priority::Sheddable, || bulkhead.try_enter_owned()).ok()?;
                    let inside = admitted.fetch_add(1, SeqCst) + 1;
                    if after {
                        assert_eq!(inside, 1, "admitted past the lowered threshold");
                    }
                    Some(permit)
                })
            })
            .collect();
        bulkhead.set_max_concurrent(2).unwrap();
        lowered.store(true, SeqCst);
        let permits: Vec<_> = sheddable.into_iter().map(|t| t.join().unwrap()).collect();
        let held = permits.iter().flatten().count();
        let occupancy = bulkhead.occupancy();
        let class = occupancy.classes[Priority::Sheddable.index()];
        assert_eq!((class.held, class.threshold), (held as u32, 1));
        // What the lowered limit left: past the threshold, never more.
        assert_eq!(class.beyond_share, (held as u32).saturating_sub(1));
        drop(permits);
        assert_idle(&bulkhead, 2);
    });
}

/// On a pool (budget 4, 1 reserved: 3 unreserved, Sheddable's share of
/// them 1), a Sheddable borrower races the release of the reserved slot
/// a Critical call held: it gets the reserved slot or borrows one, and the
/// pool's invariant and Sheddable's share of it hold throughout.
#[test]
fn a_pooled_sheddable_borrower_racing_a_critical_release_keeps_the_pool_invariant() {
    model_bounded(3, || {
        let (clock, pool) = (ManualClock::new(), SharedPool::new(4));
        let bulkhead = pooled(&pool, &clock, 1, 4);
        let inside = Inside::new([1, 0], 4);
        let critical = priority::with(Priority::Critical, || bulkhead.try_enter_owned()).unwrap();
        let releaser = thread::spawn(move || drop(critical));
        let borrow = {
            let (bulkhead, inside, pool) = (bulkhead.clone(), Arc::clone(&inside), pool.clone());
            move || {
                let permit = priority::with(Priority::Sheddable, || bulkhead.try_enter());
                if let Ok(_permit) = permit {
                    assert!(pool.borrowed() <= 1, "past Sheddable's share of the pool");
                    inside.run(0);
                }
            }
        };
        let borrower = thread::spawn(borrow.clone());
        borrow();
        releaser.join().unwrap();
        borrower.join().unwrap();
        let occupancy = bulkhead.occupancy();
        assert!(
            occupancy.classes.iter().all(|c| c.held == 0),
            "{occupancy:?}"
        );
        assert_pool_idle(&pool, &[&bulkhead]);
    });
}

/// A Normal waiter whose share was lowered (1 of 2) cannot take the slot
/// a release frees with one call left in flight; a Critical newcomer
/// racing that release gets it, by the release's hand-off or under the
/// lock as a slot no waiter may take (P3): never left idle.
#[test]
fn a_slot_no_waiter_may_take_is_free_for_a_critical_newcomer() {
    model_bounded(2, || {
        let clock = ManualClock::new();
        let bulkhead = bulkhead(2, Duration::from_secs(3600), &clock);
        let (first, second) = (
            bulkhead.try_enter_owned().unwrap(),
            bulkhead.try_enter_owned().unwrap(),
        );
        let mut normal = Box::pin(bulkhead.enter_async());
        assert!(poll_noop(&mut normal).is_pending());
        bulkhead.set_priorities(bulkhead_core::ShedAt::new(0.5, 0.5, 1.0).unwrap(), None);
        let releaser = thread::spawn(move || drop(first));
        let critical = {
            let bulkhead = bulkhead.clone();
            thread::spawn(move || {
                let mut entering =
                    Box::pin(priority::scope(Priority::Critical, bulkhead.enter_async()));
                loop {
                    match poll_noop(&mut entering) {
                        Poll::Ready(permit) => break permit.map(|p| p.holds_slot()),
                        Poll::Pending => thread::yield_now(),
                    }
                }
            })
        };
        releaser.join().unwrap();
        assert_eq!(
            critical.join().unwrap(),
            Ok(true),
            "the critical call got the slot"
        );
        assert!(
            poll_noop(&mut normal).is_pending(),
            "normal stays under its share"
        );
        assert_eq!(bulkhead.concurrent_calls(), 1);
        drop((normal, second));
        bulkhead.set_priorities(bulkhead_core::ShedAt::DEFAULT, None);
        assert_idle(&bulkhead, 2);
    });
}

// ------------------------------------------- classes and disciplines (queue)

/// A bulkhead of one slot whose waiters are served by `queue` (target 5 ms,
/// interval 100 ms).
fn disciplined(
    clock: &ManualClock,
    queue: bulkhead_core::QueueDiscipline,
    max_wait: Duration,
) -> Bulkhead {
    let config = BulkheadConfig::builder()
        .max_concurrent(1)
        .max_wait(max_wait)
        .queue(queue)
        .queue_target(Duration::from_millis(5))
        .queue_interval(Duration::from_millis(100))
        .build()
        .unwrap();
    Bulkhead::with_context("loom", config, PolicyContext::new(Arc::new(clock.clone())))
}

/// Adaptive LIFO racing a cancellation. Two tasks queued at 0 and 1 ms;
/// the clock moves to 10 ms (the oldest has waited past the 5 ms target);
/// a release races the newest task's cancellation. While the newest
/// waits, the slot is never the oldest's; once the newest has it or gives
/// up, the slot ends with the oldest: never lost, never duplicated. Every
/// run sees both orders (a std flag outside the model records them).
#[test]
fn lifo_serves_the_newest_once_the_oldest_waited_past_the_target() {
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    static NEWEST_SERVED: AtomicBool = AtomicBool::new(false);
    static NEWEST_GAVE_UP_FIRST: AtomicBool = AtomicBool::new(false);
    model_bounded(3, || {
        let clock = ManualClock::new();
        let lifo = disciplined(
            &clock,
            bulkhead_core::QueueDiscipline::Lifo,
            Duration::from_secs(3600),
        );
        let held = lifo.try_enter_owned().unwrap();
        let mut oldest = lifo.enter_async();
        assert!(poll_noop(&mut oldest).is_pending());
        clock.advance(Duration::from_millis(1));
        let mut newest = lifo.enter_async();
        assert!(poll_noop(&mut newest).is_pending());
        clock.advance(Duration::from_millis(9));
        let releaser = thread::spawn(move || drop(held));
        // The newest has not given up yet: a slot released now is its own.
        assert!(
            poll_noop(&mut oldest).is_pending(),
            "served before the newest"
        );
        match poll_noop(&mut newest) {
            Poll::Ready(permit) => {
                assert!(permit.is_ok(), "no deadline: only a slot ends the wait");
                NEWEST_SERVED.store(true, Relaxed);
            }
            Poll::Pending => NEWEST_GAVE_UP_FIRST.store(true, Relaxed),
        }
        drop(newest);
        releaser.join().unwrap();
        assert!(
            matches!(poll_noop(&mut oldest), Poll::Ready(Ok(_))),
            "the slot reached the oldest"
        );
        drop(oldest);
        assert_eq!(lifo.refused_by_queue(), [0; 4]);
        assert_idle(&lifo, 1);
    });
    assert!(NEWEST_SERVED.load(Relaxed) && NEWEST_GAVE_UP_FIRST.load(Relaxed));
}

/// A codel refusal racing the waiter's own deadline. A codel bulkhead
/// overloaded (two hand-offs an interval apart, each after a 10 ms wait,
/// target 5 ms), `max_wait` 15 ms; a task queued at 110 ms; at 122 ms (a
/// wait of 12 ms, past twice the target) a release races the clock's move
/// to 125 ms (the task's deadline) and the task's own poll. The task is
/// refused by the hand-off (counted) or expires (not counted), once: it
/// ends rejected, and the released slot is free. Every run sees both (a
/// std flag outside the model records them).
#[test]
fn a_codel_refusal_racing_its_own_deadline_is_one_refusal() {
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    static REFUSED: AtomicBool = AtomicBool::new(false);
    static EXPIRED: AtomicBool = AtomicBool::new(false);
    model_bounded(3, || {
        let ms = Duration::from_millis;
        let clock = ManualClock::new();
        let codel = disciplined(&clock, bulkhead_core::QueueDiscipline::Codel, ms(15));
        // Into overload, one thread: the first hand-off opens an interval,
        // the one at its end finds its shortest wait (10 ms) above 5 ms.
        let held = codel.try_enter_owned().unwrap();
        let mut first = codel.enter_async();
        assert!(poll_noop(&mut first).is_pending());
        clock.advance(ms(10));
        drop(held);
        let Poll::Ready(Ok(first)) = poll_noop(&mut first) else {
            panic!("the first waiter is served");
        };
        clock.advance(ms(90));
        let mut second = codel.enter_async();
        assert!(poll_noop(&mut second).is_pending());
        clock.advance(ms(10));
        drop(first);
        let Poll::Ready(Ok(second)) = poll_noop(&mut second) else {
            panic!("the second waiter is served: an interval's first is never refused");
        };
        drop(second);
        let held = codel.try_enter_owned().unwrap();
        let mut late = codel.enter_async();
        assert!(poll_noop(&mut late).is_pending());
        clock.advance(ms(12));
        let releaser = thread::spawn(move || drop(held));
        clock.advance(ms(3));
        let early = poll_noop(&mut late);
        releaser.join().unwrap();
        let outcome = match early {
            Poll::Ready(outcome) => outcome,
            Poll::Pending => match poll_noop(&mut late) {
                Poll::Ready(outcome) => outcome,
                Poll::Pending => panic!("past its deadline, refused or not, it is done"),
            },
        };
        assert!(outcome.is_err(), "never handed a slot");
        drop(late);
        match codel.refused_by_queue() {
            [0, 1, 0, 0] => REFUSED.store(true, Relaxed),
            [0, 0, 0, 0] => EXPIRED.store(true, Relaxed),
            refused => panic!("counted more than once: {refused:?}"),
        }
        assert_idle(&codel, 1);
    });
    assert!(REFUSED.load(Relaxed) && EXPIRED.load(Relaxed));
}
