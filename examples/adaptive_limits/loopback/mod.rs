//! `--loopback`: the simulation checked against real time and real sockets
//! (issue 29, item 5).
//!
//! For each scenario named (`--only`; by default `lognormal-0.5` and
//! `slow3x`) fitted to `--seconds` (60 by default: a one-phase scenario is
//! cut to it, the phases of another scaled to it, so `slow3x` is 20 s, then
//! 3x slower for 10 s, then 30 s), at `--capacity` C (20 by default) and
//! `--base-ms` B (100 by default), each limiter (the static limit at C as a
//! control, then our AIMD, Vegas and Gradient2, as the simulation
//! configures them) runs twice on the same arrivals and work:
//!
//! - in the simulation (`simulate.rs`, on a `ManualClock`);
//! - on a loopback: a TCP server on 127.0.0.1 ([`server`]) serves each call
//!   by processor sharing with capacity C on real time, as the simulated
//!   dependency does, and an open-loop client ([`client`]) sends the
//!   simulation's arrivals at their times (tokio's `sleep_until`), each
//!   through the same bulkhead configuration built on the system clock,
//!   over a connection of its own (a pool, opened beforehand).
//!
//! Each run is read by the harness's own reports (goodput, p50, p99 and
//! rejected as the scenario's table prints them: `real.rs`'s `Measure` for
//! a real dependency, `report.rs`'s `analyse` for a uniform one), and its
//! **settled limit** is the mean of the trace (every 100 ms) over the
//! second half of each phase. A limiter passes if the loopback's settled
//! limit is within ±[`LIMIT_WITHIN`] of the simulation's in every phase
//! and its goodput within [`GOODPUT_POINTS`] points.
//!
//! B is the harness's 100 ms: tokio's timer has a 1 ms resolution and a
//! call over the loopback costs about 0.1 ms, both about 1 % of B or less.

mod client;
mod server;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use bulkhead::pipeline::PolicyContext;
use bulkhead::{Adaptive, Bulkhead, ManualClock};

use crate::limiters::{Kind, Limiter};
use crate::report::{analyse, percentile, sorted};
use crate::scenarios::Scenario;
use crate::simulate::{Run, simulate, simulate_with};
use crate::{DEFAULT_MODEL, MODEL, Model, arg, model, real, selected, word};

/// The option that runs the comparison instead of the simulation alone.
pub(crate) const FLAG: &str = "--loopback";
/// The scenarios it runs unless `--only` names others.
const SCENARIOS: [&str; 2] = ["lognormal-0.5", "slow3x"];
/// The limiters: the static limit (a control: its limit does not move, so
/// it shows how close the loopback's dependency is) and ours.
const KINDS: [Kind; 4] = [
    Kind::Static,
    Kind::Ours(Adaptive::Aimd),
    Kind::Ours(Adaptive::Vegas),
    Kind::Ours(Adaptive::Gradient2),
];
/// Simulations of ours with other probe seeds, to show how far the
/// simulation is from itself when only its probes' times change.
const SEEDS: usize = 8;
/// The settled limit on the loopback within this share of the simulation's.
pub(crate) const LIMIT_WITHIN: f64 = 0.15;
/// Goodput on the loopback within this many points of the simulation's.
pub(crate) const GOODPUT_POINTS: f64 = 3.0;

/// What the comparison reads of a run.
#[derive(Clone, Debug)]
pub(crate) struct Figures {
    /// The mean limit over the second half of each phase, in calls.
    pub(crate) settled: Vec<f64>,
    /// As the scenario's table prints it, in %.
    pub(crate) goodput: f64,
    /// Of admitted calls, in base latencies of their time.
    pub(crate) p50: f64,
    pub(crate) p99: f64,
    /// In % of the arrivals.
    pub(crate) rejected: f64,
    /// The no-load latency the last probe measured, in `B` (ours).
    pub(crate) no_load: Option<f64>,
}

impl Figures {
    pub(crate) fn of(scenario: &Scenario, run: &Run) -> Figures {
        let (goodput, p50, p99, rejected) = if scenario.real.is_some() {
            let slo = real::SLO_MULTIPLE * real::no_load_p99(scenario);
            let measure = real::Measure::of(run, slo);
            (
                measure.goodput(),
                measure.p50,
                measure.p99,
                measure.rejected,
            )
        } else {
            let report = analyse(scenario, run);
            (report.goodput, report.p50, report.p99, report.rejected)
        };
        let mut settled = Vec::new();
        let mut start = 0;
        for phase in &scenario.phases {
            let end = start + phase.seconds * 1_000_000_000;
            let half = start + (end - start) / 2;
            let limits: Vec<f64> = run
                .rows
                .iter()
                .filter(|r| r.at >= half && r.at < end)
                .map(|r| f64::from(r.limit))
                .collect();
            settled.push(limits.iter().sum::<f64>() / limits.len().max(1) as f64);
            start = end;
        }
        Figures {
            settled,
            goodput: 100.0 * goodput,
            p50,
            p99,
            rejected: 100.0 * rejected,
            no_load: run.no_load.map(|n| n / model().b),
        }
    }
}

