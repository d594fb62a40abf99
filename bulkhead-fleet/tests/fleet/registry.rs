//! Fleet resources of registries in this process (each registry is a
//! member of the fleet of its own): shares, the cap on bulkheads,
//! fallbacks, rejoining, leaving, errors and secrets.

use std::time::Duration;

use bulkhead_core::{Bulkhead, BulkheadConfig, Event, FleetShareReason};
use bulkhead_fleet::{FleetConfig, FleetState, OnUnreachable};
use bulkhead_registry::{Registry, RegistryError};

use crate::support::{RedisServer, wait_for};

pub(crate) const LEASE: Duration = Duration::from_millis(1000);

pub(crate) fn config(redis: &RedisServer, prefix: &str) -> FleetConfig {
    FleetConfig::redis(&redis.url())
        .unwrap()
        .prefix(prefix)
        .lease(LEASE)
        .on_unreachable(OnUnreachable::Closed)
}

/// A registry on the fleet resource `db` (budget 10) with one bulkhead of
/// `max` slots on it.
pub(crate) fn member(config: FleetConfig, id: &str, max: u32) -> (Registry, Bulkhead) {
    let registry = Registry::new();
    registry.fleet_resource("db", 10, config).unwrap();
    let bulkhead = registry
        .bulkhead_policy(
            id,
            "test",
            &BulkheadConfig::builder().max_concurrent(max).resource("db"),
        )
        .unwrap();
    (registry, bulkhead)
}

pub(crate) fn share(registry: &Registry) -> (u32, FleetState) {
    let snapshot = registry.snapshot();
    let fleet = &snapshot.fleets()[0];
    (fleet.share, fleet.state)
}

#[test]
fn two_members_share_the_budget_and_their_bulkheads_run_within_it() {
    let redis = RedisServer::start();
    let (a, bulkhead_a) = member(config(&redis, "two"), "two-a", 10);
    let mut events = a.subscribe();
    // Before any reply, the bulkhead admits nothing.
    assert!(bulkhead_a.try_enter().is_err());
    let (b, bulkhead_b) = member(config(&redis, "two"), "two-b", 10);
    // An empty Redis holds every share for one lease, then the idle fleet
    // splits the budget evenly.
    let took = wait_for(Duration::from_secs(4), || {
        share(&a) == (5, FleetState::Joined) && share(&b) == (5, FleetState::Joined)
    });
    assert!(
        took.is_some(),
        "{:?} / {:?}",
        a.snapshot().fleets(),
        b.snapshot().fleets()
    );
    assert_eq!(bulkhead_a.max_concurrent(), 5);
    assert_eq!(
        bulkhead_a.config().max_concurrent(),
        10,
        "the configured limit is kept"
    );
    let snapshot = a.snapshot();
    assert_eq!(
        snapshot.bulkheads()[0].max_concurrent,
        5,
        "the limit in force"
    );
    let fleet = &snapshot.fleets()[0];
    assert_eq!((fleet.budget, fleet.processes, fleet.target), (10, 2, 5));
    assert!(fleet.lease_remaining.is_some());
    assert!(events.drain().any(|e| matches!(
        e,
        Event::FleetShareChanged(c) if c.resource == "db" && c.reason == FleetShareReason::Joined
    )));
    drop(bulkhead_b);
}

#[test]
fn a_busy_member_gets_the_slots_an_idle_one_does_not_use() {
    let redis = RedisServer::start();
    let (a, bulkhead_a) = member(config(&redis, "busy"), "busy-a", 10);
    let (b, _bulkhead_b) = member(config(&redis, "busy"), "busy-b", 10);
    wait_for(Duration::from_secs(4), || {
        share(&a).0 == 5 && share(&b).0 == 5
    })
    .unwrap();
    // a holds all of its 5 slots, and refuses callers: it asks for more.
    // b is idle (demand 1). Demands 5 and 1 are met, the 4 spare slots
    // split evenly: 7 and 3.
    let permits: Vec<_> = (0..5).map(|_| bulkhead_a.try_enter().unwrap()).collect();
    let mut refused = 0;
    let took = wait_for(Duration::from_secs(3), || {
        if bulkhead_a.try_enter().is_err() {
            refused += 1;
        }
        share(&a).0 == 7 && share(&b).0 == 3
    });
    assert!(
        took.is_some(),
        "{:?} {:?}",
        a.snapshot().fleets(),
        b.snapshot().fleets()
    );
    assert!(refused > 0);
    drop(permits);
}

