//! Adaptive bulkheads sharing the room of a resource's budget max-min fair
//! (the adaptive guide's "Budgets"): a busy bulkhead no longer keeps
//! another at its floor, and the limits in force never add up to more
//! than the budget while the room changes hands.

use std::collections::VecDeque;
use std::time::Duration;

use bulkhead_core::{Adaptive, Bulkhead, BulkheadConfigBuilder, ManualClock, OwnedBulkheadPermit};
use bulkhead_registry::Registry;

use super::adaptive::{Load, MS, adaptive, manual};

const BUDGET: u32 = 40;

fn on_db(algorithm: Adaptive) -> BulkheadConfigBuilder {
    adaptive(algorithm, (1, 2, 100)).resource("db")
}

/// Asserts that the limits in force add up to at most the budget, and so
/// does the registry's reading of the resource.
fn within_budget(registry: &Registry, bulkheads: &[&Bulkhead]) {
    let sum: u32 = bulkheads.iter().map(|b| b.max_concurrent()).sum();
    let (budget, used) = registry.resource_usage("db").unwrap();
    assert!(sum <= BUDGET, "{sum} in force on a budget of {BUDGET}");
    assert!(used <= u64::from(budget), "{used} used of {budget}");
}

/// Keeps each bulkhead saturated, more demand than any limit, on a
/// dependency that serves every call in 10 ms whatever the concurrency:
/// each millisecond the calls admitted 10 ms ago end one by one, each
/// replaced at once, so that every call leaves a full bulkhead.
struct Saturate {
    clock: ManualClock,
    now: u64,
    calls: Vec<(Bulkhead, VecDeque<(u64, OwnedBulkheadPermit)>)>,
}

impl Saturate {
    fn new(clock: &ManualClock, bulkheads: &[&Bulkhead]) -> Self {
        let calls = bulkheads
            .iter()
            .map(|&bulkhead| (bulkhead.clone(), VecDeque::new()))
            .collect();
        Saturate {
            clock: clock.clone(),
            now: 0,
            calls,
        }
    }

    /// One millisecond.
    fn step(&mut self) {
        const HOLD: u64 = 10;
        self.clock.advance(MS);
        self.now += 1;
        let now = self.now;
        for (bulkhead, calls) in &mut self.calls {
            while calls.front().is_some_and(|(at, _)| now - at >= HOLD) {
                calls.pop_front();
                if let Ok(permit) = bulkhead.try_enter_owned() {
                    calls.push_back((now, permit));
                }
            }
            while let Ok(permit) = bulkhead.try_enter_owned() {
                calls.push_back((now, permit));
            }
        }
    }
}

/// The acceptance test: on a budget of 40, a bulkhead saturated
/// alone (its dependency fine) takes the room; once a second one is
/// saturated too, each holds at least 40 % of the budget within 5 s, and
/// the limits in force never add up to more than 40 at any step.
#[test]
fn a_second_saturated_bulkhead_gets_its_fair_share_within_5_s() {
    for algorithm in [Adaptive::Gradient2, Adaptive::Aimd, Adaptive::Vegas] {
        let (clock, registry) = manual();
        registry.resource("db", BUDGET).unwrap();
        let a = registry
            .bulkhead_policy("a", "t", &on_db(algorithm))
            .unwrap();
        let b = registry
            .bulkhead_policy("b", "t", &on_db(algorithm))
            .unwrap();

        // a alone, for 10 s: it takes the room b does not hold.
        let mut alone = Saturate::new(&clock, &[&a]);
        for _ in 0..10_000 {
            alone.step();
            within_budget(&registry, &[&a, &b]);
        }
        assert_eq!(
            (a.max_concurrent(), b.max_concurrent()),
            (BUDGET - 2, 2),
            "{algorithm}: a grows into all the free room"
        );
        drop(alone);

        // Both saturated: 5 s.
        let mut both = Saturate::new(&clock, &[&a, &b]);
        let fair = BUDGET * 2 / 5;
        let mut reached = None;
        for ms in 1..=5000 {
            both.step();
            within_budget(&registry, &[&a, &b]);
            if reached.is_none() && a.max_concurrent().min(b.max_concurrent()) >= fair {
                reached = Some(ms);
            }
        }
        let limits = (a.max_concurrent(), b.max_concurrent());
        assert!(
            limits.0 >= fair && limits.1 >= fair,
            "{algorithm}: limits {limits:?} after 5 s, each should be at least {fair}"
        );
        // The room above the floors (38) splits evenly, and stays split.
        assert_eq!(
            limits,
            (20, 20),
            "{algorithm}: reached {fair} at {reached:?} ms"
        );
        let share = |bulkhead: &Bulkhead| bulkhead.adaptive().unwrap().room_share;
        assert_eq!((share(&a), share(&b)), (Some(19), Some(19)), "{algorithm}");
    }
}

