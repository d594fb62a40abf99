//! Issue 35's proof on Redis Cluster: three primaries with a replica each
//! (`cluster-node-timeout` 1 s), three worker processes on
//! `redis+cluster://..` sharing one fleet resource (budget 12, lease 2 s,
//! `closed`), each busy with the whole budget; the primary of the
//! resource's slot (`CLUSTER KEYSLOT bulkhead:{proof:db}:meta`) is
//! SIGKILLed. The loopback database counts the calls in flight across the
//! processes: never more than the budget. A `REPORT` line gives the times
//! from the kill: the replica promoted, every worker renewed on it, the
//! service back. And the slot moved to another primary (`cluster_moved`).

use std::path::Path;
use std::sync::atomic::Ordering::{Acquire, Release};
use std::time::{Duration, Instant};

use crate::sentinel::{BUDGET, LEASE, WORKERS, ms, service_back, start_fleet, within_a_lease};
use crate::support::{ClusterSet, Service, binary, serial, wait_role};

pub(crate) const META: &str = "bulkhead:{proof:db}:meta";

pub(crate) fn slot_failover(binary: &Path) {
    let _serial = serial();
    let mut set = ClusterSet::start(binary);
    let name = "cluster-failover";
    let fleet = start_fleet(name, "closed", binary, set.url(), LEASE);
    let service = Service::watch(&fleet.db);
    std::thread::sleep(LEASE);
    let (primary, replica) = set.slot_nodes(META);
    let (_, _, killed) = set.kill_slot_primary(META);
    // The replica's clock once nothing replicates to it any more: a record
    // there that expires more than a lease later was renewed there.
    let before = set.node(replica).now_ms();
    fleet.report(
        &format!("[{name}] primary {primary} of the resource's slot SIGKILLed"),
        Some(Duration::ZERO),
    );
    let promoted = wait_role(set.node(replica), "master", Duration::from_secs(15))
        .expect("the replica was not promoted within 15 s");
    fleet.report(
        &format!(
            "[{name}] replica {replica} promoted {} ms after the kill",
            ms(killed, promoted)
        ),
        Some(Duration::ZERO),
    );
    let renewed = fleet.until_renewed_on(
        &format!("[{name}] every worker renewed on the promoted replica {replica}"),
        set.node(replica),
        before,
    );
    fleet.converge(
        &format!("[{name}] shares back on the promoted replica"),
        Duration::from_secs(10),
    );
    let converged = Instant::now();
    let (back, outages) = service_back(&service, killed);
    let (evalsha, eval) = set.node(replica).script_calls();
    println!(
        "REPORT cluster slot failover ({}): promoted {} ms, every worker renewed on it by {} ms, \
         service {outages}, shares back by {} ms, scripts on it: {evalsha} EVALSHA, {eval} EVAL; \
         at most {} calls in flight (budget {BUDGET}, lease {LEASE:?})",
        set.node(replica).identity(),
        ms(killed, promoted),
        ms(killed, renewed),
        ms(killed, converged),
        fleet.db.max.load(Acquire),
    );
    assert!(evalsha + eval > 0, "no script ran on the promoted replica");
    within_a_lease("service back", back, "the promotion", promoted, killed);
    fleet.report(&format!("[{name}] done"), Some(Duration::ZERO));
}

#[test]
fn cluster_slot_failover() {
    slot_failover(&binary());
}

/// The resource's slot moved to another primary while the workers are
/// busy: they follow `ASK` (or `TRYAGAIN`) during the move and `MOVED`
/// after it, and the fleet's records move with it (the same epoch).
#[test]
fn cluster_moved() {
    let _serial = serial();
    let set = ClusterSet::start(&binary());
    let name = "cluster-moved";
    let fleet = start_fleet(name, "closed", &binary(), set.url(), LEASE);
    std::thread::sleep(LEASE / 2);
    let (source, _) = set.slot_nodes(META);
    let epoch: String = set.node(source).cmd(&["HGET", META, "epoch"]);
    fleet.fell_back.store(false, Release);
    let failures = || -> Vec<u64> {
        let failures = fleet.failures.lock().unwrap();
        WORKERS
            .iter()
            .map(|w| failures.get(*w).map_or(0, |f| f.count))
            .collect()
    };
    let failed_before = failures();
    let started = Instant::now();
    let (_, target) = set.migrate_slot(META, Duration::from_millis(500));
    let moved = Instant::now();
    // Its clock once the slot is its own: a record there that expires more
    // than a lease later was renewed there.
    let before = set.node(target).now_ms();
    fleet.report(
        &format!(
            "[{name}] slot moved from {source} to {target} in {} ms",
            ms(started, moved)
        ),
        Some(Duration::ZERO),
    );
    let renewed = fleet.until_renewed_on(
        &format!("[{name}] every worker renewed on the new owner {target}"),
        set.node(target),
        before,
    );
    fleet.converge(&format!("[{name}] shares kept"), Duration::from_secs(10));
    let after: String = set.node(target).cmd(&["HGET", META, "epoch"]);
    let stats: String = set.node(target).cmd(&["INFO", "commandstats"]);
    let asking = stats
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_asking:calls="))
        .and_then(|l| l.split(',').next())
        .unwrap_or("0")
        .to_owned();
    println!(
        "REPORT cluster slot moved ({}): moved in {} ms, every worker renewed on the new owner \
         by {} ms after the move ({asking} ASKING on it), a worker fell back: {}",
        set.node(target).identity(),
        ms(started, moved),
        ms(moved, renewed),
        fleet.fell_back.load(Acquire),
    );
    assert_eq!(
        after, epoch,
        "the fleet's records did not move with the slot"
    );
    assert_eq!(
        failures(),
        failed_before,
        "a request failed while the slot moved: {:?}",
        fleet.failures.lock().unwrap()
    );
    fleet.report(&format!("[{name}] done"), Some(Duration::ZERO));
}
