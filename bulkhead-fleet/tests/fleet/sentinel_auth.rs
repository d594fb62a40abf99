//! Sentinel with AUTH everywhere: the primary and its replica require a
//! password (`requirepass`, `masterauth`), and so do the Sentinels (their
//! own `requirepass`, with `sentinel auth-pass` to watch the nodes). A
//! fleet on `redis+sentinel://:<primary's>@h1,h2,h3/mymaster?sentinel_password=<Sentinels'>`
//! joins and follows a SIGKILL of the primary within its budget
//! (`FleetConfig::sentinel` with `redis://:<password>@host:port` addresses
//! and `primary_auth` joins too), and no password ever shows; a missing or
//! wrong password, the primary's or the Sentinels', says which and shows
//! none.

use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::time::Duration;

use bulkhead_core::BulkheadConfig;
use bulkhead_fleet::{FleetConfig, OnUnreachable};
use bulkhead_registry::Registry;
use bulkhead_registry::fleet::FleetState;

use crate::sentinel::{BUDGET, LEASE, WORKERS, ms, service_back, within_a_lease};
use crate::support::{
    Killed, MASTER, RedisServer, Secure, SentinelSet, Service, binary, encoded, serial, wait_for,
};
use crate::workers::Fleet;

/// The nodes' password: every character with a meaning in a URL's user
/// information, percent-encoded in the URLs.
pub(crate) const PRIMARY_PASSWORD: &str = "Pr1m@ry:p/w?#&%+,;=";
/// The Sentinels' own: every character with a meaning in a query value.
pub(crate) const SENTINEL_PASSWORD: &str = "S3nt!n3l@:/?#&=%+,";

/// Both passwords on every node and Sentinel.
pub(crate) fn passwords() -> Secure {
    Secure {
        password: Some(PRIMARY_PASSWORD.to_owned()),
        sentinel_password: Some(SENTINEL_PASSWORD.to_owned()),
        tls: None,
    }
}

/// Fails if `text` shows any part of a password (their first letters,
/// which percent-encoding keeps, included).
#[track_caller]
pub(crate) fn assert_hidden(what: &str, text: &str) {
    for part in ["Pr1m", "S3nt", "Wr0ng"] {
        assert!(!text.contains(part), "{what} shows a password: {text}");
    }
}

/// Three workers, each busy with the whole budget, on `url` (`closed`,
/// a lease of [`LEASE`]), with environment `env`, once they hold their
/// shares.
pub(crate) fn start_workers(name: &str, url: String, env: Vec<(String, String)>) -> Fleet {
    let mut fleet = Fleet::on(name, "closed", RedisServer::start()).topology(url, BUDGET, LEASE);
    fleet.env = env;
    for worker in WORKERS {
        fleet.spawn(worker, BUDGET);
    }
    fleet.converge(
        &format!("[{name}] cold start: 3 workers busy with the whole budget"),
        3 * LEASE + Duration::from_secs(5),
    );
    fleet
}

/// The Sentinels' primary SIGKILLed under the workers of `fleet`: every
/// worker renews on the promoted replica within a lease of
/// `+switch-master`, the service (calls counted by the database, outside
/// the library) comes back within a lease of it and never exceeds the
/// budget.
pub(crate) fn follow_one_failover(set: &mut SentinelSet, fleet: &Fleet, name: &str) {
    let service = Service::watch(&fleet.db);
    std::thread::sleep(LEASE / 2);
    let sessions = fleet.db.sessions.load(Relaxed);
    let Killed {
        old: _,
        new,
        at: killed,
        new_clock_ms: before,
    } = set.kill_primary();
    let (switched, message) = set
        .switch_after(killed, Duration::from_secs(15))
        .expect("no +switch-master within 15 s");
    assert!(message.ends_with(&new.to_string()), "{message}");
    let renewed = fleet.until_renewed_on(
        &format!("[{name}] every worker renewed on the new primary {new}"),
        set.node(new),
        before,
    );
    fleet.converge(
        &format!("[{name}] shares back on the new primary"),
        Duration::from_secs(10),
    );
    let (back, outages) = service_back(&service, killed);
    println!(
        "REPORT {name} ({}): +switch-master {} ms after the kill, every worker renewed on the \
         new primary by {} ms, service {outages}, at most {} calls in flight (budget {BUDGET})",
        set.node(new).identity(),
        ms(killed, switched),
        ms(killed, renewed),
        fleet.db.max.load(Acquire),
    );
    assert!(
        fleet.db.sessions.load(Relaxed) > sessions,
        "no call went through after the failover"
    );
    within_a_lease("renewed", Some(renewed), "the switch", switched, killed);
    within_a_lease("service back", back, "the switch", switched, killed);
    // Within the budget throughout (`report` checks the database's count).
    fleet.report(&format!("[{name}] done"), Some(Duration::ZERO));
}

