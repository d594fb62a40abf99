//! Issue 35's proof on Redis Cluster: three primaries with a replica each
//! (`cluster-node-timeout` 1 s), three worker processes on
//! `redis+cluster://..` sharing one fleet resource (budget 12, lease 2 s,
//! `closed`), each busy with the whole budget; the primary of the
//! resource's slot (`CLUSTER KEYSLOT bulkhead:{proof:db}:meta`) is
//! SIGKILLed. The loopback database counts the calls in flight across the
//! processes: never more than the budget. A `REPORT` line gives the times
//! from the kill: the replica promoted, every worker renewed on it, the
//! service back.

use std::path::Path;
use std::sync::atomic::Ordering::Acquire;
use std::time::{Duration, Instant};

use crate::sentinel::{BUDGET, LEASE, SLACK, ms, service_back, start_fleet};
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
    fleet.until(
        &format!("[{name}] every worker renewed on the promoted replica {replica}"),
        Duration::from_secs(10),
        |seen| fleet.renewed_on(seen, set.node(replica), before),
    );
    let renewed = Instant::now();
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
    if let Some(back) = back {
        assert!(
            back <= promoted + LEASE + SLACK,
            "service back {} ms after the kill, the promotion at {} ms",
            ms(killed, back),
            ms(killed, promoted)
        );
    }
    fleet.report(&format!("[{name}] done"), Some(Duration::ZERO));
}

#[test]
fn cluster_slot_failover() {
    slot_failover(&binary());
}
