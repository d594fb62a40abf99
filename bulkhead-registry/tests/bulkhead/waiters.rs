//! Hand-offs to queued callers: a waiter whose deadline has passed is never
//! handed a slot (sync or async, on either clock), and a waker whose drop
//! releases a slot of the same bulkhead cannot deadlock the thread that
//! drops it (tokio's issue 5429, `release_permits_at_drop`), nor can a
//! clock or a waker that panics lose a slot or a wake-up.

use crate::support;

use std::sync::Arc;
use std::sync::mpsc;
use std::task::{Poll, Wake, Waker};
use std::thread;
use std::time::Duration;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::time::Instant;

use bulkhead_core::{
    Bulkhead, BulkheadConfig, Clock, ManualClock, OwnedBulkheadPermit, PolicyContext, Sleep,
    SystemClock,
};
use bulkhead_registry::Registry;
use support::{bulkhead, poll_noop, poll_once, wait_until};

fn manual(clock: &ManualClock) -> Registry {
    Registry::builder().clock(clock.clone()).build()
}

/// Runs `body` on its own thread and fails, instead of hanging the suite,
/// if it does not finish: a deadlock shows up as a failed test.
fn without_deadlock(what: &str, body: impl FnOnce() + Send + 'static) {
    let (done, finished) = mpsc::channel();
    let worker = thread::spawn(move || {
        body();
        let _ = done.send(());
    });
    match finished.recv_timeout(Duration::from_secs(20)) {
        Ok(()) => worker.join().unwrap(),
        // The body panicked: report its panic.
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            std::panic::resume_unwind(worker.join().unwrap_err())
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("deadlock: {what}"),
    }
}

// ------------------------------------------- expired waiters get no slot

#[test]
fn an_expired_async_waiter_is_not_handed_a_slot_released_after_its_deadline() {
    let clock = ManualClock::new();
    let registry = manual(&clock);
    let bulkhead = bulkhead(&registry, "expired-async", 1, Duration::from_millis(10));
    let held = bulkhead.try_enter().unwrap();
    let mut waiter = bulkhead.enter_async();
    assert!(poll_noop(&mut waiter).is_pending());
    clock.advance(Duration::from_millis(10));
    drop(held);
    let newcomer = bulkhead
        .try_enter()
        .expect("the slot released after the waiter's deadline is free");
    assert!(
        matches!(poll_noop(&mut waiter), Poll::Ready(Err(_))),
        "the expired waiter is rejected"
    );
    drop(newcomer);
    assert_eq!(
        (bulkhead.concurrent_calls(), bulkhead.waiting_calls()),
        (0, 0)
    );
}

#[test]
fn a_slot_released_before_the_deadline_is_the_waiters_even_if_it_looks_late() {
    let clock = ManualClock::new();
    let registry = manual(&clock);
    let bulkhead = bulkhead(&registry, "granted-in-time", 1, Duration::from_millis(10));
    let held = bulkhead.try_enter().unwrap();
    let mut waiter = bulkhead.enter_async();
    assert!(poll_noop(&mut waiter).is_pending());
    drop(held); // handed over while the waiter was entitled to it
    clock.advance(Duration::from_millis(10));
    assert!(bulkhead.try_enter().is_err(), "the slot is the waiter's");
    assert!(matches!(poll_noop(&mut waiter), Poll::Ready(Ok(_))));
}

#[test]
fn an_expired_waiter_is_passed_over_for_the_next_one_in_line() {
    let clock = ManualClock::new();
    let registry = manual(&clock);
    let bulkhead = bulkhead(&registry, "passed-over", 1, Duration::from_millis(10));
    let held = bulkhead.try_enter().unwrap();
    let mut early = bulkhead.enter_async();
    assert!(poll_noop(&mut early).is_pending());
    clock.advance(Duration::from_millis(5));
    let mut late = bulkhead.enter_async();
    assert!(poll_noop(&mut late).is_pending());
    clock.advance(Duration::from_millis(5)); // `early` expires, `late` not
    drop(held);
    assert!(matches!(poll_noop(&mut early), Poll::Ready(Err(_))));
    assert!(matches!(poll_noop(&mut late), Poll::Ready(Ok(_))));
}