/// A bulkhead that wants less than an equal split keeps what it wants; the
/// saturated one grows into the rest.
#[test]
fn a_bulkhead_that_wants_less_than_an_equal_split_keeps_it_and_the_rest_is_used() {
    let (clock, registry) = manual();
    registry.resource("db", BUDGET).unwrap();
    let a = registry
        .bulkhead_policy("a", "t", &on_db(Adaptive::Gradient2))
        .unwrap();
    let b = registry
        .bulkhead_policy("b", "t", &on_db(Adaptive::Gradient2))
        .unwrap();
    let mut busy = Load::new(&clock, vec![a.clone()]);
    // b: six calls at a time, each held 10 ms: it never needs more than
    // its floor and a few slots of room.
    let mut light = Vec::new();
    for _ in 0..1500 {
        busy.round(10 * MS);
        light.clear();
        light.extend((0..6).filter_map(|_| b.try_enter_owned().ok()));
        within_budget(&registry, &[&a, &b]);
    }
    let (la, lb) = (a.max_concurrent(), b.max_concurrent());
    assert!(
        (6..=13).contains(&lb),
        "b's limit {lb} follows its demand of 6"
    );
    assert!(la + lb >= BUDGET - 1, "a grows into the rest: {la} + {lb}");
}

/// A bulkhead taken off the resource leaves the shares: the other grows
/// into all the room again.
#[test]
fn a_bulkhead_removed_from_the_resource_leaves_the_fair_shares() {
    let (clock, registry) = manual();
    registry.resource("db", BUDGET).unwrap();
    let a = registry
        .bulkhead_policy("a", "t", &on_db(Adaptive::Aimd))
        .unwrap();
    let b = registry
        .bulkhead_policy("b", "t", &on_db(Adaptive::Aimd))
        .unwrap();
    let mut both = Saturate::new(&clock, &[&a, &b]);
    for _ in 0..5000 {
        both.step();
        within_budget(&registry, &[&a, &b]);
    }
    assert_eq!((a.max_concurrent(), b.max_concurrent()), (20, 20));
    drop(both);
    registry.resource("other", 10).unwrap();
    registry
        .reload_toml("[bulkhead.instances.b]\nresource = \"other\"\n")
        .unwrap();
    let mut alone = Saturate::new(&clock, &[&a]);
    for _ in 0..5000 {
        alone.step();
        within_budget(&registry, &[&a]);
    }
    assert_eq!(a.max_concurrent(), BUDGET);
}

/// Threads keep both bulkheads saturated while the manual clock moves
/// and the room changes hands: the room held never exceeds the budget,
/// nor do the calls in flight on the resource.
#[test]
fn threads_saturating_two_bulkheads_never_exceed_the_budget() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::SeqCst};

    const CALLERS: usize = 4;
    let (clock, registry) = manual();
    registry.resource("db", 12).unwrap();
    let bulkheads: Vec<Bulkhead> = ["a", "b"]
        .iter()
        .map(|name| {
            registry
                .bulkhead_policy(name, "t", &on_db(Adaptive::Gradient2))
                .unwrap()
        })
        .collect();
    let inside = Arc::new(AtomicU32::new(0));
    let most = Arc::new(AtomicU32::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let callers: Vec<_> = (0..2 * CALLERS)
        .map(|n| {
            let bulkhead = bulkheads[n % 2].clone();
            let (inside, most, stop) = (Arc::clone(&inside), Arc::clone(&most), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut admitted = 0u64;
                while !stop.load(SeqCst) {
                    let Ok(_permit) = bulkhead.try_enter() else {
                        std::thread::yield_now();
                        continue;
                    };
                    admitted += 1;
                    most.fetch_max(inside.fetch_add(1, SeqCst) + 1, SeqCst);
                    std::thread::sleep(Duration::from_micros(50));
                    inside.fetch_sub(1, SeqCst);
                }
                admitted
            })
        })
        .collect();
    for _ in 0..1500 {
        clock.advance(MS);
        let (budget, used) = registry.resource_usage("db").unwrap();
        assert!(used <= u64::from(budget), "{used} used of {budget}");
        std::thread::sleep(Duration::from_micros(200));
    }
    stop.store(true, SeqCst);
    let admitted: u64 = callers.into_iter().map(|t| t.join().unwrap()).sum();
    assert!(admitted > 1000, "{admitted} calls");
    assert!(
        most.load(SeqCst) <= 12,
        "{} calls in flight",
        most.load(SeqCst)
    );
    let limits: Vec<u32> = bulkheads.iter().map(Bulkhead::max_concurrent).collect();
    assert!(limits.iter().sum::<u32>() <= 12, "{limits:?}");
}