#[test]
fn redis_stopped_closes_the_share_within_the_lease_and_it_comes_back_after() {
    let mut redis = RedisServer::start();
    let (a, bulkhead) = member(config(&redis, "stop"), "stop-a", 10);
    let mut events = a.subscribe();
    wait_for(Duration::from_secs(4), || {
        share(&a) == (10, FleetState::Joined)
    })
    .unwrap();
    redis.kill();
    let closed = wait_for(Duration::from_secs(2), || {
        share(&a) == (0, FleetState::Unreachable)
    });
    let closed = closed.expect("fell back");
    // Deadline: the last renewal's send + lease - margin, at most 750 ms
    // after the kill, and so before Redis could free the share (a lease).
    assert!(closed < LEASE, "{closed:?}");
    assert_eq!(bulkhead.max_concurrent(), 0);
    assert!(bulkhead.try_enter().is_err());
    redis.restart();
    let back = wait_for(Duration::from_secs(4), || {
        share(&a) == (10, FleetState::Joined)
    });
    assert!(back.is_some(), "{:?}", a.snapshot().fleets());
    let reasons: Vec<FleetShareReason> = events
        .drain()
        .filter_map(|e| match e {
            Event::FleetShareChanged(c) => Some(c.reason),
            _ => None,
        })
        .collect();
    assert!(
        reasons.contains(&FleetShareReason::Unreachable),
        "{reasons:?}"
    );
    assert!(reasons.contains(&FleetShareReason::Rejoined), "{reasons:?}");
}

#[test]
fn a_number_of_slots_is_the_fallback_when_asked_for() {
    let mut redis = RedisServer::start();
    let config = config(&redis, "slots").on_unreachable(OnUnreachable::Slots(3));
    let (a, _bulkhead) = member(config, "slots-a", 10);
    wait_for(Duration::from_secs(4), || {
        share(&a) == (10, FleetState::Joined)
    })
    .unwrap();
    redis.kill();
    let fell = wait_for(Duration::from_secs(2), || {
        share(&a) == (3, FleetState::Unreachable)
    });
    assert!(fell.is_some(), "{:?}", a.snapshot().fleets());
}

#[test]
fn a_pause_shorter_than_the_margin_keeps_the_share() {
    let redis = RedisServer::start();
    let (a, _bulkhead) = member(config(&redis, "pause"), "pause-a", 10);
    wait_for(Duration::from_secs(4), || {
        share(&a) == (10, FleetState::Joined)
    })
    .unwrap();
    let _: () = redis.cmd(&["CLIENT", "PAUSE", "400", "ALL"]);
    let dropped = wait_for(Duration::from_millis(1200), || {
        share(&a).1 != FleetState::Joined
    });
    assert_eq!(dropped, None, "{:?}", a.snapshot().fleets());
    assert!(a.snapshot().fleets()[0].renewals > 0);
}

#[test]
fn leaving_gives_the_share_back_at_once() {
    let redis = RedisServer::start();
    let (a, bulkhead_a) = member(config(&redis, "leave"), "leave-a", 10);
    let (b, _bulkhead_b) = member(config(&redis, "leave"), "leave-b", 10);
    wait_for(Duration::from_secs(4), || {
        share(&a).0 == 5 && share(&b).0 == 5
    })
    .unwrap();
    a.leave_fleets();
    assert_eq!(share(&a), (0, FleetState::Left));
    assert!(bulkhead_a.try_enter().is_err());
    // Before a's lease could have run out.
    let took = wait_for(LEASE, || share(&b).0 == 10);
    assert!(took.is_some(), "{:?}", b.snapshot().fleets());
}

