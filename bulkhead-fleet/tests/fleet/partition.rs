//! One worker process cut from Redis (a TCP proxy between it and Redis,
//! a black hole) or slowed down, while the others still reach Redis: the
//! behaviour the fleet guide documents for `on_unreachable`.
//!
//! - `closed`: the cut worker closes within its lease, the others share
//!   the whole budget, and the database never sees more than the budget;
//! - a number of slots: the cut worker keeps them, the others share the
//!   whole budget, and the database never sees more than the budget plus
//!   that number;
//! - a slow network: a delay within the response timeout changes nothing,
//!   one beyond it is a partition; no call ever waits for Redis.

use std::sync::atomic::Ordering::*;
use std::time::Duration;

use crate::proxy::Proxy;
use crate::workers::{BUDGET, Fleet, LEASE, PERIOD};

const TASKS: u32 = 6;
/// For convergence on a loaded 2-core machine.
const SLACK: Duration = Duration::from_millis(600);

/// Three workers of equal demand, `w1` through a proxy, converged; with
/// `probe`, timing their `try_enter`.
fn three_workers(name: &str, on_unreachable: &str, probe: bool) -> (Fleet, Proxy) {
    let mut fleet = Fleet::new(name, on_unreachable);
    fleet.probe = probe;
    fleet.hold_ms = 20;
    let proxy = Proxy::start(fleet.redis.port);
    fleet.spawn_via("w1", TASKS, &proxy.url());
    fleet.spawn("w2", TASKS);
    fleet.spawn("w3", TASKS);
    fleet.converge("cold start, w1 through the proxy", 5 * LEASE);
    (fleet, proxy)
}

/// Cuts `w1` off: it falls back to `fallback` slots within its lease and
/// the others take the whole budget; then heals. Returns the most
/// sessions the database saw at once while `w1` was cut.
fn cut_and_heal(fleet: &mut Fleet, proxy: &Proxy, fallback: u32) -> u32 {
    let before = fleet.db.max.swap(0, AcqRel);
    proxy.cut();
    let fell = fleet.until("w1 cut from Redis: it falls back", 2 * LEASE, |seen| {
        seen["w1"].share == fallback && seen["w1"].state == "unreachable"
    });
    assert!(
        fell <= LEASE,
        "{fell:?}: the deadline is a lease less the margin"
    );
    let others = |seen: &std::collections::BTreeMap<String, crate::workers::Seen>| {
        ["w2", "w3"]
            .iter()
            .map(|w| (seen[*w].share, seen[*w].state.as_str()))
            .fold((0, true), |(sum, joined), (share, state)| {
                (sum + share, joined && state == "joined")
            })
    };
    let took = fleet.until(
        "the others share the whole budget (w1's lease ran out on Redis)",
        3 * LEASE,
        |seen| others(seen) == (BUDGET, true),
    );
    assert!(took <= LEASE + PERIOD + SLACK, "{took:?}");
    // Hold the partition a while longer: nothing moves.
    std::thread::sleep(LEASE / 2);
    let seen = fleet.seen.lock().unwrap().clone();
    assert_eq!(
        (seen["w1"].share, seen["w1"].state.as_str()),
        (fallback, "unreachable")
    );
    assert_eq!(others(&seen), (BUDGET, true));
    let during = fleet.db.max.swap(before, AcqRel);
    fleet.db.max.fetch_max(during, AcqRel);
    proxy.heal();
    fleet.converge("healed: w1 rejoins, the shares as before", 4 * LEASE);
    println!(
        "    while w1 was cut: at most {during} sessions at once (budget {BUDGET}, w1's fallback {fallback})"
    );
    during
}