#[test]
fn an_expired_blocked_thread_is_not_handed_a_slot_released_after_its_deadline() {
    // The outside review saw this in ~190 of 200 rounds before the fix.
    for round in 0..200 {
        let clock = ManualClock::new();
        let registry = manual(&clock);
        let bulkhead = bulkhead(&registry, "expired-sync", 1, Duration::from_millis(10));
        let held = bulkhead.try_enter().unwrap();
        thread::scope(|s| {
            let waiter = s.spawn(|| bulkhead.enter().map(drop));
            wait_until("the thread waits", || bulkhead.waiting_calls() == 1);
            clock.advance(Duration::from_millis(10));
            drop(held);
            assert!(
                waiter.join().unwrap().is_err(),
                "round {round}: the expired thread got a slot"
            );
        });
        assert!(bulkhead.try_enter().is_ok(), "round {round}: capacity lost");
        assert_eq!(bulkhead.waiting_calls(), 0);
    }
}

#[test]
fn on_the_system_clock_an_expired_waiter_gets_no_slot_either() {
    let registry = Registry::new();
    let bulkhead = bulkhead(&registry, "expired-system", 1, Duration::from_millis(20));
    let held = bulkhead.try_enter().unwrap();
    let mut waiter = bulkhead.enter_async();
    assert!(poll_noop(&mut waiter).is_pending());
    let deadline = registry.clock().now() + Duration::from_millis(20);
    // Not a timing assertion: only waits until the deadline has passed.
    while registry.clock().now() <= deadline {
        thread::sleep(Duration::from_millis(5));
    }
    drop(held);
    assert!(bulkhead.try_enter().is_ok(), "the released slot is free");
    assert!(matches!(poll_noop(&mut waiter), Poll::Ready(Err(_))));
}

#[test]
fn raising_the_limit_hands_no_slot_to_an_expired_waiter() {
    let clock = ManualClock::new();
    let registry = manual(&clock);
    let bulkhead = bulkhead(&registry, "expired-raise", 1, Duration::from_millis(10));
    let _held = bulkhead.try_enter().unwrap();
    let mut waiter = bulkhead.enter_async();
    assert!(poll_noop(&mut waiter).is_pending());
    clock.advance(Duration::from_millis(10));
    bulkhead.set_max_concurrent(2).unwrap();
    assert!(bulkhead.try_enter().is_ok(), "the new slot is free");
    assert!(matches!(poll_noop(&mut waiter), Poll::Ready(Err(_))));
}

#[test]
fn a_slot_passed_on_by_a_cancelled_waiter_skips_expired_waiters() {
    let clock = ManualClock::new();
    let registry = manual(&clock);
    let bulkhead = bulkhead(&registry, "expired-pass-on", 1, Duration::from_millis(10));
    let held = bulkhead.try_enter().unwrap();
    let mut first = bulkhead.enter_async();
    assert!(poll_noop(&mut first).is_pending());
    let mut second = bulkhead.enter_async();
    assert!(poll_noop(&mut second).is_pending());
    drop(held); // handed to `first` in time
    clock.advance(Duration::from_millis(10)); // `second` expires
    drop(first); // passes the slot on: not to `second`
    assert!(bulkhead.try_enter().is_ok(), "the slot is free again");
    assert!(matches!(poll_noop(&mut second), Poll::Ready(Err(_))));
}

// --------------------------------------------- wakers that release slots

/// A waker whose drop releases a slot of the bulkhead it waits on (a task
/// that holds a permit while it waits for another).
struct PermitWaker {
    _held: OwnedBulkheadPermit,
}

impl PermitWaker {
    fn holding(permit: OwnedBulkheadPermit) -> Waker {
        Waker::from(Arc::new(PermitWaker { _held: permit }))
    }
}

impl Wake for PermitWaker {
    fn wake(self: Arc<Self>) {}
}