#[test]
fn bad_fleet_configurations_are_refused_with_their_code() {
    let redis = RedisServer::start();
    let registry = Registry::new();
    let code = |r: Result<(), RegistryError>| r.unwrap_err().code();
    assert_eq!(
        FleetConfig::redis("http://h").unwrap_err().code(),
        "REG-014"
    );
    // TLS is REG-014 without the feature `tls` (which `--all-features`
    // turns on); a Sentinel URL without its master's name is in every
    // build.
    #[cfg(not(feature = "tls"))]
    assert_eq!(
        FleetConfig::redis("rediss://h").unwrap_err().code(),
        "REG-014"
    );
    assert_eq!(
        FleetConfig::redis("redis+sentinel://h").unwrap_err().code(),
        "REG-014"
    );
    let ok = config(&redis, "bad");
    assert_eq!(
        code(registry.fleet_resource("d{b}", 10, ok.clone())),
        "REG-014"
    );
    assert_eq!(
        code(registry.fleet_resource("db", 10, ok.clone().prefix("a}b"))),
        "REG-014"
    );
    assert_eq!(
        code(registry.fleet_resource("db", 10, ok.clone().lease(Duration::from_millis(10)))),
        "REG-014"
    );
    // The longest lease is a day; the fleet thread never sees a longer
    // one (it panicked on it, the resource stuck joining).
    for lease in [
        Duration::from_secs(u64::MAX),
        Duration::MAX,
        FleetConfig::MAX_LEASE + Duration::from_millis(1),
    ] {
        let error = registry
            .fleet_resource("db", 10, ok.clone().lease(lease))
            .unwrap_err();
        assert_eq!(error.code(), "REG-014");
        assert!(
            error.to_string().contains("longer than the maximum"),
            "{error}"
        );
    }
    assert_eq!(FleetConfig::MAX_LEASE, Duration::from_secs(24 * 60 * 60));
    assert!(registry.snapshot().fleets().is_empty());
    registry.fleet_resource("db", 10, ok.clone()).unwrap();
    registry.fleet_resource("db", 12, ok.clone()).unwrap();
    assert_eq!(
        code(registry.fleet_resource("db", 10, ok.prefix("other"))),
        "REG-015"
    );
    // The budget is a resource budget: REG-010 as for a local one.
    let declared = registry.bulkhead_policy(
        "too-big",
        "test",
        &BulkheadConfig::builder().max_concurrent(20).resource("db"),
    );
    assert_eq!(declared.unwrap_err().code(), "REG-010");
}

#[test]
fn the_password_never_shows() {
    const SECRET: &str = "s3cr3t-XYZ";
    let redis = RedisServer::start();
    // A server without a password: AUTH fails, and the error is kept.
    let url = format!("redis://app:{SECRET}@127.0.0.1:{}/0", redis.port);
    let config = FleetConfig::redis(&url).unwrap().lease(LEASE);
    let registry = Registry::new();
    let mut events = registry.subscribe();
    registry.fleet_resource("db", 10, config.clone()).unwrap();
    wait_for(Duration::from_secs(2), || {
        registry.snapshot().fleets()[0].last_error.is_some()
    })
    .expect("AUTH fails");
    let bad = FleetConfig::redis(&format!("redis://app:{SECRET}@[::1/0")).unwrap_err();
    let shown = [
        format!("{config:?}"),
        config.redis_url(),
        format!("{registry:?}"),
        format!("{:?}", registry.snapshot()),
        format!("{:?}", events.drain().collect::<Vec<_>>()),
        bad.to_string(),
        format!("{bad:?}"),
    ];
    for text in shown {
        assert!(!text.contains(SECRET), "{text}");
    }
    assert!(config.redis_url().contains("app:***@"));
}