/// The three scenarios, side by side: each spends its time waiting for
/// leases to run out, and one after the other they would hold one of the
/// test harness's threads three times as long. A failure names its
/// scenario (the thread's name).
#[test]
fn one_worker_cut_from_redis_or_slowed_down_keeps_the_documented_bound() {
    let scenarios: [(&str, fn()); 3] = [
        (
            "a_worker_cut_from_redis_closes_and_the_fleet_stays_within_its_budget",
            a_worker_cut_from_redis_closes_and_the_fleet_stays_within_its_budget,
        ),
        (
            "a_worker_cut_from_redis_keeps_its_fallback_slots_and_the_fleet_exceeds_its_budget_by_at_most_them",
            a_worker_cut_from_redis_keeps_its_fallback_slots_and_the_fleet_exceeds_its_budget_by_at_most_them,
        ),
        (
            "a_slow_network_to_redis_never_blocks_a_call_and_keeps_the_budget",
            a_slow_network_to_redis_never_blocks_a_call_and_keeps_the_budget,
        ),
    ];
    let running: Vec<_> = scenarios
        .iter()
        .map(|&(name, scenario)| {
            let thread = std::thread::Builder::new().name(name.to_owned());
            (name, thread.spawn(scenario).unwrap())
        })
        .collect();
    let failed: Vec<&str> = running
        .into_iter()
        .filter_map(|(name, thread)| thread.join().is_err().then_some(name))
        .collect();
    assert!(failed.is_empty(), "failed: {failed:?}");
}

fn a_worker_cut_from_redis_closes_and_the_fleet_stays_within_its_budget() {
    let (mut fleet, proxy) = three_workers("cut-closed", "closed", false);
    let during = cut_and_heal(&mut fleet, &proxy, 0);
    assert!(during <= BUDGET, "{during}");
}

fn a_worker_cut_from_redis_keeps_its_fallback_slots_and_the_fleet_exceeds_its_budget_by_at_most_them()
 {
    const SLOTS: u32 = 3;
    let (mut fleet, proxy) = three_workers("cut-slots", &SLOTS.to_string(), false);
    // The documented bound: the budget plus the slots of each process that
    // cannot reach Redis (one here). Checked by every report.
    fleet.bound = BUDGET + SLOTS;
    let during = cut_and_heal(&mut fleet, &proxy, SLOTS);
    assert!(during <= BUDGET + SLOTS, "{during}");
}

fn a_slow_network_to_redis_never_blocks_a_call_and_keeps_the_budget() {
    let (fleet, proxy) = three_workers("slow", "closed", true);
    // Within the response timeout (a tenth of the lease): renewals are
    // slower, the shares stay.
    fleet.fell_back.store(false, Release);
    proxy.set_latency(Duration::from_millis(50));
    std::thread::sleep(LEASE);
    fleet.report(
        "50 ms per request to Redis for a lease (3 renewals)",
        Some(Duration::ZERO),
    );
    assert!(
        !fleet.fell_back.load(Acquire),
        "a delay within the response timeout made w1 fall back: {:?}",
        fleet.seen.lock().unwrap()
    );
    fleet.converge("still converged", LEASE);
    // Beyond it: every request times out, w1 closes as when cut.
    let latency = Duration::from_millis(300);
    proxy.set_latency(latency);
    fleet.until("300 ms per request: w1 closes", 3 * LEASE, |seen| {
        seen["w1"].share == 0 && seen["w1"].state == "unreachable"
    });
    std::thread::sleep(LEASE / 2);
    fleet.report(
        "300 ms per request, half a lease later",
        Some(Duration::ZERO),
    );
    proxy.set_latency(Duration::ZERO);
    fleet.converge("latency gone: w1 rejoins", 4 * LEASE);
    // No call waited for Redis: the workers' probes timed `try_enter`.
    let probes = fleet.probes.lock().unwrap().clone();
    println!("    the longest try_enter per worker, µs: {probes:?}");
    assert_eq!(probes.len(), 3, "{probes:?}");
    for (worker, longest) in probes {
        assert!(
            Duration::from_micros(longest) < latency,
            "{worker}: a try_enter took {longest} µs"
        );
    }
}