/// Waits without a deadline: no sleep holds a copy of the waker, so the
/// queue holds the last one.
const FOREVER: Duration = Duration::MAX;

#[test]
fn a_waker_replaced_on_a_new_poll_may_release_a_slot_of_the_same_bulkhead() {
    without_deadlock("re-poll with a new waker", || {
        let registry = Registry::new();
        let bulkhead = bulkhead(&registry, "waker-update", 1, FOREVER);
        let waker = PermitWaker::holding(bulkhead.try_enter_owned().unwrap());
        let mut waiter = bulkhead.enter_async();
        assert!(poll_once(&mut waiter, &waker).is_pending());
        drop(waker); // the queue holds the only copy now
        // The new waker replaces the old one, whose drop releases the slot,
        // which is handed to this very waiter.
        assert!(poll_noop(&mut waiter).is_pending());
        assert!(matches!(poll_noop(&mut waiter), Poll::Ready(Ok(_))));
    });
}

#[test]
fn a_dropped_waiter_whose_waker_releases_a_slot_passes_it_on() {
    without_deadlock("drop a queued future", || {
        let registry = Registry::new();
        let bulkhead = bulkhead(&registry, "waker-cancel", 1, FOREVER);
        let waker = PermitWaker::holding(bulkhead.try_enter_owned().unwrap());
        let mut first = bulkhead.enter_async();
        assert!(poll_once(&mut first, &waker).is_pending());
        drop(waker);
        let mut second = bulkhead.enter_async();
        assert!(poll_noop(&mut second).is_pending());
        // Dropping `first` drops its waker, which releases the slot: the
        // queue still has `second`, so the release hands the slot over.
        drop(first);
        assert!(matches!(poll_noop(&mut second), Poll::Ready(Ok(_))));
    });
}

#[test]
fn a_timed_out_waiter_whose_waker_releases_a_slot_frees_it() {
    without_deadlock("a waiter times out", || {
        let clock = ManualClock::new();
        let registry = manual(&clock);
        let bulkhead = bulkhead(&registry, "waker-timeout", 1, Duration::from_secs(1));
        let waker = PermitWaker::holding(bulkhead.try_enter_owned().unwrap());
        let mut waiter = bulkhead.enter_async();
        assert!(poll_once(&mut waiter, &waker).is_pending());
        drop(waker);
        // Wakes (and so consumes) the clock's copy: the queue's is the last.
        clock.advance(Duration::from_secs(1));
        assert!(matches!(poll_noop(&mut waiter), Poll::Ready(Err(_))));
        assert!(bulkhead.try_enter().is_ok(), "the slot was released");
    });
}

#[test]
fn a_manual_clock_may_drop_a_waker_that_releases_a_slot() {
    // A hand-off reads the clock: the clock must not hold its lock while
    // it drops a waker whose drop hands a slot over.
    without_deadlock("a manual clock drops a waker", || {
        let clock = ManualClock::new();
        let registry = manual(&clock);
        let bulkhead = bulkhead(&registry, "waker-clock", 1, Duration::from_secs(1));
        let waker = PermitWaker::holding(bulkhead.try_enter_owned().unwrap());
        let mut waiter = bulkhead.enter_async();
        assert!(poll_noop(&mut waiter).is_pending());
        let mut sleep = clock.sleep_until(clock.now() + Duration::from_secs(5));
        assert!(poll_once(&mut sleep, &waker).is_pending());
        drop(waker);
        // Replacing the waker drops the last copy: the slot goes to `waiter`.
        assert!(poll_noop(&mut sleep).is_pending());
        assert!(matches!(poll_noop(&mut waiter), Poll::Ready(Ok(_))));
        drop(sleep);
    });
}

// ------------------------------------------- clocks and wakers that panic

/// The system clock, except that `now()` panics while `fail` is set (a
/// custom clock backed by, say, a poisoned mutex or a failed RPC).
#[derive(Debug, Default, Clone)]
struct FlakyClock {
    fail: Arc<AtomicBool>,
}

