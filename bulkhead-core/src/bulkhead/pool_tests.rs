//! Bulkheads on a shared pool: reserved slots at once, borrowing the
//! unreserved ones, waiters in arrival order, live changes.

use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use super::{Bulkhead, BulkheadConfig, SharedPool};
use crate::clock::ManualClock;
use crate::context::PolicyContext;

fn on(pool: &SharedPool, clock: &ManualClock, id: &str, reserved: u32, max: u32) -> Bulkhead {
    let config = BulkheadConfig::builder()
        .max_concurrent(max)
        .reserved(reserved)
        .max_wait(Duration::from_secs(10))
        .build()
        .unwrap();
    let context = PolicyContext::new(Arc::new(clock.clone()));
    Bulkhead::with_pool(id, config, context, pool)
}

fn poll<F: std::future::Future + Unpin>(future: &mut F) -> Poll<F::Output> {
    std::pin::Pin::new(future).poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn reserved_slots_are_always_there_and_the_rest_is_borrowed() {
    let (pool, clock) = (SharedPool::new(7), ManualClock::new());
    let reports = on(&pool, &clock, "reports", 3, 7);
    let payments = on(&pool, &clock, "payments", 2, 7);
    assert_eq!(pool.unreserved(), 2);
    let reports_held: Vec<_> = (0..5).map(|_| reports.try_enter().unwrap()).collect();
    assert!(reports.try_enter().is_err(), "3 reserved + 2 unreserved");
    assert_eq!((reports.borrowed(), pool.borrowed()), (2, 2));
    let payments_held: Vec<_> = (0..2).map(|_| payments.try_enter().unwrap()).collect();
    assert!(payments.try_enter().is_err());
    drop(reports_held);
    assert_eq!((reports.borrowed(), pool.borrowed()), (0, 0));
    // Now payments borrow the unreserved slots.
    let more: Vec<_> = (0..2).map(|_| payments.try_enter().unwrap()).collect();
    assert_eq!(payments.borrowed(), 2);
    assert!(payments.try_enter().is_err());
    drop((more, payments_held));
    assert_eq!(pool.borrowed(), 0);
    assert_eq!(payments.concurrent_calls() + reports.concurrent_calls(), 0);
}

#[test]
fn a_full_reservation_split_is_todays_strict_split() {
    let (pool, clock) = (SharedPool::new(7), ManualClock::new());
    let reports = on(&pool, &clock, "reports", 3, 7);
    let payments = on(&pool, &clock, "payments", 4, 7);
    let held: Vec<_> = (0..3).map(|_| reports.try_enter().unwrap()).collect();
    assert!(reports.try_enter().is_err(), "nothing unreserved to borrow");
    let paid: Vec<_> = (0..4).map(|_| payments.try_enter().unwrap()).collect();
    drop((held, paid));
}

#[test]
fn a_released_borrowed_slot_goes_to_the_oldest_waiter_across_the_pool() {
    let (pool, clock) = (SharedPool::new(4), ManualClock::new());
    let a = on(&pool, &clock, "a", 1, 4);
    let b = on(&pool, &clock, "b", 1, 4);
    let a1 = a.try_enter_owned().unwrap();
    let b1 = b.try_enter_owned().unwrap();
    let a2 = a.try_enter_owned().unwrap();
    let a3 = a.try_enter_owned().unwrap();
    assert_eq!(pool.borrowed(), 2);
    // b waits first, then a.
    let mut b_waits = b.enter_async();
    assert!(poll(&mut b_waits).is_pending());
    let mut a_waits = a.enter_async();
    assert!(poll(&mut a_waits).is_pending());
    assert!(b.try_enter().is_err() && a.try_enter().is_err());
    drop(a3);
    let Poll::Ready(Ok(b2)) = poll(&mut b_waits) else {
        panic!("b waited first")
    };
    assert!(poll(&mut a_waits).is_pending());
    drop((a2, a1, b1, b2));
    assert!(matches!(poll(&mut a_waits), Poll::Ready(Ok(_))));
}

#[test]
fn a_slot_below_the_reservation_goes_to_its_own_waiters_first() {
    let (pool, clock) = (SharedPool::new(3), ManualClock::new());
    let a = on(&pool, &clock, "a", 1, 3);
    let b = on(&pool, &clock, "b", 1, 3);
    let a1 = a.try_enter_owned().unwrap();
    let b1 = b.try_enter_owned().unwrap();
    let b2 = b.try_enter_owned().unwrap();
    let mut b_waits = b.enter_async();
    assert!(poll(&mut b_waits).is_pending());
    let mut a_waits = a.enter_async();
    assert!(poll(&mut a_waits).is_pending());
    // a's reserved slot comes back: it is a's, though b waited longer.
    drop(a1);
    let Poll::Ready(Ok(a2)) = poll(&mut a_waits) else {
        panic!("a's own slot")
    };
    assert!(poll(&mut b_waits).is_pending());
    drop(a2);
    drop(b2);
    assert!(matches!(poll(&mut b_waits), Poll::Ready(Ok(_))));
    drop(b1);
}

#[test]
fn a_waiter_past_its_deadline_is_passed_over() {
    let (pool, clock) = (SharedPool::new(2), ManualClock::new());
    let a = on(&pool, &clock, "a", 0, 2);
    let held = a.try_enter_owned().unwrap();
    let held2 = a.try_enter_owned().unwrap();
    let mut waits = a.enter_async();
    assert!(poll(&mut waits).is_pending());
    clock.advance(Duration::from_secs(10));
    drop(held);
    assert!(matches!(poll(&mut waits), Poll::Ready(Err(_))));
    assert_eq!(a.waiting_calls(), 0);
    assert_eq!(pool.borrowed(), 1);
    drop(held2);
    assert_eq!(pool.borrowed(), 0);
}

#[test]
fn a_blocked_thread_gets_a_borrowed_slot() {
    let (pool, clock) = (SharedPool::new(2), ManualClock::new());
    let a = on(&pool, &clock, "a", 1, 2);
    let b = on(&pool, &clock, "b", 0, 2);
    let a1 = a.try_enter_owned().unwrap();
    let b1 = b.try_enter_owned().unwrap();
    std::thread::scope(|scope| {
        let waiter = scope.spawn(|| a.enter().map(|_| ()));
        while a.waiting_calls() == 0 {
            std::thread::yield_now();
        }
        drop(b1);
        assert!(waiter.join().unwrap().is_ok());
    });
    drop(a1);
    assert_eq!(pool.borrowed(), 0);
}

#[test]
fn lowering_a_reservation_frees_slots_to_borrow_at_once() {
    let (pool, clock) = (SharedPool::new(4), ManualClock::new());
    let a = on(&pool, &clock, "a", 2, 4);
    let b = on(&pool, &clock, "b", 2, 4);
    let held: Vec<_> = (0..2).map(|_| a.try_enter().unwrap()).collect();
    assert!(a.try_enter().is_err());
    b.set_reserved(Some(0)).unwrap();
    assert_eq!((b.reserved(), pool.unreserved()), (0, 2));
    let more: Vec<_> = (0..2).map(|_| a.try_enter().unwrap()).collect();
    assert_eq!(pool.borrowed(), 2);
    drop((held, more));
    assert_eq!(pool.borrowed(), 0);
}

#[test]
fn a_raised_reservation_waits_for_borrowed_slots_to_come_back() {
    let (pool, clock) = (SharedPool::new(4), ManualClock::new());
    let a = on(&pool, &clock, "a", 1, 4);
    let b = on(&pool, &clock, "b", 1, 4);
    let held: Vec<_> = (0..3).map(|_| a.try_enter().unwrap()).collect();
    assert_eq!(pool.borrowed(), 2);
    b.set_reserved(Some(3)).unwrap();
    assert_eq!(b.reserved(), 1, "no room yet: a's calls borrow it");
    drop(held);
    assert_eq!(b.reserved(), 3);
    assert_eq!(pool.unreserved(), 0);
    assert_eq!(pool.borrowed(), 0);
}

#[test]
fn lowering_the_reservation_under_calls_in_flight_counts_them_as_borrowed() {
    let (pool, clock) = (SharedPool::new(4), ManualClock::new());
    let a = on(&pool, &clock, "a", 3, 4);
    let held: Vec<_> = (0..3).map(|_| a.try_enter().unwrap()).collect();
    a.set_reserved(Some(1)).unwrap();
    assert_eq!((a.borrowed(), pool.borrowed()), (2, 2));
    drop(held);
    assert_eq!(pool.borrowed(), 0);
    assert_eq!(pool.unreserved(), 3);
}

#[test]
fn a_dropped_bulkhead_gives_its_reservation_back() {
    let (pool, clock) = (SharedPool::new(4), ManualClock::new());
    let a = on(&pool, &clock, "a", 3, 4);
    assert_eq!(pool.unreserved(), 1);
    drop(a);
    assert_eq!(pool.unreserved(), 4);
}

#[test]
fn the_ceiling_bounds_borrowing() {
    let (pool, clock) = (SharedPool::new(10), ManualClock::new());
    let a = on(&pool, &clock, "a", 1, 3);
    let held: Vec<_> = (0..3).map(|_| a.try_enter().unwrap()).collect();
    assert!(a.try_enter().is_err());
    a.set_max_concurrent(4).unwrap();
    let more = a.try_enter().unwrap();
    drop((held, more));
    assert_eq!(pool.borrowed(), 0);
}

#[test]
fn reserved_above_max_concurrent_is_atr_016() {
    let err = BulkheadConfig::builder()
        .max_concurrent(3)
        .reserved(4)
        .build()
        .unwrap_err();
    assert_eq!(err.code(), "ATR-016");
    assert!(
        err.to_string().starts_with("ATR-016: reserved (4)"),
        "{err}"
    );
}

#[test]
fn a_moved_bulkhead_takes_its_waiters_and_its_calls_along() {
    let clock = ManualClock::new();
    let (from, to) = (SharedPool::new(2), SharedPool::new(4));
    let mover = on(&from, &clock, "mover", 1, 3);
    let other = on(&to, &clock, "other", 1, 1);
    let held: Vec<_> = (0..2).map(|_| mover.try_enter_owned().unwrap()).collect();
    assert_eq!(from.borrowed(), 1);
    let mut waiter = mover.enter_async();
    assert!(
        poll(&mut waiter).is_pending(),
        "from has nothing left to lend"
    );

    mover.move_to_pool(Some(&to));
    // from gets everything back; on `to` the mover reserves 1, its second
    // call is borrowed, and the slot left goes to its waiter at once.
    assert_eq!((from.borrowed(), from.unreserved()), (0, 2));
    let Poll::Ready(Ok(got)) = poll(&mut waiter) else {
        panic!("the waiter is served on the new pool")
    };
    assert_eq!((to.borrowed(), to.unreserved()), (2, 2));
    assert!(mover.try_enter().is_err());
    let own = other.try_enter().expect("a reserved slot is always there");
    drop((held, got, own));
    assert_eq!((from.borrowed(), to.borrowed()), (0, 0));
    assert_eq!(mover.concurrent_calls() + other.concurrent_calls(), 0);
}

#[test]
fn a_bulkhead_moves_any_number_of_times_among_any_number_of_pools() {
    let clock = ManualClock::new();
    let pools: Vec<_> = (0..7).map(|_| SharedPool::new(2)).collect();
    let mover = on(&pools[0], &clock, "mover", 1, 2);
    mover.move_to_pool(Some(&pools[1]));
    mover.move_to_pool(None);
    assert!(!mover.is_pooled());
    // Every pool in turn, each further one with a call in flight that
    // borrowed where it was (given back there once it ends), and back to
    // the first ones: far more pools and moves than the word has link
    // fields for.
    for round in 0..3 {
        for (i, pool) in pools.iter().enumerate() {
            mover.move_to_pool(Some(pool));
            assert!(mover.is_on(pool), "round {round}, pool {i}");
            let held: Vec<_> = (0..2).map(|_| mover.try_enter().unwrap()).collect();
            assert!(mover.try_enter().is_err());
            assert_eq!((pool.borrowed(), pool.unreserved()), (1, 1));
            drop(held);
            assert_eq!(pool.borrowed(), 0);
        }
    }
    for (i, pool) in pools.iter().enumerate() {
        let reserved = if i == pools.len() - 1 { 1 } else { 2 };
        assert_eq!(
            (pool.borrowed(), pool.unreserved()),
            (0, reserved),
            "pool {i}"
        );
    }
    drop(mover);
    assert!(pools.iter().all(|pool| pool.unreserved() == 2));
}

#[test]
fn calls_in_flight_follow_a_bulkhead_through_many_pools_and_go_home_once() {
    // A call borrowed on each pool stays in flight while the bulkhead
    // moves on: each pool gets back exactly what its own calls held, at
    // the next move (the calls past the reservation move with the
    // bulkhead), and nothing when they end elsewhere.
    let clock = ManualClock::new();
    let pools: Vec<_> = (0..6).map(|_| SharedPool::new(8)).collect();
    let mover = on(&pools[0], &clock, "mover", 1, 8);
    let mut held = Vec::new();
    for pool in &pools {
        mover.move_to_pool(Some(pool));
        held.push(mover.try_enter_owned().unwrap());
        // All but its reserved one borrowed here.
        assert_eq!(pool.borrowed(), held.len() as u32 - 1);
    }
    let last = &pools[pools.len() - 1];
    assert!(pools[..pools.len() - 1].iter().all(|p| p.borrowed() == 0));
    drop(held);
    assert_eq!((last.borrowed(), last.unreserved()), (0, 7));
    mover.move_to_pool(Some(&pools[0]));
    assert!(pools.iter().all(|p| p.borrowed() == 0));
    assert!(pools[1..].iter().all(|p| p.unreserved() == 8));
}

#[test]
fn moving_away_and_back_keeps_the_counts() {
    let clock = ManualClock::new();
    let (a, b) = (SharedPool::new(3), SharedPool::new(3));
    let m = on(&a, &clock, "m", 1, 3);
    let held: Vec<_> = (0..3).map(|_| m.try_enter_owned().unwrap()).collect();
    assert_eq!(a.borrowed(), 2);
    m.move_to_pool(Some(&b));
    assert_eq!(
        (a.borrowed(), a.unreserved(), b.borrowed(), b.unreserved()),
        (0, 3, 2, 2)
    );
    m.move_to_pool(Some(&a));
    assert_eq!(
        (a.borrowed(), a.unreserved(), b.borrowed(), b.unreserved()),
        (2, 2, 0, 3)
    );
    drop(held);
    assert_eq!(
        (a.borrowed(), a.unreserved(), b.borrowed(), b.unreserved()),
        (0, 2, 0, 3)
    );
    drop(m);
    assert_eq!((a.unreserved(), b.unreserved()), (3, 3));
}

#[test]
fn a_move_off_the_pool_serves_its_waiters() {
    let clock = ManualClock::new();
    let a = SharedPool::new(2);
    let m = on(&a, &clock, "m", 1, 3);
    let other = on(&a, &clock, "o", 1, 3);
    let _o = other.try_enter().unwrap();
    let held = m.try_enter().unwrap();
    let mut w = m.enter_async();
    assert!(poll(&mut w).is_pending());
    m.move_to_pool(None);
    let Poll::Ready(Ok(got)) = poll(&mut w) else {
        panic!("not served")
    };
    assert_eq!((a.borrowed(), a.unreserved()), (0, 1));
    drop((held, got));
    assert_eq!(a.borrowed(), 0);
}

#[test]
fn the_refund_of_a_move_serves_the_old_pools_waiters() {
    let clock = ManualClock::new();
    let (a, b) = (SharedPool::new(2), SharedPool::new(5));
    let m = on(&a, &clock, "m", 0, 3);
    let o = on(&a, &clock, "o", 0, 3);
    let held: Vec<_> = (0..2).map(|_| m.try_enter_owned().unwrap()).collect();
    let mut w = o.enter_async();
    assert!(poll(&mut w).is_pending());
    m.move_to_pool(Some(&b));
    let Poll::Ready(Ok(_got)) = poll(&mut w) else {
        panic!("o not served by refund")
    };
    assert_eq!(b.borrowed(), 2);
    drop(held);
    assert_eq!(b.borrowed(), 0);
}

#[test]
fn a_moved_waiter_is_served_once_calls_lent_past_the_cap_finish() {
    let clock = ManualClock::new();
    let (a, b) = (SharedPool::new(4), SharedPool::new(2));
    let m = on(&a, &clock, "m", 0, 4);
    let o = on(&b, &clock, "o", 0, 2);
    let held: Vec<_> = (0..3).map(|_| m.try_enter_owned().unwrap()).collect();
    let mut ow = o.enter_async();
    assert!(o.try_enter().is_ok());
    let oh = o.try_enter().unwrap();
    let oh2 = o.try_enter().unwrap();
    assert!(poll(&mut ow).is_pending());
    let mut mw = m.enter_async();
    assert!(poll(&mut mw).is_ready(), "a has room");
    drop(mw);
    let m4 = m.try_enter_owned().unwrap();
    let mut mw = m.enter_async();
    assert!(poll(&mut mw).is_pending());
    m.move_to_pool(Some(&b));
    assert_eq!(b.borrowed(), 2 + 4);
    assert!(b.borrowed() > b.unreserved());
    drop(oh);
    // o's waiter is older than m's (re-ticketed behind)
    assert!(
        poll(&mut ow).is_pending(),
        "b is over its cap: nobody borrows"
    );
    drop((held, m4));
    // the last give-back found room and served o's older waiter
    assert_eq!(b.borrowed(), 2);
    assert!(poll(&mut ow).is_ready());
    drop(oh2);
}
