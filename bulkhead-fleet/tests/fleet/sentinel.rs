//! Issue 35's proof on Sentinel: a primary, a replica and three Sentinels
//! (quorum 2, `down-after` 1 s, `failover-timeout` 3 s); three worker
//! processes on `redis+sentinel://..` share one fleet resource (budget
//! 12, lease 2 s), each busy with the whole budget, while the primary is
//! SIGKILLed, restarted empty at its address, or demoted by `SENTINEL
//! FAILOVER`. The loopback database, outside the library and outside
//! Redis, counts the calls in flight across the processes: never more than
//! the budget. Each test prints a `REPORT` line with its times, from the
//! kill (or the failover's start): the replica promoted, `+switch-master`,
//! every worker renewed on the new primary, the service back.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::{
    Killed, RedisServer, SentinelSet, Service, binary, serial, wait_for, wait_role,
};
use crate::workers::Fleet;

/// The numbers.
pub(crate) const BUDGET: u32 = 12;
pub(crate) const LEASE: Duration = Duration::from_secs(2);
pub(crate) const WORKERS: [&str; 3] = ["w1", "w2", "w3"];
/// For a loaded 2-core machine, on top of the protocol's bounds.
pub(crate) const SLACK: Duration = Duration::from_millis(500);

/// `t` in ms after `t0`.
pub(crate) fn ms(t0: Instant, t: Instant) -> u128 {
    t.saturating_duration_since(t0).as_millis()
}

/// The failovers among the `+switch-master` messages `switches` after the
/// one that made the node on `new` the primary, announced at `switched`:
/// the payloads (`<master> <old ip> <old port> <new ip> <new port>`) of
/// the switches away from `new`. Not the other Sentinels' announcements
/// of the switch to `new`, however late they come.
pub(crate) fn failovers_after(
    switches: &[(Instant, String)],
    switched: Instant,
    new: u16,
) -> Vec<String> {
    let new = new.to_string();
    switches
        .iter()
        .filter(|(at, payload)| {
            *at >= switched && payload.split_whitespace().nth(2) == Some(new.as_str())
        })
        .map(|(_, payload)| payload.clone())
        .collect()
}

/// Each Sentinel announces a failover: the others within a millisecond of
/// the first here, but one that was not scheduled for a second (SIGSTOP
/// for a second after the kill: measured, its message came 1007 ms after
/// the others') or whose message this process read late announces the
/// same switch later. That is not a second failover; one away from the
/// new primary is, however soon it comes.
#[test]
fn a_late_announcement_of_the_same_switch_is_not_a_second_failover() {
    let t0 = Instant::now();
    let at = |ms| t0 + Duration::from_millis(ms);
    let first = |ms| (at(ms), "mymaster 127.0.0.1 6380 127.0.0.1 6381".to_owned());
    let back = (
        at(1300),
        "mymaster 127.0.0.1 6381 127.0.0.1 6380".to_owned(),
    );
    let switches = [first(0), first(1), first(1007)];
    assert_eq!(
        failovers_after(&switches, at(0), 6381),
        Vec::<String>::new()
    );
    let switches = [first(0), first(1), first(1007), back.clone()];
    assert_eq!(failovers_after(&switches, at(0), 6381), vec![back.1]);
}

/// Three workers, each busy with the whole budget, on `fleet`, once they
/// hold their shares; `binary` runs the fleet's own (idle) server.
pub(crate) fn start_fleet(
    name: &str,
    on_unreachable: &str,
    binary: &Path,
    fleet: String,
    lease: Duration,
) -> Fleet {
    let mut fleet = Fleet::on(name, on_unreachable, RedisServer::start_with(binary, &[]))
        .topology(fleet, BUDGET, lease);
    for worker in WORKERS {
        fleet.spawn(worker, BUDGET);
    }
    fleet.converge(
        &format!("[{name}] cold start: 3 workers busy with the whole budget"),
        3 * lease + Duration::from_secs(5),
    );
    fleet
}

