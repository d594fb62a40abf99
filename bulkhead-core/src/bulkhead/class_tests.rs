//! Classes: each class below `Critical` refused above its share of the
//! limit, sync and async; shares of a pool; thresholds that follow the
//! limit in force; what the snapshot counts per class.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use super::{Bulkhead, BulkheadConfig, BulkheadPermit, ClassOccupancy, SharedPool};
use crate::clock::ManualClock;
use crate::context::PolicyContext;
use crate::events::{BulkheadEventKind, Event, EventBus, EventStream};
use crate::priority::{self, scope, scope_weak, with};
use crate::{Adaptive, Priority, ShedAt};

use Priority::{Critical, High, Normal, Sheddable};

/// A bulkhead of `max` slots with `shed_at`, waiting up to 10 s on a
/// manual clock, and its events.
fn bulkhead(max: u32, shed_at: &str) -> (Bulkhead, EventStream) {
    let config = BulkheadConfig::builder()
        .max_concurrent(max)
        .max_wait(Duration::from_secs(10))
        .shed_at(ShedAt::parse("shed_at", shed_at).unwrap());
    built(config)
}

fn built(config: super::BulkheadConfigBuilder) -> (Bulkhead, EventStream) {
    let bus = EventBus::default();
    let events = bus.subscribe();
    let context = PolicyContext::new(Arc::new(ManualClock::new())).with_events(bus);
    let bulkhead = Bulkhead::with_context("classes", config.build().unwrap(), context);
    (bulkhead, events)
}

fn poll<F: Future>(future: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

/// How a call of `class` enters: sync (`try_enter` or `enter`, which may
/// wait) or async (`enter_async`, polled once, in a scope).
#[derive(Clone, Copy, Debug)]
enum Way {
    TryEnter,
    Enter,
    Async,
}

const WAYS: [Way; 3] = [Way::TryEnter, Way::Enter, Way::Async];

/// A call of `class` (`None`: no class set) entering `bulkhead` in `way`:
/// its permit, or `None` if it was refused at once.
fn call(bulkhead: &Bulkhead, class: Option<Priority>, way: Way) -> Option<BulkheadPermit<'_>> {
    let enter = || match way {
        Way::TryEnter => bulkhead.try_enter().ok(),
        Way::Enter => bulkhead.enter().ok(),
        Way::Async => None,
    };
    match (way, class) {
        (Way::Async, Some(class)) => {
            let mut future = std::pin::pin!(scope(class, bulkhead.enter_async()));
            match poll(future.as_mut()) {
                Poll::Ready(result) => result.ok(),
                Poll::Pending => panic!("a call that may be refused at once waited"),
            }
        }
        (Way::Async, None) => {
            let mut future = std::pin::pin!(bulkhead.enter_async());
            match poll(future.as_mut()) {
                Poll::Ready(result) => result.ok(),
                Poll::Pending => panic!("a call that may be refused at once waited"),
            }
        }
        (_, Some(class)) => with(class, enter),
        (_, None) => enter(),
    }
}

fn class(bulkhead: &Bulkhead, class: Priority) -> ClassOccupancy {
    bulkhead.occupancy().classes[class.index()]
}

