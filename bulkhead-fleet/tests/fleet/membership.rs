//! Which bulkheads count against a process's share, and when: a bulkhead
//! declared in a batch that was dropped leaves no trace, one that a reload
//! moves off a fleet resource stays closed and counted until its calls
//! finish, and a registry whose fleet thread cannot start still builds.

use std::time::{Duration, Instant};

use bulkhead_core::{Bulkhead, BulkheadConfig};
use bulkhead_fleet::__testing::refuse_thread_starts;
use bulkhead_fleet::{FleetConfig, FleetState, OnUnreachable};
use bulkhead_registry::Registry;

use crate::registry::{member, share};
use crate::support::{RedisServer, wait_for};

/// Short, so that an empty Redis's hold (one lease) passes quickly; these
/// tests time nothing against it.
const LEASE: Duration = Duration::from_millis(400);

fn config(redis: &RedisServer, prefix: &str) -> FleetConfig {
    crate::registry::config(redis, prefix).lease(LEASE)
}

fn declare(registry: &Registry, id: &str, max: u32) -> Bulkhead {
    registry
        .bulkhead_policy(
            id,
            "test",
            &BulkheadConfig::builder().max_concurrent(max).resource("db"),
        )
        .unwrap()
}

#[test]
fn a_dropped_batch_leaves_no_member_and_its_id_can_be_declared_again() {
    let redis = RedisServer::start();
    let registry = Registry::new();
    registry
        .fleet_resource("db", 10, config(&redis, "batch"))
        .unwrap();
    let kept = declare(&registry, "kept", 5);
    {
        let mut batch = registry.declare();
        let spec = BulkheadConfig::builder().max_concurrent(5).resource("db");
        batch.bulkhead("ghost", "test", &spec).unwrap();
        // Dropped without a commit.
    }
    assert_eq!(registry.snapshot().fleets()[0].bulkheads, ["kept"]);
    // The id declared again is a new bulkhead: under the share like any.
    let ghost = declare(&registry, "ghost", 5);
    assert_eq!(
        ghost.max_concurrent(),
        0,
        "closed until the fleet grants slots"
    );
    let split = wait_for(Duration::from_secs(4), || {
        kept.max_concurrent() == 5 && ghost.max_concurrent() == 5
    });
    assert!(split.is_some(), "{:?}", registry.snapshot().fleets());
    let snapshot = registry.snapshot();
    let fleet = &snapshot.fleets()[0];
    assert_eq!(fleet.bulkheads, ["ghost", "kept"]);
    assert_eq!((fleet.share, fleet.limits), (10, 10));
}