/// The loopback's figures against the simulation's: whether the settled
/// limit (every phase) and the goodput agree.
pub(crate) fn agree(simulated: &Figures, real: &Figures) -> (bool, bool) {
    let limit = simulated
        .settled
        .iter()
        .zip(&real.settled)
        .all(|(s, r)| (r / s - 1.0).abs() <= LIMIT_WITHIN);
    let goodput = (real.goodput - simulated.goodput).abs() <= GOODPUT_POINTS;
    (limit, goodput)
}

/// The simulation of `kind` with its probes timed by another seed (an
/// adaptive bulkhead seeds them with its instance id): the same arrivals,
/// work and configuration.
fn simulate_seeded(scenario: &Scenario, kind: Kind, seed: usize) -> Run {
    let Limiter::Bulkhead { bulkhead, .. } = Limiter::new(kind) else {
        unreachable!("ours are bulkheads");
    };
    let clock = ManualClock::new();
    let context = PolicyContext::new(Arc::new(clock.clone()));
    let instance = format!("{}-{seed}", bulkhead.instance());
    let limiter = Limiter::Bulkhead {
        bulkhead: Bulkhead::with_context(&instance, bulkhead.config(), context),
        clock,
        at: 0,
    };
    simulate_with(scenario, kind, limiter)
}

/// How the simulations of [`SEEDS`] other probe seeds compare with the
/// simulation itself: how many agree with it, and their range of goodput.
fn spread(scenario: &Scenario, kind: Kind, simulated: &Figures) -> String {
    if !kind.ours() {
        return "(no probes)".to_owned();
    }
    let seeded: Vec<Figures> = (1..=SEEDS)
        .map(|seed| Figures::of(scenario, &simulate_seeded(scenario, kind, seed)))
        .collect();
    let agreeing = seeded
        .iter()
        .filter(|f| agree(simulated, f) == (true, true))
        .count();
    let goodput = seeded.iter().map(|f| f.goodput);
    let low = goodput.clone().fold(f64::INFINITY, f64::min);
    let high = goodput.fold(0.0, f64::max);
    format!("{agreeing} of {SEEDS}; {low:.1} - {high:.1} %")
}

/// `scenario` fitted to `seconds`: one phase cut to it, several scaled to
/// it (the last takes what rounding leaves), and no drift measured.
pub(crate) fn fit(mut scenario: Scenario, seconds: u64) -> Scenario {
    let total = scenario.seconds();
    let last = scenario.phases.len() - 1;
    let mut given = 0;
    for (i, phase) in scenario.phases.iter_mut().enumerate() {
        phase.seconds = if i == last {
            seconds.saturating_sub(given).max(1)
        } else {
            (phase.seconds * seconds / total).max(1)
        };
        given += phase.seconds;
    }
    scenario.long = false;
    scenario
}

/// Why the loopback cannot serve `scenario` as the simulation does, if it
/// cannot: its server has one capacity and never pauses, and its client
/// draws no chaos.
fn unsupported(scenario: &Scenario) -> Option<&'static str> {
    let constant = scenario.phases.iter().all(|p| p.capacity == 1.0)
        && (0..scenario.seconds()).all(|s| scenario.capacity_at(s * 1_000_000_000) == 1.0);
    if scenario.chaos.is_some() {
        Some("chaos")
    } else if scenario.next_pause_edge(0) != u64::MAX {
        Some("pauses")
    } else if !constant {
        Some("a capacity that changes")
    } else {
        None
    }
}