/// What the workers printed: no password anywhere; each printed its
/// configuration's `Debug` and its snapshot's `redis` with `***` for each
/// password; the failures of the failover came with a last error (checked
/// with the rest).
pub(crate) fn workers_show_no_password(fleet: &Fleet, sentinel_password: bool) {
    let output = fleet.output.lock().unwrap().clone();
    for line in &output {
        assert_hidden("a worker's output", line);
    }
    for worker in WORKERS {
        let said = |prefix: &str| {
            output
                .iter()
                .find(|l| l.starts_with(&format!("{prefix} {worker} ")))
                .cloned()
                .unwrap_or_else(|| panic!("{worker} printed no {prefix} line: {output:#?}"))
        };
        for line in [said("CONFIG"), said("REDIS")] {
            assert!(line.contains(":***@127.0.0.1:"), "{line}");
            assert_eq!(
                line.contains("sentinel_password=***"),
                sentinel_password,
                "{line}"
            );
        }
    }
    let failures = fleet.failures.lock().unwrap();
    assert!(
        !failures.is_empty(),
        "no worker reported a failed request (and its last error) during the failover"
    );
    for (worker, failures) in failures.iter() {
        println!(
            "    {worker}: {} failures, the last: {}",
            failures.count, failures.last_error
        );
    }
}

#[test]
fn sentinel_auth_joins_and_follows_a_failover() {
    let _serial = serial();
    let name = "sentinel-auth";
    let mut set = SentinelSet::start_secure(&binary(), passwords());
    let url = set.url();
    assert!(url.contains("?sentinel_password=S3nt%21n3l%40%3A%2F%3F%23%26%3D%25%2B%2C"));
    let fleet = start_workers(name, url, Vec::new());
    follow_one_failover(&mut set, &fleet, name);
    workers_show_no_password(&fleet, true);
}

/// A registry on `config` (fleet resource `db`, lease 600 ms, `closed`),
/// once `done` holds of its snapshot or 5 s passed.
fn registry_on(
    config: FleetConfig,
    done: impl Fn(&bulkhead_registry::fleet::FleetSnapshot) -> bool,
) -> Registry {
    let registry = Registry::new();
    let config = config
        .prefix("sentinel-auth")
        .lease(Duration::from_millis(600))
        .on_unreachable(OnUnreachable::Closed);
    registry.fleet_resource("db", 12, config).unwrap();
    wait_for(Duration::from_secs(5), || {
        done(&registry.snapshot().fleets()[0])
    });
    registry
}

/// Everything a registry shows of its fleet: the configuration's `Debug`,
/// the registry's and the snapshot's, the snapshot's `redis` and
/// `last_error`.
fn shown(config: &FleetConfig, registry: &Registry) -> Vec<String> {
    let snapshot = registry.snapshot();
    let fleet = &snapshot.fleets()[0];
    vec![
        format!("{config:?}"),
        config.redis_url(),
        format!("{registry:?}"),
        format!("{snapshot:?}"),
        fleet.redis.clone(),
        fleet.last_error.clone().unwrap_or_default(),
    ]
}

/// The last error of a registry on `url`, once it has one and its share
/// is 0 (it never joined), checked to show no password.
fn refused(what: &str, config: FleetConfig) -> String {
    let registry = registry_on(config.clone(), |f| f.last_error.is_some());
    let fleet = registry.snapshot().fleets()[0].clone();
    for text in shown(&config, &registry) {
        assert_hidden(what, &text);
    }
    assert_eq!(fleet.share, 0, "{what}: {fleet:?}");
    assert_eq!(fleet.renewals, 0, "{what}: {fleet:?}");
    let error = fleet.last_error.unwrap_or_default();
    println!("    {what}: {error}");
    error
}