#[test]
fn the_share_is_exported_as_bulkhead_fleet_share() {
    use bulkhead_registry::observe::export_metrics_to;
    use metrics_util::debugging::{DebugValue, DebuggingRecorder};

    let redis = RedisServer::start();
    let (registry, _bulkhead) = member(config(&redis, "metrics"), "metrics-a", 10);
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let _observer = export_metrics_to(&registry, Duration::from_millis(50), recorder).unwrap();
    // A snapshot of the debugging recorder resets what it read: read both
    // gauges from one.
    let mut seen = Vec::new();
    let exported = wait_for(Duration::from_secs(4), || {
        let values: Vec<(String, f64)> = snapshotter
            .snapshot()
            .into_vec()
            .into_iter()
            .filter_map(|(key, _, _, value)| match value {
                DebugValue::Gauge(v) => Some((key.key().name().to_owned(), v.into_inner())),
                _ => None,
            })
            .collect();
        let get = |name: &str| values.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
        let done = get("bulkhead_fleet_share") == Some(10.0)
            && get("bulkhead_fleet_budget") == Some(10.0)
            && get("bulkhead_fleet_processes") == Some(1.0);
        seen = values;
        done
    });
    assert!(exported.is_some(), "{seen:?}");
}

#[test]
fn a_fleet_resource_is_declared_in_toml() {
    let redis = RedisServer::start();
    let toml = format!(
        "[resources.db]\nbudget = 10\nfleet = \"{}\"\nprefix = \"toml\"\nlease = \"1s\"\non_unreachable = \"closed\"\n\n\
         [resources.cache]\nbudget = 4\n\n\
         [bulkhead.instances.orders]\nmax_concurrent = 6\nresource = \"db\"\n",
        redis.url()
    );
    let registry = Registry::builder()
        .config_toml(&toml)
        .unwrap()
        .try_build()
        .unwrap();
    let orders = registry
        .bulkhead_policy("orders", "test", &BulkheadConfig::builder())
        .unwrap();
    let snapshot = registry.snapshot();
    assert_eq!(snapshot.fleets().len(), 1);
    assert_eq!(snapshot.fleets()[0].lease, LEASE);
    assert_eq!(registry.resource_usage("cache"), Some((4, 0)));
    wait_for(Duration::from_secs(4), || orders.max_concurrent() == 6).expect("its share");
    // A reload that changes the fleet is listed, not applied.
    let changed = toml.replace("prefix = \"toml\"", "prefix = \"other\"");
    let changes = registry.reload_toml(&changed).unwrap();
    assert!(
        changes
            .iter()
            .any(|c| c.policy == "resource" && c.instance == "db" && !c.applied),
        "{changes:?}"
    );
    // A bad key is named with its full key.
    let bad = Registry::builder().config_toml("[resources.db]\nbudget = 1\nleese = \"1s\"\n");
    let error = bad.unwrap_err();
    assert_eq!(error.code(), "CFG-001");
    assert!(error.to_string().contains("resources.db.leese"), "{error}");
    let bad = Registry::builder().config_toml("[resources.db]\nbudget = 1\nfleet = \"http://x\"\n");
    assert_eq!(bad.unwrap_err().code(), "REG-014");
}