/// The service's outages that ended after `since`: the end of the last
/// one (`None` if it never stopped) and all of them in ms after `since`
/// (for the report); fails if it is still out.
pub(crate) fn service_back(service: &Service, since: Instant) -> (Option<Instant>, String) {
    let outages = service.outages_after(since);
    assert!(
        outages.iter().all(|(_, end)| end.is_some()),
        "the service is still out: {outages:?}"
    );
    let text: Vec<String> = outages
        .iter()
        .map(|(start, end)| {
            format!(
                "{}-{} ms",
                ms(since, *start),
                end.map_or(0, |e| ms(since, e))
            )
        })
        .collect();
    let text = if text.is_empty() {
        "never stopped".to_owned()
    } else {
        format!("out {}", text.join(", "))
    };
    (outages.last().and_then(|(_, end)| *end), text)
}

/// Asserts that `what` (at `at`, if it happened) came within a lease and
/// the slack of `event` (at `from`); the message gives both in ms after
/// the kill.
pub(crate) fn within_a_lease(
    what: &str,
    at: Option<Instant>,
    event: &str,
    from: Instant,
    killed: Instant,
) {
    if let Some(at) = at {
        assert!(
            at <= from + LEASE + SLACK,
            "{what} {} ms after the kill, {event} at {} ms",
            ms(killed, at),
            ms(killed, from)
        );
    }
}

/// The primary SIGKILLed while the workers are busy.
pub(crate) fn kill(binary: &Path, on_unreachable: &str) {
    let _serial = serial();
    let mut set = SentinelSet::start(binary);
    let name = format!("sentinel-kill-{on_unreachable}");
    let fleet = start_fleet(&name, on_unreachable, binary, set.url(), LEASE);
    let service = Service::watch(&fleet.db);
    std::thread::sleep(LEASE);

    let Killed {
        old,
        new,
        at: killed,
        new_clock_ms: before,
    } = set.kill_primary();
    fleet.report(
        &format!("[{name}] primary {old} SIGKILLed"),
        Some(Duration::ZERO),
    );
    let promoted = wait_role(set.node(new), "master", Duration::from_secs(15))
        .expect("the replica was not promoted within 15 s");
    let (switched, message) = set
        .switch_after(killed, Duration::from_secs(15))
        .expect("no +switch-master within 15 s");
    assert!(message.ends_with(&new.to_string()), "{message}");
    fleet.report(
        &format!(
            "[{name}] +switch-master {} ms after the kill: {message}",
            ms(killed, switched)
        ),
        Some(Duration::ZERO),
    );
    let renewed = fleet.until_renewed_on(
        &format!("[{name}] every worker renewed on the new primary {new}"),
        set.node(new),
        before,
    );
    fleet.converge(
        &format!("[{name}] shares back on the new primary"),
        Duration::from_secs(10),
    );
    let converged = Instant::now();
    let (back, outages) = service_back(&service, killed);
    println!(
        "REPORT sentinel kill ({on_unreachable}, {}): promoted {} ms, +switch-master {} ms, \
         every worker renewed on the new primary by {} ms, service {outages}, shares back by {} ms, \
         at most {} calls in flight (budget {BUDGET}, lease {LEASE:?})",
        set.node(new).identity(),
        ms(killed, promoted),
        ms(killed, switched),
        ms(killed, renewed),
        ms(killed, converged),
        fleet.db.max.load(std::sync::atomic::Ordering::Acquire),
    );
    if on_unreachable == "closed" {
        // Service comes back within one lease of the first script on the
        // new primary, which follows the switch (design §3.2).
        within_a_lease("service back", back, "the switch", switched, killed);
    } else {
        // Nobody stuck on its fallback: all joined within a lease of the switch.
        within_a_lease("renewed", Some(renewed), "the switch", switched, killed);
    }
    fleet.report(&format!("[{name}] done"), Some(Duration::ZERO));
}

#[test]
fn sentinel_kill_closed() {
    kill(&binary(), "closed");
}

#[test]
fn sentinel_kill_default() {
    kill(&binary(), "even_share");
}