#[test]
fn a_bulkhead_a_reload_moves_off_a_fleet_resource_stays_counted_until_its_calls_finish() {
    let redis = RedisServer::start();
    let toml = |resource: &str| {
        format!(
            "[resources.db]\nbudget = 10\nfleet = \"{}\"\nprefix = \"move\"\nlease = \"400ms\"\non_unreachable = \"closed\"\n\n\
             [resources.cache]\nbudget = 10\n\n\
             [bulkhead.instances.mover]\nmax_concurrent = 10\nresource = \"{resource}\"\n",
            redis.url()
        )
    };
    let a = Registry::builder()
        .config_toml(&toml("db"))
        .unwrap()
        .try_build()
        .unwrap();
    let mover = a
        .bulkhead_policy("mover", "test", &BulkheadConfig::builder())
        .unwrap();
    wait_for(Duration::from_secs(4), || mover.max_concurrent() == 10).expect("the whole budget");
    let permits: Vec<_> = (0..6).map(|_| mover.try_enter().unwrap()).collect();

    a.reload_toml(&toml("cache")).unwrap();
    assert!(
        mover.try_enter().is_err(),
        "closed while the calls the fleet admitted drain"
    );
    let snapshot = a.snapshot();
    let fleet = &snapshot.fleets()[0];
    assert!(fleet.bulkheads.is_empty(), "{fleet:?}");
    assert_eq!(
        (fleet.draining.as_slice(), fleet.in_flight),
        (&["mover".to_owned()][..], 6)
    );

    // Another process joins: it gets only the slots the 6 calls leave.
    let (b, _other) = member(config(&redis, "move"), "other", 10);
    wait_for(Duration::from_secs(3), || share(&b).0 == 4).expect("the free slots");
    let until = Instant::now() + 2 * LEASE;
    while Instant::now() < until {
        assert!(share(&b).0 <= 4, "{:?}", b.snapshot().fleets());
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(permits);
    let released = wait_for(Duration::from_secs(1), || mover.max_concurrent() == 10);
    assert!(released.is_some(), "runs on its new resource");
    assert!(a.snapshot().fleets()[0].draining.is_empty());
    let grown = wait_for(Duration::from_secs(3), || share(&b).0 == 10);
    assert!(grown.is_some(), "{:?}", b.snapshot().fleets());
}

#[test]
fn build_falls_back_when_the_fleet_thread_cannot_start_and_try_build_returns_reg_016() {
    let redis = RedisServer::start();
    let toml = format!(
        "[resources.db]\nbudget = 10\nfleet = \"{}\"\nprefix = \"nothread\"\nlease = \"400ms\"\non_unreachable = 2\n",
        redis.url()
    );
    refuse_thread_starts(true);
    let refused = Registry::builder().config_toml(&toml).unwrap().try_build();
    assert_eq!(refused.unwrap_err().code(), "REG-016");
    let registry = Registry::builder().config_toml(&toml).unwrap().build();
    let errors = registry.fleet_errors();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].code(), "REG-016");
    let snapshot = registry.snapshot();
    let fleet = &snapshot.fleets()[0];
    // A process that never reached Redis has no fallback, whatever
    // on_unreachable asks for: the others may hold the whole budget.
    assert_eq!((fleet.share, fleet.state), (0, FleetState::Unreachable));
    assert!(
        fleet
            .last_error
            .as_deref()
            .is_some_and(|e| e.starts_with("REG-016")),
        "{fleet:?}"
    );
    let orders = declare(&registry, "orders", 5);
    assert_eq!(
        orders.max_concurrent(),
        0,
        "no slots without the fleet's word"
    );
    // Leaving does not wait for a thread that never ran.
    let closed = Registry::builder().config_toml(&toml).unwrap().build();
    let started = Instant::now();
    closed.leave_fleets();
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(share(&closed), (0, FleetState::Left));

    // Declaring the resource again starts the thread: it joins the fleet.
    refuse_thread_starts(false);
    let same = FleetConfig::redis(&redis.url())
        .unwrap()
        .prefix("nothread")
        .lease(LEASE)
        .on_unreachable(OnUnreachable::Slots(2));
    registry.fleet_resource("db", 10, same).unwrap();
    let joined = wait_for(Duration::from_secs(4), || {
        share(&registry) == (5, FleetState::Joined) && orders.max_concurrent() == 5
    });
    assert!(joined.is_some(), "{:?}", registry.snapshot().fleets());
}

#[test]
fn borrowing_on_a_fleet_resource_stays_within_the_process_share() {
    let redis = RedisServer::start();
    let registry = Registry::new();
    registry
        .fleet_resource("db", 10, config(&redis, "borrow"))
        .unwrap();
    let on = |id: &str, reserved: u32| {
        let spec = BulkheadConfig::builder()
            .max_concurrent(10)
            .reserved(reserved)
            .resource("db");
        registry.bulkhead_policy(id, "test", &spec).unwrap()
    };
    let (reports, payments) = (on("reports", 2), on("payments", 3));
    let granted = wait_for(Duration::from_secs(4), || {
        share(&registry).0 == 10 && reports.max_concurrent() + payments.max_concurrent() == 10
    });
    assert!(granted.is_some(), "{:?}", registry.snapshot().fleets());
    assert!(
        reports.max_concurrent() > 2,
        "{:?}",
        registry.snapshot().fleets()
    );

    // Reports borrow up to their cap; payments' reserved slots stay theirs.
    let held: Vec<_> = (0..10).filter_map(|_| reports.try_enter().ok()).collect();
    assert_eq!(held.len() as u32, reports.max_concurrent());
    assert!(reports.borrowed() > 0);
    let mut paid: Vec<_> = (0..payments.reserved())
        .map(|_| {
            payments
                .try_enter()
                .expect("a reserved slot is always there")
        })
        .collect();
    while let Ok(permit) = payments.try_enter() {
        paid.push(permit);
    }
    let in_flight = || reports.concurrent_calls() + payments.concurrent_calls();
    assert!(in_flight() <= 10, "{}", in_flight());

    // Another process joins: it gets only what these calls leave, and
    // this process admits nothing past its shrinking share meanwhile.
    let (b, _other) = member(config(&redis, "borrow"), "other", 10);
    let until = Instant::now() + 3 * LEASE;
    while Instant::now() < until {
        let b_share = share(&b).0;
        assert!(b_share + in_flight() <= 10, "{b_share} + {}", in_flight());
        assert!(reports.try_enter().is_err() && payments.try_enter().is_err());
        std::thread::sleep(Duration::from_millis(5));
    }
    drop((held, paid));
    let split = wait_for(Duration::from_secs(4), || share(&b).0 >= 5);
    assert!(split.is_some(), "{:?}", b.snapshot().fleets());
    assert_eq!(in_flight(), 0);
}