#[test]
fn a_fleet_resource_is_declared_in_environment_variables() {
    let redis = RedisServer::start();
    let url = redis.url();
    let vars = [
        ("BULKHEAD_RESOURCES__DB__BUDGET", "10"),
        ("BULKHEAD_RESOURCES__DB__FLEET", url.as_str()),
        ("BULKHEAD_RESOURCES__DB__PREFIX", "env"),
        ("BULKHEAD_RESOURCES__DB__LEASE", "400ms"),
        ("BULKHEAD_RESOURCES__DB__ON_UNREACHABLE", "closed"),
    ];
    let registry = Registry::builder()
        .config_vars("BULKHEAD_", vars)
        .unwrap()
        .try_build()
        .unwrap();
    let lease = Duration::from_millis(400);
    let (fleet, bulkhead) = member(config(&redis, "env").lease(lease), "env-b", 10);
    let orders = registry
        .bulkhead_policy(
            "env-a",
            "test",
            &BulkheadConfig::builder().max_concurrent(10).resource("db"),
        )
        .unwrap();
    // Same Redis, prefix, lease and fallback: one fleet of two.
    let split = wait_for(Duration::from_secs(4), || {
        orders.max_concurrent() == 5 && bulkhead.max_concurrent() == 5
    });
    assert!(split.is_some(), "{:?}", registry.snapshot().fleets());
    assert_eq!(fleet.snapshot().fleets()[0].processes, 2);
    // A variable overrides one key of a TOML resource.
    let toml = format!(
        "[resources.db]\nbudget = 10\nfleet = \"{url}\"\nprefix = \"toml\"\nlease = \"1s\"\n"
    );
    let registry = Registry::builder()
        .config_toml(&toml)
        .unwrap()
        .config_vars("BULKHEAD_", [("BULKHEAD_RESOURCES__DB__LEASE", "2s")])
        .unwrap()
        .try_build()
        .unwrap();
    assert_eq!(
        registry.snapshot().fleets()[0].lease,
        Duration::from_secs(2)
    );
    let bad = Registry::builder()
        .config_vars("BULKHEAD_", [("BULKHEAD_RESOURCES__DB__FLEET", "http://x")]);
    assert_eq!(bad.unwrap_err().code(), "REG-014");
}

#[test]
fn every_bad_fleet_value_in_configuration_is_reg_014_naming_its_key_or_variable() {
    let url = "redis://127.0.0.1:6379/0";
    let toml = |keys: &str| format!("[resources.db]\nbudget = 3\nfleet = \"{url}\"\n{keys}\n");
    fn refused<T>(loaded: Result<T, RegistryError>, key: &str) -> RegistryError {
        let Err(error) = loaded else {
            panic!("{key}: accepted")
        };
        assert_eq!(error.code(), "REG-014", "{error}");
        assert!(error.to_string().contains(key), "{key}: {error}");
        error
    }
    let error = refused(
        Registry::builder().config_toml(&toml("lease = \"50ms\"")),
        "resources.db.lease",
    );
    assert_eq!(
        error.to_string(),
        "REG-014: invalid fleet configuration: resources.db.lease: lease 50ms is shorter than the minimum 100ms"
    );
    for (keys, key) in [
        ("lease = \"18446744073709551615s\"", "resources.db.lease"),
        ("lease = \"24h 1ms\"", "resources.db.lease"),
        ("margin = \"6s\"", "resources.db.margin"),
        ("margin = \"0\"", "resources.db.margin"),
        ("lease = \"1s\"\nmargin = \"501ms\"", "resources.db.margin"),
        ("prefix = \"a{b\"", "resources.db.prefix"),
        ("prefix = \"\"", "resources.db.prefix"),
    ] {
        refused(Registry::builder().config_toml(&toml(keys)), key);
    }
    for bad in ["redis+sentinel://h", "http://h"] {
        let text = format!("[resources.db]\nbudget = 3\nfleet = \"{bad}\"\n");
        refused(Registry::builder().config_toml(&text), "resources.db.fleet");
    }
    let text = format!("[resources.\"d{{b\"]\nbudget = 3\nfleet = \"{url}\"\n");
    refused(
        Registry::builder().config_toml(&text),
        "resources.d{b.fleet",
    );
    // Variables are named as other variables' errors name them.
    for vars in [
        vec![
            ("BULKHEAD_RESOURCES__DB__BUDGET", "3"),
            ("BULKHEAD_RESOURCES__DB__FLEET", "redis+cluster://x/0"),
        ],
        vec![("BULKHEAD_RESOURCES__DB__FLEET", "redis+cluster://x/0")],
    ] {
        refused(
            Registry::builder().config_vars("BULKHEAD_", vars),
            "BULKHEAD_RESOURCES__DB__FLEET",
        );
    }
    refused(
        Registry::builder().config_vars(
            "BULKHEAD_",
            [
                ("BULKHEAD_RESOURCES__DB__BUDGET", "3"),
                ("BULKHEAD_RESOURCES__DB__FLEET", url),
                ("BULKHEAD_RESOURCES__DB__LEASE", "48h"),
            ],
        ),
        "BULKHEAD_RESOURCES__DB__LEASE",
    );
    refused(
        Registry::builder()
            .config_toml(&toml(""))
            .unwrap()
            .config_vars("BULKHEAD_", [("BULKHEAD_RESOURCES__DB__PREFIX", "a}b")]),
        "BULKHEAD_RESOURCES__DB__PREFIX",
    );
    // A reload names the key too, and changes nothing.
    let registry = Registry::new();
    refused(
        registry.reload_toml(&toml("margin = \"0\"")),
        "resources.db.margin",
    );
    assert!(registry.snapshot().fleets().is_empty());
    // A lease of a day is the longest, and fine.
    assert!(
        Registry::builder()
            .config_toml(&toml("lease = \"24h\""))
            .is_ok()
    );
}

