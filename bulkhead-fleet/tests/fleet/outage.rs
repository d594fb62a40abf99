//! Redis lost by the whole fleet at once, with every `on_unreachable`:
//! three worker processes, one busy with most of the budget and two idle,
//! Redis killed just after the busy one renewed (so the idle ones' leases
//! run out first), then the idle ones get busy. The loopback database,
//! outside the library and outside Redis, counts the calls in flight
//! across the processes: never more than the budget.
//!
//! A process falls back first to its fallback or its last grant, whichever
//! is smaller, and to its whole fallback only once no grant made before
//! the loss can be in use (its first failure plus a lease and the margin);
//! the fallbacks, shared out by Redis beforehand, add up to the budget.
//! Then Redis comes back empty, and (with `even_share`) stops again for
//! 2.5 leases and comes back with its data: the processes, back one by
//! one, find every grant held for a lease while the others may still be on
//! their fallbacks.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::workers::{BUDGET, Fleet, LEASE};

/// The records' expiries on Redis's clock (ms), by process id.
fn expiries(con: &mut redis::Connection) -> BTreeMap<String, u64> {
    let records: BTreeMap<String, String> = redis::cmd("HGETALL")
        .arg("bulkhead:{proof:db}:procs")
        .query(con)
        .unwrap_or_default();
    records
        .into_iter()
        .filter_map(|(pid, record)| Some((pid, record.split(':').nth(3)?.parse().ok()?)))
        .collect()
}

/// Kills Redis just after `busy` renewed, at a moment when neither of the
/// `idle` workers renewed in the `lead` before: their deadlines then come
/// at least `lead` before the busy one's. If their renewals keep coming
/// too close to the busy one's, a change of their demand moves them.
/// Returns the lead it got (or the best seen, after 12 s).
fn kill_redis_after_a_renewal_of(fleet: &mut Fleet, busy: &str, idle: [&str; 2]) -> u64 {
    const LEAD: u64 = 150;
    let pid = |name: &str| fleet.seen.lock().unwrap()[name].pid.clone();
    let (busy_pid, idle_pids) = (pid(busy), idle.map(pid));
    let mut con = fleet.redis.connection();
    let start = Instant::now();
    let mut nudged = Instant::now();
    let mut tasks = 1;
    let mut best = 0;
    loop {
        let exp = expiries(&mut con);
        let lead = idle_pids
            .iter()
            .map(|p| exp[&busy_pid].saturating_sub(exp[p]))
            .min()
            .unwrap_or(0);
        best = best.max(lead);
        if lead >= LEAD || start.elapsed() > Duration::from_secs(12) {
            fleet.redis.kill();
            return lead;
        }
        if nudged.elapsed() > Duration::from_millis(1500) {
            tasks = 3 - tasks;
            for name in idle {
                fleet.order(name, &format!("tasks {tasks}"));
            }
            nudged = Instant::now();
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn whole_fleet_loses_redis(on_unreachable: &str) {
    let mut fleet = Fleet::new(&format!("outage-{on_unreachable}"), on_unreachable);
    fleet.hold_ms = 20;
    fleet.spawn("busy", BUDGET);
    fleet.spawn("idle1", 1);
    fleet.spawn("idle2", 1);
    fleet.converge("cold start: one busy, two idle", 6 * LEASE);
    let before = fleet.seen.lock().unwrap().clone();
    let fallbacks: u32 = before.values().map(|s| s.fallback).sum();
    assert!(fallbacks <= BUDGET, "{before:?}");
    let lead = kill_redis_after_a_renewal_of(&mut fleet, "busy", ["idle1", "idle2"]);
    let killed = Instant::now();
    println!("    [{on_unreachable}] Redis killed {lead} ms after the idle ones' last renewal");
    for name in ["idle1", "idle2"] {
        fleet.order(name, &format!("tasks {BUDGET}"));
    }
    // Each falls back, then rises to its whole fallback once no grant made
    // before the loss can be in use anywhere.
    let fallback = |name: &str| before[name].fallback;
    // (The lease's unit tests check when; this checks that it comes, and
    // the database that nothing overlapped meanwhile.)
    fleet.until(
        &format!("[{on_unreachable}] Redis killed: every worker on its whole fallback"),
        6 * LEASE,
        |seen| {
            ["busy", "idle1", "idle2"]
                .iter()
                .all(|w| seen[*w].state == "unreachable" && seen[*w].share == fallback(w))
        },
    );
    std::thread::sleep(LEASE / 2);
    fleet.report(
        &format!("[{on_unreachable}] {:?} after the kill", killed.elapsed()),
        Some(Duration::ZERO),
    );
    fleet.redis.restart();
    fleet.converge(
        &format!("[{on_unreachable}] Redis restarted empty: shares rebuilt"),
        8 * LEASE,
    );
    if on_unreachable != "even_share" {
        return;
    }
    // Redis stopped for longer than a lease and back with its data (saved
    // on shutdown, loaded on start): the processes come back one by one,
    // on their fallbacks meanwhile, and the leases Redis has ran out while
    // nobody reached it. The first to come back gets no more than it owns
    // while the others may still be on their fallbacks.
    const META: &str = "bulkhead:{proof:db}:meta";
    let epoch: String = fleet.redis.cmd(&["HGET", META, "epoch"]);
    let mut con = fleet.redis.connection();
    let _ = redis::cmd("SHUTDOWN").arg("SAVE").query::<()>(&mut con);
    fleet.redis.kill();
    std::thread::sleep(5 * LEASE / 2);
    fleet.redis.restart();
    fleet.converge(
        &format!("[{on_unreachable}] Redis back with its data after 2.5 leases: shares rebuilt"),
        8 * LEASE,
    );
    let after: String = fleet.redis.cmd(&["HGET", META, "epoch"]);
    assert_eq!(after, epoch, "Redis came back with its data");
}

/// The three settings side by side (each spends its time waiting for
/// leases to run out). A failure names its setting (the thread's name).
#[test]
fn the_whole_fleet_losing_redis_stays_within_the_budget_with_every_on_unreachable() {
    let running: Vec<_> = ["even_share", "6", "closed"]
        .into_iter()
        .map(|setting| {
            let thread = std::thread::Builder::new().name(format!("on_unreachable = {setting}"));
            (
                setting,
                thread
                    .spawn(move || whole_fleet_loses_redis(setting))
                    .unwrap(),
            )
        })
        .collect();
    let failed: Vec<&str> = running
        .into_iter()
        .filter_map(|(setting, thread)| thread.join().is_err().then_some(setting))
        .collect();
    assert!(failed.is_empty(), "failed: {failed:?}");
}