/// The old primary restarted empty at its address half a second after the
/// switch: it says `role:master` until the Sentinels demote it (their INFO
/// period, about 10 s). No worker runs a script on it meanwhile.
#[test]
fn restarted_empty_old_primary_is_never_trusted() {
    let _serial = serial();
    let name = "sentinel-restarted";
    let started = Instant::now();
    let mut set = SentinelSet::start(&binary());
    let fleet = start_fleet(name, "closed", &binary(), set.url(), LEASE);
    std::thread::sleep(LEASE);
    let Killed {
        old,
        new,
        at: killed,
        new_clock_ms: before,
    } = set.kill_primary();
    let (switched, _) = set
        .switch_after(killed, Duration::from_secs(15))
        .expect("no +switch-master within 15 s");
    // One failover only. With `down-after` at 1 s, a CI machine that did
    // not schedule the new primary (or a Sentinel) for a second once made
    // the Sentinels fail over again, to the only other node: the restarted
    // one, which the workers then rightly followed, and which was never
    // demoted (a clean-clone run at 9fbe2df). That is the Sentinels'
    // decision, not a split brain, and not what this test is about.
    set.set_down_after(Duration::from_secs(60));
    std::thread::sleep((switched + SLACK).saturating_duration_since(Instant::now()));
    set.node_mut(old).restart_empty();
    let restarted = Instant::now();
    fleet.report(
        &format!(
            "[{name}] old primary {old} restarted empty {} ms after the switch",
            ms(switched, restarted)
        ),
        Some(Duration::ZERO),
    );
    // What it ran while it said role:master (read before the role, so a
    // reading taken after its demotion, once it holds the new primary's
    // data, is never counted).
    let (mut calls, mut meta) = ((0, 0), 0);
    let mut readings = 0;
    let demoted = wait_for(Duration::from_secs(15), || {
        let node = set.node(old);
        let (now_calls, now_meta): ((u64, u64), u64) = (
            node.script_calls(),
            node.try_cmd(&["EXISTS", "bulkhead:{proof:db}:meta"])
                .unwrap_or(0),
        );
        if node.role().as_deref() != Some("master") {
            return true;
        }
        (calls, meta) = (now_calls, now_meta);
        readings += 1;
        false
    });
    fleet.report(
        &format!(
            "[{name}] old primary demoted {} after its restart",
            demoted.map_or("NOT within 15 s".to_owned(), |d| format!(
                "{} ms",
                d.as_millis()
            ))
        ),
        Some(Duration::ZERO),
    );
    let demoted_late =
        demoted.is_some() || wait_role(set.node(old), "slave", Duration::from_secs(5)).is_some();
    let again = failovers_after(&set.switches(), switched, new);
    let diagnosis = || set.diagnosis(started);
    assert!(
        again.is_empty(),
        "the Sentinels failed over again after the first switch ({again:?}): this test needs one \
         failover\n{}",
        diagnosis()
    );
    assert!(
        readings > 0,
        "the restarted node was never read as a primary\n{}",
        diagnosis()
    );
    assert_eq!(
        calls,
        (0, 0),
        "the restarted empty old primary ran (EVALSHA, EVAL) scripts while the Sentinels named \
         {new}\n{}",
        diagnosis()
    );
    assert_eq!(
        meta,
        0,
        "the restarted empty old primary holds the fleet's meta\n{}",
        diagnosis()
    );
    assert!(
        demoted_late,
        "the Sentinels never demoted the restarted old primary\n{}",
        diagnosis()
    );
    fleet.until(
        &format!("[{name}] every worker renewed on the new primary {new}"),
        Duration::from_secs(5),
        |seen| fleet.renewed_on(seen, set.node(new), before),
    );
    fleet.converge(
        &format!("[{name}] shares on the new primary"),
        Duration::from_secs(10),
    );
    println!(
        "REPORT sentinel restarted empty old primary ({}): +switch-master {} ms after the kill, \
         restarted {} ms, demoted {} ms, {readings} readings of it as a primary, no script ran on it",
        set.node(new).identity(),
        ms(killed, switched),
        ms(killed, restarted),
        demoted.map_or("-".to_owned(), |d| ms(killed, restarted + d).to_string()),
    );
}