#[test]
fn a_reload_lists_a_fleet_removed_as_not_applied_and_joins_a_fleet_added() {
    let redis = RedisServer::start();
    let fleet = |prefix: &str| {
        format!(
            "[resources.db]\nbudget = 10\nfleet = \"{}\"\nprefix = \"{prefix}\"\nlease = \"1s\"\non_unreachable = \"closed\"\n\n\
             [bulkhead.instances.orders]\nmax_concurrent = 6\nresource = \"db\"\n",
            redis.url()
        )
    };
    let local = "[resources.db]\nbudget = 8\n\n[bulkhead.instances.orders]\nmax_concurrent = 6\nresource = \"db\"\n";
    let declare = |toml: &str| {
        let registry = Registry::builder()
            .config_toml(toml)
            .unwrap()
            .try_build()
            .unwrap();
        let orders = registry
            .bulkhead_policy("orders", "test", &BulkheadConfig::builder())
            .unwrap();
        (registry, orders)
    };

    // In a fleet, a reload without `fleet`: listed, not applied (again
    // at every reload while it differs); the budget applies.
    let (registry, orders) = declare(&fleet("removed"));
    wait_for(Duration::from_secs(4), || orders.max_concurrent() == 6).expect("its share");
    for _ in 0..2 {
        let changes = registry.reload_toml(local).unwrap();
        assert_eq!(changes.len(), 1, "{changes:?}");
        let change = &changes[0];
        assert_eq!(
            (change.policy, change.instance.as_str(), change.to.as_str()),
            ("resource", "db", "no fleet")
        );
        assert!(!change.applied);
        assert!(change.from.contains("prefix: \"removed\""), "{change:?}");
    }
    assert_eq!(share(&registry).1, FleetState::Joined, "still in the fleet");
    assert_eq!(registry.resource_usage("db"), Some((8, 6)));

    // A local resource given a fleet joins it: listed, applied.
    let (registry, orders) = declare(local);
    assert!(registry.snapshot().fleets().is_empty());
    assert_eq!(orders.max_concurrent(), 6);
    let changes = registry.reload_toml(&fleet("added")).unwrap();
    assert_eq!(changes.len(), 1, "{changes:?}");
    let change = &changes[0];
    assert_eq!(
        (
            change.policy,
            change.instance.as_str(),
            change.from.as_str()
        ),
        ("resource", "db", "no fleet")
    );
    assert!(change.applied);
    assert!(change.to.contains("prefix: \"added\""), "{change:?}");
    let joined = wait_for(Duration::from_secs(4), || {
        share(&registry) == (6, FleetState::Joined) && orders.max_concurrent() == 6
    });
    assert!(joined.is_some(), "{:?}", registry.snapshot().fleets());
    assert_eq!(registry.snapshot().fleets()[0].bulkheads, ["orders"]);
    assert!(registry.reload_toml(&fleet("added")).unwrap().is_empty());
}