fn sheds(events: &mut EventStream) -> Vec<(Priority, u32, u32)> {
    events
        .drain()
        .filter_map(|event| match event {
            Event::Bulkhead(event) => match event.kind {
                BulkheadEventKind::Shed {
                    priority,
                    threshold,
                    max_concurrent,
                } => Some((priority, threshold, max_concurrent)),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

#[test]
fn a_sheddable_call_is_refused_above_half_the_limit() {
    for way in WAYS {
        let (bulkhead, mut events) = bulkhead(4, "");
        let held: Vec<_> = (0..2)
            .map(|_| call(&bulkhead, Some(Sheddable), way).unwrap())
            .collect();
        // Refused at once though it may wait: the slots left are for the
        // higher classes.
        assert!(call(&bulkhead, Some(Sheddable), way).is_none(), "{way:?}");
        assert_eq!(bulkhead.waiting_calls(), 0);
        assert_eq!(sheds(&mut events), [(Sheddable, 2, 4)], "{way:?}");
        let sheddable = class(&bulkhead, Sheddable);
        assert_eq!(
            (sheddable.held, sheddable.shed, sheddable.threshold),
            (2, 1, 2)
        );
        // Untagged calls still get the two slots left.
        let more: Vec<_> = (0..2)
            .map(|_| call(&bulkhead, None, way).unwrap())
            .collect();
        assert_eq!(class(&bulkhead, Normal).held, 2);
        drop((held, more));
        let after = bulkhead.occupancy();
        assert_eq!(after.concurrent_calls, 0);
        assert!(after.classes.iter().all(|c| c.held == 0), "{way:?}");
        assert_eq!(class(&bulkhead, Sheddable).shed, 1, "kept");
    }
}

#[test]
fn an_untagged_call_is_refused_only_when_full() {
    for way in [Way::TryEnter, Way::Async] {
        let (bulkhead, mut events) = bulkhead(4, "sheddable=0.25, normal=1, high=1");
        let sheddable = call(&bulkhead, Some(Sheddable), way).unwrap();
        let held: Vec<_> = (0..3)
            .map(|_| call(&bulkhead, None, way).unwrap())
            .collect();
        assert!(bulkhead.try_enter().is_err(), "full");
        assert!(
            sheds(&mut events).is_empty(),
            "a full bulkhead is no shedding"
        );
        // Normal given by a scope is the same: the whole limit.
        drop(sheddable);
        let normal = call(&bulkhead, Some(Normal), way).unwrap();
        assert_eq!(class(&bulkhead, Normal).held, 4);
        drop((held, normal));
    }
}

#[test]
fn a_critical_call_takes_the_last_slot() {
    for way in WAYS {
        let (bulkhead, mut events) = bulkhead(4, "sheddable=0.25, normal=0.5, high=0.75");
        let normal: Vec<_> = (0..2)
            .map(|_| call(&bulkhead, None, way).unwrap())
            .collect();
        // Untagged calls are Normal: half the limit, and refused at once.
        assert!(call(&bulkhead, None, way).is_none(), "{way:?}");
        assert!(call(&bulkhead, Some(Sheddable), way).is_none());
        let high = call(&bulkhead, Some(High), way).unwrap();
        assert!(call(&bulkhead, Some(High), way).is_none());
        let critical = call(&bulkhead, Some(Critical), way).unwrap();
        assert_eq!(bulkhead.available(), 0);
        let shed: Vec<_> = sheds(&mut events).iter().map(|s| s.0).collect();
        assert_eq!(shed, [Normal, Sheddable, High], "{way:?}");
        let held = bulkhead.occupancy().classes.map(|c| c.held);
        assert_eq!(held, [0, 2, 1, 1]);
        drop((normal, high, critical));
    }
}

#[test]
fn a_sheddable_waiter_is_never_queued_so_never_handed_a_slot_above_its_threshold() {
    let (bulkhead, _events) = bulkhead(2, "");
    let held = [bulkhead.try_enter().unwrap(), bulkhead.try_enter().unwrap()];
    // Full: a Normal caller waits, a Sheddable one is refused at once.
    let mut normal = std::pin::pin!(bulkhead.enter_async());
    assert!(poll(normal.as_mut()).is_pending());
    let mut sheddable = std::pin::pin!(scope(Sheddable, bulkhead.enter_async()));
    assert!(matches!(poll(sheddable.as_mut()), Poll::Ready(Err(_))));
    assert!(with(Sheddable, || bulkhead.enter()).is_err());
    assert_eq!(bulkhead.waiting_calls(), 1);
    drop(held);
    let Poll::Ready(Ok(permit)) = poll(normal.as_mut()) else {
        panic!("the normal waiter got the slot");
    };
    assert_eq!(class(&bulkhead, Normal).held, 1);
    drop(permit);
}

#[test]
fn a_critical_newcomer_takes_a_slot_no_waiter_may_take() {
    let (bulkhead, _events) = bulkhead(4, "sheddable=0.25, normal=0.5, high=0.5");
    let held: Vec<_> = (0..2).map(|_| bulkhead.try_enter().unwrap()).collect();
    // Two slots free, but no Normal or Sheddable call may take them, nor
    // wait for them: they stay free for the higher classes.
    assert!(bulkhead.enter().is_err());
    let mut waiting = std::pin::pin!(scope(Sheddable, bulkhead.enter_async()));
    assert!(matches!(poll(waiting.as_mut()), Poll::Ready(Err(_))));
    assert_eq!((bulkhead.waiting_calls(), bulkhead.available()), (0, 2));
    let critical = with(Critical, || bulkhead.enter()).unwrap();
    let mut async_critical = std::pin::pin!(scope(Critical, bulkhead.enter_async()));
    let Poll::Ready(Ok(last)) = poll(async_critical.as_mut()) else {
        panic!("the last slot is Critical's");
    };
    assert_eq!(class(&bulkhead, Critical).held, 2);
    drop((held, critical, last));
}

#[test]
fn a_lowered_limit_counts_what_a_class_holds_beyond_its_share() {
    let (bulkhead, _events) = bulkhead(8, "");
    let held: Vec<_> = (0..4)
        .map(|_| with(Sheddable, || bulkhead.try_enter()).unwrap())
        .collect();
    let sheddable = class(&bulkhead, Sheddable);
    assert_eq!((sheddable.threshold, sheddable.beyond_share), (4, 0));
    assert!(
        bulkhead
            .occupancy()
            .classes
            .iter()
            .all(|c| c.beyond_share == 0)
    );
    bulkhead.set_max_concurrent(4).unwrap();
    let sheddable = class(&bulkhead, Sheddable);
    assert_eq!((sheddable.threshold, sheddable.held), (2, 4));
    assert_eq!(
        sheddable.beyond_share, 2,
        "min(held, in flight - threshold)"
    );
    assert_eq!(class(&bulkhead, Critical).beyond_share, 0);
    let mut held = held;
    held.truncate(2);
    assert_eq!(class(&bulkhead, Sheddable).beyond_share, 0);
    assert!(with(Sheddable, || bulkhead.try_enter()).is_err());
    let mut normal = std::pin::pin!(scope(Normal, bulkhead.enter_async()));
    let Poll::Ready(Ok(normal)) = poll(normal.as_mut()) else {
        panic!("normal takes the slots sheddable may not");
    };
    drop((held, normal));
}

#[test]
fn the_attribute_class_beats_the_tower_class_and_loses_to_a_scope() {
    let config = BulkheadConfig::builder()
        .max_concurrent(2)
        .priority(Sheddable);
    let (bulkhead, _events) = built(config);
    assert_eq!(bulkhead.config().priority(), Sheddable);
    // Its own calls are Sheddable: one slot of two.
    let own = bulkhead.try_enter().unwrap();
    assert!(bulkhead.try_enter().is_err());
    // A tower layer's class does not beat the bulkhead's.
    let mut weak = std::pin::pin!(scope_weak(Critical, async { bulkhead.try_enter().is_ok() }));
    assert_eq!(poll(weak.as_mut()), Poll::Ready(false));
    // A scope does, sync and async.
    let critical = with(Critical, || bulkhead.try_enter()).unwrap();
    drop(critical);
    let mut strong = std::pin::pin!(scope(Critical, bulkhead.enter_async()));
    assert!(matches!(poll(strong.as_mut()), Poll::Ready(Ok(_))));
    drop(own);
    // Without a class of its own, the tower layer's counts.
    let (plain, _events) = self::bulkhead(2, "");
    let first = plain.try_enter().unwrap();
    let mut weak = std::pin::pin!(scope_weak(Sheddable, async { plain.try_enter().is_ok() }));
    assert_eq!(poll(weak.as_mut()), Poll::Ready(false), "tower's Sheddable");
    drop(first);
}

#[test]
fn classed_permits_give_back_their_class_owned_and_timed() {
    let adaptive = BulkheadConfig::builder()
        .max_concurrent(8)
        .initial_concurrent(8)
        .adaptive(Adaptive::Aimd);
    for config in [BulkheadConfig::builder().max_concurrent(8), adaptive] {
        let (bulkhead, _events) = built(config);
        let owned: Vec<_> = Priority::ALL
            .into_iter()
            .map(|class| with(class, || bulkhead.try_enter_owned()).unwrap())
            .collect();
        let plain = bulkhead.try_enter_owned().unwrap();
        assert_eq!(bulkhead.occupancy().classes.map(|c| c.held), [1, 2, 1, 1]);
        let moved = std::thread::spawn(move || drop(owned));
        moved.join().unwrap();
        assert_eq!(bulkhead.occupancy().classes.map(|c| c.held), [0, 1, 0, 0]);
        drop(plain);
        assert_eq!(bulkhead.concurrent_calls(), 0);
    }
}

#[test]
fn thresholds_follow_the_adaptive_limit_in_force() {
    let config = BulkheadConfig::builder()
        .max_concurrent(20)
        .initial_concurrent(10)
        .adaptive(Adaptive::Aimd)
        .shed_at(ShedAt::new(0.5, 0.8, 1.0).unwrap());
    let (bulkhead, _events) = built(config);
    let limit = bulkhead.occupancy().max_concurrent;
    assert_eq!(limit, 10, "the limit in force, the algorithm's");
    let threshold = |class| class_threshold(&bulkhead, class);
    assert_eq!(threshold(Sheddable), limit / 2);
    assert_eq!(threshold(Normal), limit * 8 / 10);
    let held: Vec<_> = (0..limit / 2)
        .map(|_| with(Sheddable, || bulkhead.try_enter()).unwrap())
        .collect();
    assert!(with(Sheddable, || bulkhead.try_enter()).is_err());
    // A cap lowers the limit in force: the thresholds follow at once.
    bulkhead.set_limit_cap(Some(4));
    assert_eq!((threshold(Sheddable), threshold(Normal)), (2, 3));
    assert!(
        with(Normal, || bulkhead.try_enter()).is_err(),
        "5 in flight >= 3"
    );
    drop(held);
    let two: Vec<_> = (0..2)
        .map(|_| with(Sheddable, || bulkhead.try_enter()).unwrap())
        .collect();
    assert!(with(Sheddable, || bulkhead.try_enter()).is_err());
    let normal = with(Normal, || bulkhead.try_enter()).unwrap();
    assert!(with(Normal, || bulkhead.try_enter()).is_err());
    drop((two, normal));
}

fn class_threshold(bulkhead: &Bulkhead, class: Priority) -> u32 {
    bulkhead.occupancy().classes[class.index()].threshold
}

#[test]
fn new_shares_and_a_new_default_class_take_effect_at_once() {
    let (bulkhead, mut events) = bulkhead(4, "");
    let held: Vec<_> = (0..2).map(|_| bulkhead.try_enter().unwrap()).collect();
    bulkhead.set_priorities(ShedAt::DEFAULT, Some(Sheddable));
    assert_eq!(bulkhead.config().priority_set(), Some(Sheddable));
    assert!(
        bulkhead.try_enter().is_err(),
        "its own calls are Sheddable now"
    );
    assert_eq!(sheds(&mut events), [(Sheddable, 2, 4)]);
    // Untagged calls held before count for the new default class.
    assert_eq!(class(&bulkhead, Sheddable).held, 2);
    bulkhead.set_priorities(ShedAt::new(0.75, 1.0, 1.0).unwrap(), Some(Sheddable));
    let third = bulkhead.try_enter().unwrap();
    assert!(bulkhead.try_enter().is_err());
    bulkhead.set_priorities(ShedAt::DEFAULT, None);
    let fourth = bulkhead.try_enter().unwrap();
    assert_eq!(
        bulkhead.config().to_string(),
        "max_concurrent = 4, max_wait = 10s, enabled = true"
    );
    drop((held, third, fourth));
    assert_eq!(bulkhead.concurrent_calls(), 0);
    assert!(bulkhead.occupancy().classes.iter().all(|c| c.held == 0));
}

#[test]
fn a_disabled_bulkhead_admits_every_class_uncounted() {
    let config = BulkheadConfig::builder()
        .enabled(false)
        .priority(Sheddable)
        .shed_at(ShedAt::new(0.1, 0.1, 0.1).unwrap());
    let (bulkhead, _events) = built(config);
    for class in Priority::ALL {
        let permit = with(class, || bulkhead.try_enter()).unwrap();
        assert!(!permit.holds_slot());
    }
    assert_eq!(priority::current(), None);
}

/// On a pool of `budget` with `reserved` slots reserved, a bulkhead of
/// `max`.
fn pooled(budget: u32, reserved: u32, max: u32) -> (SharedPool, Bulkhead) {
    let pool = SharedPool::new(budget);
    let config = BulkheadConfig::builder()
        .max_concurrent(max)
        .reserved(reserved)
        .build()
        .unwrap();
    let context = PolicyContext::new(Arc::new(ManualClock::new()));
    let bulkhead = Bulkhead::with_pool("pooled", config, context, &pool);
    (pool, bulkhead)
}

#[test]
fn a_sheddable_borrower_stops_at_its_share_of_the_pool() {
    // 2 reserved, 6 unreserved in the pool, a ceiling of 8.
    let (pool, bulkhead) = pooled(8, 2, 8);
    let reserved: Vec<_> = (0..2).map(|_| bulkhead.try_enter().unwrap()).collect();
    // Sheddable's share of the ceiling is 4: two more, borrowed.
    let borrowed: Vec<_> = (0..2)
        .map(|_| with(Sheddable, || bulkhead.try_enter()).unwrap())
        .collect();
    assert_eq!(pool.borrowed(), 2);
    assert!(with(Sheddable, || bulkhead.try_enter()).is_err());
    assert_eq!(class(&bulkhead, Sheddable).shed, 1);
    // Untagged calls borrow up to the ceiling.
    let rest: Vec<_> = (0..4).map(|_| bulkhead.try_enter().unwrap()).collect();
    assert_eq!((pool.borrowed(), bulkhead.concurrent_calls()), (6, 8));
    drop((reserved, borrowed, rest));
    assert_eq!(pool.borrowed(), 0);
}

#[test]
fn a_sheddable_borrower_counts_its_share_of_the_pools_cap() {
    // A ceiling of 8 alone would let Sheddable borrow 3 (4 in flight), but
    // the pool's cap of unreserved slots is 2: Sheddable borrows 1.
    let (pool, bulkhead) = pooled(3, 1, 8);
    let first = with(Sheddable, || bulkhead.try_enter()).unwrap();
    let borrowed = with(Sheddable, || bulkhead.try_enter()).unwrap();
    assert_eq!(pool.borrowed(), 1);
    assert!(with(Sheddable, || bulkhead.try_enter()).is_err());
    let critical = with(Critical, || bulkhead.try_enter()).unwrap();
    assert_eq!(pool.borrowed(), 2);
    drop((first, borrowed, critical));
    assert_eq!((pool.borrowed(), bulkhead.concurrent_calls()), (0, 0));
}

#[test]
fn the_snapshot_counts_every_call_in_a_class() {
    let (bulkhead, _events) = bulkhead(10, "sheddable=0.3, normal=0.6, high=0.9");
    let mut held = Vec::new();
    for (class, n) in [(Sheddable, 3), (Normal, 2), (High, 2), (Critical, 1)] {
        for _ in 0..n {
            held.push(with(class, || bulkhead.try_enter()).unwrap());
        }
        if class == Sheddable {
            // Untagged: Normal, the bulkhead's default class.
            held.push(bulkhead.try_enter().unwrap());
        }
    }
    let occupancy = bulkhead.occupancy();
    assert_eq!(occupancy.concurrent_calls, 9);
    assert_eq!(occupancy.classes.map(|c| c.class), Priority::ALL);
    assert_eq!(occupancy.classes.map(|c| c.held), [3, 3, 2, 1]);
    assert_eq!(occupancy.classes.map(|c| c.threshold), [3, 6, 9, 10]);
    assert_eq!(occupancy.classes.map(|c| c.beyond_share), [0, 0, 0, 0]);
    let sum: u32 = occupancy.classes.iter().map(|c| c.held).sum();
    assert_eq!(sum, occupancy.concurrent_calls);
}

#[test]
fn a_critical_waiter_is_served_before_an_older_normal_one() {
    let (bulkhead, _events) = bulkhead(1, "");
    let held = bulkhead.try_enter().unwrap();
    let mut normal = std::pin::pin!(bulkhead.enter_async());
    assert!(poll(normal.as_mut()).is_pending());
    let mut critical = std::pin::pin!(scope(Critical, bulkhead.enter_async()));
    assert!(poll(critical.as_mut()).is_pending());
    let mut high = std::pin::pin!(scope(High, bulkhead.enter_async()));
    assert!(poll(high.as_mut()).is_pending());
    assert_eq!(bulkhead.waiting_calls(), 3);
    drop(held);
    let Poll::Ready(Ok(first)) = poll(critical.as_mut()) else {
        panic!("the critical waiter is served first");
    };
    assert!(poll(normal.as_mut()).is_pending() && poll(high.as_mut()).is_pending());
    assert_eq!(class(&bulkhead, Critical).held, 1);
    drop(first);
    let Poll::Ready(Ok(second)) = poll(high.as_mut()) else {
        panic!("then the high one");
    };
    drop(second);
    let Poll::Ready(Ok(third)) = poll(normal.as_mut()) else {
        panic!("then the normal one");
    };
    assert_eq!(class(&bulkhead, Normal).held, 1);
    drop(third);
    assert!(bulkhead.occupancy().classes.iter().all(|c| c.held == 0));
}

#[test]
fn blocked_threads_are_served_by_class_then_arrival() {
    use std::sync::Mutex;
    use std::sync::mpsc;

    let (bulkhead, _events) = bulkhead(1, "");
    let held = bulkhead.try_enter().unwrap();
    let served = Arc::new(Mutex::new(Vec::new()));
    let mut releases = Vec::new();
    let mut threads = Vec::new();
    for (i, class) in [Normal, Critical, Normal, High].into_iter().enumerate() {
        let (mine, served) = (bulkhead.clone(), Arc::clone(&served));
        let (release, released) = mpsc::channel::<()>();
        releases.push(release);
        threads.push(std::thread::spawn(move || {
            let permit = with(class, || mine.enter()).unwrap();
            served.lock().unwrap().push((class, i));
            let _ = released.recv();
            drop(permit);
        }));
        while bulkhead.waiting_calls() < i as u32 + 1 {
            std::thread::yield_now();
        }
    }
    drop(held);
    let mut order = Vec::new();
    for _ in 0..4 {
        let next = loop {
            let served = served.lock().unwrap();
            if served.len() > order.len() {
                break served[order.len()];
            }
            drop(served);
            std::thread::yield_now();
        };
        order.push(next);
        releases[next.1].send(()).unwrap();
    }
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(
        order,
        [(Critical, 1), (High, 3), (Normal, 0), (Normal, 2)],
        "by class, then arrival"
    );
}

#[test]
fn a_waiter_whose_share_was_lowered_is_not_handed_a_slot_above_its_threshold() {
    let (bulkhead, _events) = bulkhead(2, "");
    let held = [bulkhead.try_enter().unwrap(), bulkhead.try_enter().unwrap()];
    let mut normal = std::pin::pin!(bulkhead.enter_async());
    assert!(poll(normal.as_mut()).is_pending());
    // Normal may now take half the limit: one call in flight is its share.
    bulkhead.set_priorities(ShedAt::new(0.5, 0.5, 1.0).unwrap(), None);
    let [first, second] = held;
    drop(first);
    assert!(
        poll(normal.as_mut()).is_pending(),
        "1 in flight >= Normal's 1"
    );
    // A critical newcomer waiting is eligible for the slot left free.
    let mut critical = std::pin::pin!(scope(Critical, bulkhead.enter_async()));
    let Poll::Ready(Ok(critical)) = poll(critical.as_mut()) else {
        panic!("critical takes the free slot");
    };
    drop((second, critical));
    let Poll::Ready(Ok(normal)) = poll(normal.as_mut()) else {
        panic!("back under its threshold, the normal waiter is served");
    };
    drop(normal);
}

#[test]
fn pool_waiters_are_served_by_class_then_ticket() {
    // A pool of 2, all reserved by `full`; `a` and `b` borrow (nothing
    // reserved, ceiling 2) and wait.
    let pool = SharedPool::new(2);
    let context = || PolicyContext::new(Arc::new(ManualClock::new()));
    let on = |id: &str, reserved: u32| {
        let config = BulkheadConfig::builder()
            .max_concurrent(2)
            .reserved(reserved)
            .max_wait(Duration::from_secs(10))
            .build()
            .unwrap();
        Bulkhead::with_pool(id, config, context(), &pool)
    };
    let (full, a, b) = (on("full", 2), on("a", 0), on("b", 0));
    let held = [full.try_enter().unwrap(), full.try_enter().unwrap()];
    let mut older = std::pin::pin!(a.enter_async());
    assert!(poll(older.as_mut()).is_pending());
    let mut critical = std::pin::pin!(scope(Critical, b.enter_async()));
    assert!(poll(critical.as_mut()).is_pending());
    // `full` lowers its reservation: its slots go to the pool as they
    // come back.
    full.set_reserved(Some(0)).unwrap();
    let [first, second] = held;
    drop(first);
    let Poll::Ready(Ok(first)) = poll(critical.as_mut()) else {
        panic!("the critical waiter on b is served before a's older one");
    };
    assert!(poll(older.as_mut()).is_pending());
    drop(second);
    let Poll::Ready(Ok(second)) = poll(older.as_mut()) else {
        panic!("then a's");
    };
    drop((first, second));
    assert_eq!(pool.borrowed(), 0);
}

#[test]
fn a_sheddable_call_at_a_full_bulkhead_is_refused_as_any_call_and_never_waits() {
    let config = BulkheadConfig::builder().max_concurrent(2);
    let (quick, mut events) = built(config);
    let held = [quick.try_enter().unwrap(), quick.try_enter().unwrap()];
    assert!(with(Sheddable, || quick.try_enter()).is_err());
    let kinds: Vec<_> = events
        .drain()
        .filter_map(|event| match event {
            Event::Bulkhead(event) => Some(event.kind),
            _ => None,
        })
        .collect();
    assert!(
        matches!(
            kinds[..],
            [BulkheadEventKind::Rejected { waited: false, .. }]
        ),
        "full, not shed: {kinds:?}"
    );
    assert_eq!(class(&quick, Sheddable).shed, 0);
    drop(held);
    // With a wait, it is refused at once too: its share is below the limit.
    let (waiting, mut events) = bulkhead(2, "");
    let held = [waiting.try_enter().unwrap(), waiting.try_enter().unwrap()];
    assert!(with(Sheddable, || waiting.enter()).is_err());
    assert_eq!(sheds(&mut events), [(Sheddable, 1, 2)]);
    assert_eq!(waiting.waiting_calls(), 0);
    drop(held);
}

#[test]
fn thresholds_follow_the_limit_an_adaptive_algorithm_moves() {
    use crate::CallOutcome;

    let clock = ManualClock::new();
    let config = BulkheadConfig::builder()
        .max_concurrent(100)
        .min_concurrent(1)
        .initial_concurrent(8)
        .adaptive(Adaptive::Aimd)
        .build()
        .unwrap();
    let context = PolicyContext::new(Arc::new(clock.clone()));
    let bulkhead = Bulkhead::with_context("adaptive", config, context);
    let mut limits = Vec::new();
    let mut held = Vec::new();
    // Every call holds its slot 300 ms until a timeout drops it: the
    // algorithm lowers the limit, window after window.
    for _ in 0..40 {
        clock.advance(Duration::from_millis(300));
        for mut permit in std::mem::take(&mut held) {
            crate::OwnedBulkheadPermit::set_outcome(&mut permit, CallOutcome::Dropped);
        }
        let limit = bulkhead.occupancy().max_concurrent;
        let threshold = class_threshold(&bulkhead, Sheddable);
        assert_eq!(threshold, (limit / 2).max(1), "half of the limit in force");
        // Sheddable takes its share exactly, the rest is for the others.
        while let Ok(permit) = with(Sheddable, || bulkhead.try_enter_owned()) {
            held.push(permit);
        }
        assert_eq!(held.len() as u32, threshold.min(limit));
        while let Ok(permit) = bulkhead.try_enter_owned() {
            held.push(permit);
        }
        assert_eq!(held.len() as u32, limit);
        limits.push(limit);
    }
    assert!(
        limits.first() > limits.last(),
        "the limit moved: {limits:?}"
    );
}