#[test]
fn sentinel_auth_in_code_and_wrong_passwords_say_which() {
    let _serial = serial();
    let set = SentinelSet::start_secure(&binary(), passwords());
    let sentinel = |password: &str| -> Vec<String> {
        set.sentinels
            .iter()
            .map(|s| format!("redis://:{}@127.0.0.1:{}", encoded(password), s.port))
            .collect()
    };

    // The code form: each Sentinel's AUTH in its address, the primary's
    // with `primary_auth` (as given, not encoded).
    let config = FleetConfig::sentinel(MASTER, sentinel(SENTINEL_PASSWORD))
        .unwrap()
        .primary_auth(None, PRIMARY_PASSWORD);
    let registry = registry_on(config.clone(), |f| {
        f.state == FleetState::Joined && f.renewals >= 2
    });
    // A call: its demand gets it a share.
    let bulkhead = registry
        .bulkhead_policy(
            "call",
            "test",
            &BulkheadConfig::builder()
                .max_concurrent(12)
                .max_wait(Duration::from_secs(5))
                .resource("db"),
        )
        .unwrap();
    let permit = bulkhead.enter();
    assert!(permit.is_ok(), "{:?}", registry.snapshot().fleets());
    let fleet = registry.snapshot().fleets()[0].clone();
    assert_eq!(fleet.state, FleetState::Joined, "{fleet:?}");
    assert!(fleet.share > 0 && fleet.renewals >= 2, "{fleet:?}");
    for text in shown(&config, &registry) {
        assert_hidden("FleetConfig::sentinel", &text);
    }
    assert!(
        fleet.redis.starts_with("redis+sentinel://:***@127.0.0.1:")
            && fleet.redis.ends_with("/mymaster?sentinel_password=***"),
        "{}",
        fleet.redis
    );
    // It ran its scripts on the primary the Sentinels name.
    let primary = set.node(set.primary().unwrap());
    assert!(primary.script_calls() != (0, 0));
    drop(permit);
    registry.leave_fleets();
    drop(registry);

    // The URL form, each password missing or wrong in turn.
    let hosts: Vec<String> = set
        .sentinels
        .iter()
        .map(|s| format!("127.0.0.1:{}", s.port))
        .collect();
    let hosts = hosts.join(",");
    let url = |primary: Option<&str>, sentinels: Option<&str>| {
        let auth = primary.map_or(String::new(), |p| format!(":{}@", encoded(p)));
        let query = sentinels.map_or(String::new(), |p| {
            format!("?sentinel_password={}", encoded(p))
        });
        FleetConfig::redis(&format!("redis+sentinel://{auth}{hosts}/{MASTER}{query}")).unwrap()
    };
    let wrong = "Wr0ng-S3nt!n3l@:/?#&=%+,";

    // The Sentinels' password: missing, then wrong (the primary's right).
    let error = refused("no Sentinel password", url(Some(PRIMARY_PASSWORD), None));
    assert!(
        error.starts_with("no primary: ")
            && error.contains("NOAUTH: the Sentinel requires authentication"),
        "{error}"
    );
    let error = refused(
        "a wrong Sentinel password",
        url(Some(PRIMARY_PASSWORD), Some(wrong)),
    );
    assert!(
        error.starts_with("no primary: ")
            && error.contains("WRONGPASS: the Sentinel refused the user name or password"),
        "{error}"
    );
    // In code, the same.
    let error = refused(
        "a wrong Sentinel password in code",
        FleetConfig::sentinel(MASTER, sentinel(wrong))
            .unwrap()
            .primary_auth(None, PRIMARY_PASSWORD),
    );
    assert!(
        error.contains("WRONGPASS: the Sentinel refused the user name or password"),
        "{error}"
    );

    // The primary's: missing, then wrong (the Sentinels' right).
    let error = refused("no primary password", url(None, Some(SENTINEL_PASSWORD)));
    assert!(
        error.starts_with("NOAUTH: Redis requires authentication")
            && error.contains("give one as redis+sentinel://user:password@"),
        "{error}"
    );
    let error = refused(
        "a wrong primary password",
        url(Some(wrong), Some(SENTINEL_PASSWORD)),
    );
    assert!(error.starts_with("WRONGPASS: "), "{error}");
}