/// `SENTINEL FAILOVER`: the primary, alive, is demoted to a replica (its
/// writes answer `READONLY`) and the replica promoted. The workers follow
/// and then stop failing.
#[test]
fn demoted_primary_readonly_is_followed() {
    let _serial = serial();
    let name = "sentinel-failover";
    let set = SentinelSet::start(&binary());
    let fleet = start_fleet(name, "closed", &binary(), set.url(), LEASE);
    std::thread::sleep(LEASE);
    let old = set.primary().expect("the Sentinels agree on a primary");
    let new = set.other(old).port;
    let started = Instant::now();
    let _: () = set.cmd(
        set.sentinels[0].port,
        &["SENTINEL", "FAILOVER", crate::support::MASTER],
    );
    let promoted = wait_role(set.node(new), "master", Duration::from_secs(15))
        .expect("the replica was not promoted within 15 s");
    // Its clock once it no longer replicates the old primary's records.
    let before = set.node(new).now_ms();
    let (switched, _) = set
        .switch_after(started, Duration::from_secs(15))
        .expect("no +switch-master within 15 s");
    let renewed = fleet.until_renewed_on(
        &format!("[{name}] every worker renewed on the new primary {new}"),
        set.node(new),
        before,
    );
    let demoted = wait_role(set.node(old), "slave", Duration::from_secs(15))
        .expect("the old primary was not demoted within 15 s");
    fleet.converge(
        &format!("[{name}] shares on the new primary"),
        Duration::from_secs(10),
    );
    let converged = Instant::now();
    // Following means no more failures: none for 2 s now (a worker stuck
    // on the demoted node fails every lease/12).
    let counts = || -> Vec<u64> {
        let failures = fleet.failures.lock().unwrap();
        crate::sentinel::WORKERS
            .iter()
            .map(|w| failures.get(*w).map_or(0, |f| f.count))
            .collect()
    };
    let settled = counts();
    std::thread::sleep(2 * Duration::from_secs(1));
    assert_eq!(
        counts(),
        settled,
        "the workers still fail after following the new primary: {:?}",
        fleet.failures.lock().unwrap()
    );
    for (worker, failures) in fleet.failures.lock().unwrap().iter() {
        println!(
            "    {worker}: {} failures, the last: {}",
            failures.count, failures.last_error
        );
    }
    fleet.report(
        &format!("[{name}] done, failures {settled:?}"),
        Some(Duration::ZERO),
    );
    assert!(
        renewed <= switched + LEASE + SLACK,
        "renewed on the new primary {} ms after the failover started, the switch at {} ms",
        ms(started, renewed),
        ms(started, switched)
    );
    println!(
        "REPORT sentinel SENTINEL FAILOVER ({}): promoted {} ms, +switch-master {} ms, \
         every worker renewed on the new primary by {} ms, old primary demoted {} ms, \
         shares back by {} ms, failures per worker {settled:?}",
        set.node(new).identity(),
        ms(started, promoted),
        ms(started, switched),
        ms(started, renewed),
        ms(started, demoted),
        ms(started, converged),
    );
}

/// With a lease longer than the failover (10 s), the SIGKILL of the
/// primary costs no call: every worker keeps its share, rejoins the new
/// primary with a valid lease, and the sessions never stop for 0.5 s.
#[test]
fn sentinel_long_lease_no_outage() {
    let _serial = serial();
    let name = "sentinel-long-lease";
    let lease = Duration::from_secs(10);
    let mut set = SentinelSet::start(&binary());
    let fleet = start_fleet(name, "closed", &binary(), set.url(), lease);
    let service = Service::watch(&fleet.db);
    std::thread::sleep(Duration::from_secs(1));
    fleet
        .fell_back
        .store(false, std::sync::atomic::Ordering::Release);
    let Killed {
        old: _,
        new,
        at: killed,
        new_clock_ms: before,
    } = set.kill_primary();
    let (switched, _) = set
        .switch_after(killed, Duration::from_secs(15))
        .expect("no +switch-master within 15 s");
    // A renewal on the new primary: its record expires a lease after the
    // kill (a renewal period is lease/3).
    let renewed = fleet.until_renewed_on(
        &format!("[{name}] every worker renewed on the new primary {new}"),
        set.node(new),
        before,
    );
    let outages = service.outages_after(killed);
    println!(
        "REPORT sentinel kill with a 10 s lease ({}): +switch-master {} ms, every worker renewed \
         on the new primary by {} ms, outages of the service {:?}",
        set.node(new).identity(),
        ms(killed, switched),
        ms(killed, renewed),
        outages
            .iter()
            .map(|(s, e)| (ms(killed, *s), e.map(|e| ms(killed, e))))
            .collect::<Vec<_>>()
    );
    assert!(
        !fleet.fell_back.load(std::sync::atomic::Ordering::Acquire),
        "a worker left `joined` during the failover: {:?}",
        fleet.seen.lock().unwrap()
    );
    assert!(
        outages
            .iter()
            .all(|(s, e)| e.is_some_and(|e| e - *s < SLACK)),
        "the service stopped for 0.5 s or more: {outages:?}"
    );
    fleet.report(&format!("[{name}] done"), Some(Duration::ZERO));
}