/// The phases, as the table's header says them.
fn phases(scenario: &Scenario) -> String {
    scenario
        .phases
        .iter()
        .map(|p| {
            format!(
                "{} s at {:.0} % load{}",
                p.seconds,
                100.0 * p.load,
                if p.slow == 1.0 {
                    String::new()
                } else {
                    format!(", {}x slower", p.slow)
                }
            )
        })
        .collect::<Vec<_>>()
        .join(", then ")
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

/// `--loopback`: every scenario named, every limiter, simulated and on the
/// loopback; the comparison table, then what the loopback's runs cost.
pub(crate) fn main(args: &[String]) {
    MODEL.set(Model {
        c: arg(args, "--capacity").unwrap_or(20.0),
        b: arg(args, "--base-ms").unwrap_or(100.0) / 1000.0,
        ..DEFAULT_MODEL
    });
    let seconds = arg(args, "--seconds").map_or(60, |s| s as u64);
    let names: Vec<&str> =
        word(args, "--only").map_or_else(|| SCENARIOS.to_vec(), |list| list.split(',').collect());
    let scenarios: Vec<Scenario> = selected(true, &names, None)
        .into_iter()
        .map(|s| fit(s, seconds))
        .collect();
    for scenario in &scenarios {
        if let Some(why) = unsupported(scenario) {
            eprintln!("{}: the loopback does not serve {why}", scenario.name);
            std::process::exit(2);
        }
    }
    println!(
        "Loopback: C = {} calls, B = {} ms, {seconds} s per scenario and limiter; settled limit = mean over the second half of each phase (calls); PASS: within ±{:.0} % of the simulation's in every phase, goodput within {GOODPUT_POINTS} points; load average {} at the start\n",
        model().c,
        model().b * 1000.0,
        100.0 * LIMIT_WITHIN,
        load_average(),
    );
    println!(
        "| scenario | limiter | settled limit: sim | loopback | loopback / sim | goodput: sim | loopback | difference | p50 sim / loopback | p99 sim / loopback | rejected sim / loopback | no-load (last probe) sim / loopback | verdict | sim, {SEEDS} other probe seeds: agree with sim; goodput |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut costs = String::new();
    let (mut passed, mut checked) = (0, 0);
    for scenario in &scenarios {
        for kind in KINDS {
            let simulated = Figures::of(scenario, &simulate(scenario, kind));
            let plan = client::arrivals(scenario);
            let server = server::Server::start(model().c).expect("the loopback server");
            let end = scenario.seconds() * 1_000_000_000;
            let loopback = client::run(kind, &plan, end, client::bulkhead(kind), server.addr())
                .expect("the loopback run");
            drop(server);
            let real = Figures::of(scenario, &loopback.run);
            let (limit, goodput) = agree(&simulated, &real);
            let verdict = match (limit, goodput) {
                (true, true) => "PASS".to_owned(),
                (false, true) => "FAIL limit".to_owned(),
                (true, false) => "FAIL goodput".to_owned(),
                (false, false) => "FAIL limit, goodput".to_owned(),
            };
            checked += 1;
            passed += usize::from(limit && goodput);
            let join = |xs: &[f64]| {
                xs.iter()
                    .map(|x| format!("{x:.1}"))
                    .collect::<Vec<_>>()
                    .join(" / ")
            };
            let ratios: Vec<String> = simulated
                .settled
                .iter()
                .zip(&real.settled)
                .map(|(s, r)| format!("{:.2}", r / s))
                .collect();
            println!(
                "| {} | {} | {} | {} | {} | {:.1} % | {:.1} % | {:+.1} | {:.2} / {:.2} B | {:.2} / {:.2} B | {:.1} / {:.1} % | {} | {verdict} | {} |",
                scenario.name,
                kind.name(),
                join(&simulated.settled),
                join(&real.settled),
                ratios.join(" / "),
                simulated.goodput,
                real.goodput,
                real.goodput - simulated.goodput,
                simulated.p50,
                real.p50,
                simulated.p99,
                real.p99,
                simulated.rejected,
                real.rejected,
                match (simulated.no_load, real.no_load) {
                    (Some(s), Some(r)) => format!("{s:.3} / {r:.3} B"),
                    _ => String::new(),
                },
                spread(scenario, kind, &simulated),
            );
            costs.push_str(&cost_row(scenario, kind, &loopback));
        }
    }
    println!("\n{passed} of {checked} limiters agree (limit and goodput)");
    println!(
        "\nThe loopback's runs: arrivals = admitted + rejected; overhead = the client's latency less the server's hold (the socket, both runtimes, the bulkhead); lag = the latest an arrival left after its time; load average {} at the end\n",
        load_average()
    );
    println!(
        "| scenario | limiter | arrivals | admitted | rejected | failed | held less than their work | overhead p50 / p99 | lag |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    print!("{costs}");
    let described: Vec<String> = scenarios
        .iter()
        .map(|s| format!("{}: {}", s.name, phases(s)))
        .collect();
    println!("\nScenarios as fitted: {}", described.join("; "));
}

/// The row of the costs table of one loopback run.
fn cost_row(scenario: &Scenario, kind: Kind, loopback: &client::Loopback) -> String {
    let overhead = sorted(
        loopback
            .calls
            .iter()
            .map(|c| ((c.latency - c.held) * 1e3) as f32),
    );
    // The server never serves a call faster than its work at full speed.
    let early = loopback
        .calls
        .iter()
        .filter(|c| c.held < c.work - 1e-6)
        .count();
    format!(
        "| {} | {} | {} | {} | {} | {} | {early} | {:.2} / {:.2} ms | {:.1} ms |\n",
        scenario.name,
        kind.name(),
        loopback.run.arrivals,
        loopback.admitted(),
        loopback.run.rejected,
        loopback.errors,
        percentile(&overhead, 0.5),
        percentile(&overhead, 0.99),
        loopback.lag.as_secs_f64() * 1e3,
    )
}