impl Clock for FlakyClock {
    fn now(&self) -> Instant {
        assert!(!self.fail.load(SeqCst), "clock failure");
        Instant::now()
    }
    fn sleep_until(&self, deadline: Instant) -> Sleep {
        SystemClock.sleep_until(deadline)
    }
    fn park_until(&self, deadline: Instant) {
        SystemClock.park_until(deadline)
    }
}

fn on(clock: impl Clock, max: u32, max_wait: Duration) -> Bulkhead {
    Bulkhead::with_context(
        "flaky-clock",
        BulkheadConfig::builder()
            .max_concurrent(max)
            .max_wait(max_wait)
            .build()
            .unwrap(),
        PolicyContext::new(Arc::new(clock)),
    )
}

/// A release that hands its slot over reads the clock after the slot is
/// free: if the clock panics there, the slot must still reach the waiter
/// (or newcomers), not stay free but reserved for the queue.
#[test]
fn a_clock_that_panics_during_a_hand_off_strands_no_slot() {
    let clock = FlakyClock::default();
    let bulkhead = on(clock.clone(), 1, Duration::MAX); // waits without deadline
    let held = bulkhead.try_enter().unwrap();
    let mut waiter = bulkhead.enter_async();
    assert!(poll_noop(&mut waiter).is_pending());

    clock.fail.store(true, SeqCst);
    let released = catch_unwind(AssertUnwindSafe(|| drop(held)));
    clock.fail.store(false, SeqCst);
    assert!(
        released.is_err(),
        "the clock panicked inside the permit's drop"
    );

    // Somebody gets the slot (the oldest waiter: it was handed over as if
    // no deadline had passed).
    let waiter_got_it = matches!(poll_noop(&mut waiter), Poll::Ready(Ok(_)));
    let newcomer_got_it = bulkhead.try_enter().is_ok();
    assert!(
        waiter_got_it || newcomer_got_it,
        "slot stranded: in_flight={} waiting={} max={}",
        bulkhead.concurrent_calls(),
        bulkhead.waiting_calls(),
        bulkhead.max_concurrent()
    );
}

/// The same on a pool, for a borrowed slot and for a reserved one: the
/// slot reaches the waiter and the panic goes on, as off a pool.
#[test]
fn a_clock_that_panics_during_a_pooled_hand_off_strands_no_slot_and_is_raised() {
    let clock = FlakyClock::default();
    let pool = bulkhead_core::SharedPool::new(3);
    let on_pool = |id, reserved, max| {
        let config = BulkheadConfig::builder()
            .max_concurrent(max)
            .reserved(reserved)
            .max_wait(Duration::MAX)
            .build()
            .unwrap();
        Bulkhead::with_pool(
            id,
            config,
            PolicyContext::new(Arc::new(clock.clone())),
            &pool,
        )
    };
    let (a, b) = (on_pool("a", 1, 2), on_pool("b", 1, 2));
    let a_own = a.try_enter().unwrap();
    let borrowed = a.try_enter().unwrap();
    let b_own = b.try_enter().unwrap();
    // b waits for a pool slot, then for its own.
    let mut pool_waiter = b.enter_async();
    assert!(poll_noop(&mut pool_waiter).is_pending());

    clock.fail.store(true, SeqCst);
    let released = catch_unwind(AssertUnwindSafe(|| drop(borrowed)));
    clock.fail.store(false, SeqCst);
    assert!(released.is_err(), "the panic goes on");
    let Poll::Ready(Ok(lent)) = poll_noop(&mut pool_waiter) else {
        panic!("the borrowed slot was not handed over")
    };
    let mut own_waiter = b.enter_async();
    assert!(poll_noop(&mut own_waiter).is_pending());
    clock.fail.store(true, SeqCst);
    let released = catch_unwind(AssertUnwindSafe(|| drop(b_own)));
    clock.fail.store(false, SeqCst);
    assert!(released.is_err(), "the panic goes on");
    let Poll::Ready(Ok(own)) = poll_noop(&mut own_waiter) else {
        panic!("the slot was not handed over")
    };
    drop((lent, own, a_own));
    assert_eq!(
        (pool.borrowed(), a.concurrent_calls() + b.concurrent_calls()),
        (0, 0)
    );
}

/// A waker that panics when woken.
struct PanicsOnWake;
impl Wake for PanicsOnWake {
    fn wake(self: Arc<Self>) {
        panic!("waker panics");
    }
}

#[derive(Default)]
struct Counting(AtomicUsize);
impl Wake for Counting {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// A waiter granted a slot by a raised limit is woken even if another
/// granted waiter's waker panics: otherwise it holds a slot it never learns
/// about.
#[test]
fn raising_the_limit_wakes_every_granted_waiter_even_if_one_waker_panics() {
    let bulkhead = on(SystemClock, 1, Duration::MAX);
    let _held = bulkhead.try_enter().unwrap();
    let counting = Arc::new(Counting::default());
    let good = Waker::from(Arc::clone(&counting));
    let bad = Waker::from(Arc::new(PanicsOnWake));
    let mut first = bulkhead.enter_async();
    assert!(poll_once(&mut first, &good).is_pending());
    let mut second = bulkhead.enter_async();
    assert!(poll_once(&mut second, &bad).is_pending());

    let raised = catch_unwind(AssertUnwindSafe(|| bulkhead.set_max_concurrent(3)));
    assert!(raised.is_err(), "the bad waker panicked");
    assert_eq!(bulkhead.concurrent_calls(), 3, "both waiters were granted");
    assert_eq!(
        counting.0.load(SeqCst),
        1,
        "the first waiter was granted a slot but never woken"
    );
}

/// A blocked thread whose clock panics after it was handed a slot passes
/// the slot on while it unwinds; that hand-off reads the same panicking
/// clock, which must not abort the process (a panic during unwinding). Run
/// in a child process, which an abort would kill.
#[test]
fn a_clock_panic_while_a_granted_thread_wakes_does_not_abort() {
    if std::env::var_os("BULKHEAD_WAITERS_CHILD").is_some() {
        child_clock_panic_while_granted();
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args([
            "--exact",
            "a_clock_panic_while_a_granted_thread_wakes_does_not_abort",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("BULKHEAD_WAITERS_CHILD", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "child died: {:?}\n{}",
        out.status,
        stderr.lines().rev().take(12).collect::<Vec<_>>().join("\n")
    );
}

/// Panics in `now()` on the thread named "t1" once `fail` is set.
#[derive(Debug, Default, Clone)]
struct FailsOnT1 {
    fail: Arc<AtomicBool>,
}

impl Clock for FailsOnT1 {
    fn now(&self) -> Instant {
        if self.fail.load(SeqCst) && std::thread::current().name() == Some("t1") {
            panic!("clock failure on t1");
        }
        Instant::now()
    }
    fn sleep_until(&self, deadline: Instant) -> Sleep {
        SystemClock.sleep_until(deadline)
    }
    fn park_until(&self, deadline: Instant) {
        SystemClock.park_until(deadline)
    }
}

fn child_clock_panic_while_granted() {
    let clock = FailsOnT1::default();
    let bulkhead = on(clock.clone(), 1, Duration::from_secs(3600));
    let held = bulkhead.try_enter().unwrap();
    std::thread::scope(|s| {
        let t1 = std::thread::Builder::new()
            .name("t1".into())
            .spawn_scoped(s, || {
                let _ = catch_unwind(AssertUnwindSafe(|| bulkhead.enter().map(drop)));
            })
            .unwrap();
        support::wait_until("t1 waits", || bulkhead.waiting_calls() == 1);
        let t2 = s.spawn(|| bulkhead.enter().map(drop));
        support::wait_until("t2 waits", || bulkhead.waiting_calls() == 2);
        clock.fail.store(true, SeqCst);
        drop(held); // hands the slot to t1 (read on this thread: fine)
        t1.join().unwrap();
        t2.join().unwrap().unwrap();
    });
}
