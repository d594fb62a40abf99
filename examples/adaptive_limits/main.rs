//! Adaptive limits against a simulated dependency, on a `ManualClock`: how
//! AIMD, Vegas and Gradient2 find a dependency's capacity, follow it when
//! it slows down, loses half its capacity or the traffic doubles, and do
//! not drift, next to a static limit and to tower-resilience's adaptive
//! layers.
//!
//! The dependency serves up to `C` calls at once in its base latency `B`;
//! above that it shares itself among them, as a processor-sharing server
//! does (each call progresses at `C / n` of its speed with `n` in flight).
//! Arrivals are open-loop (Poisson). Each scenario runs every limiter on the
//! same arrivals, by discrete events: the registry's `ManualClock` is moved
//! to each event, so a simulated hour takes seconds.
//!
//! Printed per scenario and limiter: goodput (calls completed within twice
//! the base latency of their time) against what the capacity allows, the
//! p50 and p99 latency of admitted calls (in base latencies), the share of
//! calls rejected, the limit (in `C`), how long the limit took after each
//! change to settle within ±25 % of `C` (probe windows left out: they cut
//! the limit on purpose), the p99 once settled, and for the long runs the
//! drift of the limit. SVG plots of the limit and the p99 over time go to
//! `target/adaptive_limits/` (or `--out DIR`).
//!
//! tower-resilience's adaptive layers run here as they are: each of its
//! published algorithms (`Aimd`, `Vegas`, 0.13) behind its
//! `AdaptiveLimiterLayer` over a service that answers when the simulation
//! says, polled by hand (a call is admitted if `poll_ready` is ready at
//! once, else rejected, as a load-shedding caller would). The layer times
//! calls with `std::time::Instant`, which no simulated clock moves, so the
//! algorithm it wraps is handed each call's simulated latency instead of
//! the wall-clock one; everything else (its semaphore, its limit syncs, its
//! shrink debt) is the layer's own code.
//!
//! Then every target of the issue is checked for each of our algorithms in
//! each scenario and printed PASS or FAIL with the value measured.
//!
//! A noisy dependency (`--only noisy`, and `noisy-hour` without `--quick`;
//! run only when named): a chaos policy of the library (`Chaos`, enabled,
//! seed 28) draws, per call, 1 % of them late by 5-20 B and 1 % failed, at
//! 80 % load. A late call holds its slot while it waits (chaos is inside
//! the bulkhead, as in the library), a failed one ends as an error (see
//! `simulate.rs` for what each limiter is told). `--chaos
//! fault_rate=0.01,latency_rate=0.05,latency=500ms..2s,seed=7` lays those
//! keys over the noisy scenarios' chaos, or puts chaos into the others.
//! The same seed prints the same bytes (`cargo test -p bulkhead-extras
//! --example adaptive_limits` checks it).
//!
//! Real dependencies (issue 29; `--only real`, or by name: `lognormal-0.5`,
//! `lognormal-1.0`, `bimodal`, `pareto-1.5`, `pauses`, `drift`; run only
//! when named, at C = 5, 20 and 50 unless `--capacity` or `--capacities`
//! is given): heavy-tailed, bimodal, pausing and drifting service, each
//! with its SLO (twice its no-load p99), a sweep of static limits for the
//! best one in hindsight, and the targets against it; `real.rs`
//! defines each precisely.
//!
//! A cold start into an outage (issue 29; `--only cold`, or by name:
//! `cold-hang`, `cold-fail`; run only when named): the dependency hangs or
//! fails from the first call until 30 s; when each limiter first cut its
//! limit, and whether ours did within the first windows (`cold.rs`).
//!
//! Run it with `cargo run --release --example adaptive_limits` (`-- --quick`
//! skips the hour-long runs; `--only steady,double` runs those scenarios;
//! `--static-limit 1.2` sets the static limit to 1.2 C, to see the
//! trade-off any fixed limit makes; `--capacity 20` simulates C = 20, and
//! `--capacities 5,10,20,50` each of them in turn, then prints one summary
//! line per capacity and limiter). The adaptive limiters start at 0.4 C
//! (`--initial N` to start at N; `--vegas 1,2` gives our Vegas alpha 1 and
//! beta 2). The full run with the default model also
//! writes `docs/adaptive_limits.svg`: the limit and the latency over time,
//! one row per limiter and one column per scenario.
//!
//! Overload (issue 30; `--only overload`, or by name: `sheddable-spike`,
//! `overload-1.5x`; run only when named): real bulkheads under waiting
//! callers, priority classes and queue disciplines side by side
//! (`overload/mod.rs`).
//!
//! A noisy tenant (issue 31; `--only keyed`; run only when named): one
//! tenant at 100x the others' rate, one shared bulkhead beside a keyed
//! bulkhead (`keyed.rs`).
//!
//! `--loopback` checks the simulation against real time and real sockets
//! (issue 29, item 5; `loopback/mod.rs` says how): `lognormal-0.5` and
//! `slow3x` (or `--only`), 60 s each (`--seconds`), at C = 20.

mod chaos;
mod cold;
mod keyed;
mod limiters;
mod loopback;
mod overload;
mod plot;
mod real;
mod report;
mod scenarios;
mod simulate;
mod summary;
mod targets;

use std::cell::Cell;
use std::path::{Path, PathBuf};

use chaos::Noise;
use limiters::Kind;
use plot::Series;
use report::{Report, analyse};
use scenarios::{Scenario, scenarios};
use simulate::{Run, secs, simulate};
use summary::Line;
use targets::{Check, TARGETS, checks};

/// The dependency: its capacity `c` (calls it serves at once at its base
/// latency), its base latency `b` when healthy, in seconds, and the spread
/// of a call's work around it: uniform within ±10 %, or lognormal with
/// `sigma` (`--sigma`) around it as its median.
#[derive(Clone, Copy)]
struct Model {
    c: f64,
    b: f64,
    sigma: Option<f64>,
    /// `--tolerance`: our AIMD's and Gradient2's `rtt_tolerance`.
    tolerance: Option<f64>,
    /// `--static-limit`: the static limit, in `C` (1 by default): run it at
    /// several values to see the trade-off between rejections and
    /// latency any limit makes (BENCHMARKS.md).
    static_limit: f64,
    /// `--initial`: where the adaptive limiters start, in calls.
    initial: Option<u32>,
    /// `--vegas ALPHA,BETA`: our Vegas' queue thresholds.
    vegas: Option<(f64, f64)>,
}

const DEFAULT_MODEL: Model = Model {
    c: 50.0,
    b: 0.1,
    sigma: None,
    tolerance: None,
    static_limit: 1.0,
    initial: None,
    vegas: None,
};

std::thread_local! {
    /// The model of the run under way (one capacity at a time).
    static MODEL: Cell<Model> = const { Cell::new(DEFAULT_MODEL) };
}

pub(crate) fn ceiling() -> u32 {
    (CEILING_C * model().c) as u32
}

pub(crate) fn model() -> Model {
    MODEL.get()
}

/// The ceiling every adaptive limiter gets (in `C`).
pub(crate) const CEILING_C: f64 = 4.0;
/// Where the adaptive limiters start, in `C` (20 at `C` = 50): below the
/// capacity, as the guide asks of `initial_concurrent`.
pub(crate) const INITIAL_C: f64 = 0.4;

/// The limit the adaptive limiters start at: `INITIAL_C` of the capacity,
/// at least 1 (`--initial` sets it in calls).
pub(crate) fn initial() -> u32 {
    model()
        .initial
        .unwrap_or_else(|| ((INITIAL_C * model().c).round() as u32).max(1))
}

/// The latency objective, in base latencies of the time.
pub(crate) const SLO: f64 = 2.0;
/// Trace resolution.
pub(crate) const TRACE_NS: u64 = 100_000_000;

/// The value after `--flag`, if given.
fn arg(args: &[String], flag: &str) -> Option<f64> {
    let at = args.iter().position(|a| a == flag)?;
    args.get(at + 1)?.parse().ok()
}

/// The word after `--flag`, if given.
fn word<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let at = args.iter().position(|a| a == flag)?;
    args.get(at + 1).map(String::as_str)
}

/// The flags that change the model: a run without any is the reference.
const MODEL_FLAGS: [&str; 9] = [
    "--capacity",
    "--capacities",
    "--base-ms",
    "--sigma",
    "--tolerance",
    "--static-limit",
    "--initial",
    "--vegas",
    "--chaos",
];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == loopback::FLAG) {
        return loopback::main(&args);
    }
    let quick = args.iter().any(|a| a == "--quick");
    let capacities: Vec<f64> = match word(&args, "--capacities") {
        Some(list) => list
            .split(',')
            .map(|c| {
                c.trim()
                    .parse()
                    .expect("--capacities: numbers, as 5,10,20,50")
            })
            .collect(),
        None => vec![arg(&args, "--capacity").unwrap_or(DEFAULT_MODEL.c)],
    };
    let out = word(&args, "--out").map_or_else(
        || {
            let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".to_owned());
            PathBuf::from(target).join("adaptive_limits")
        },
        PathBuf::from,
    );
    let only: Vec<&str> = word(&args, "--only")
        .map(|s| s.split(',').collect())
        .unwrap_or_default();
    // Overload (issue 30; `overload/`): run only when named.
    let (overload, only): (Vec<&str>, Vec<&str>) =
        only.into_iter().partition(|n| overload::named(n));
    // A noisy tenant (issue 31; `keyed.rs`): run only when named.
    let (keyed, only): (Vec<&str>, Vec<&str>) = only.into_iter().partition(|n| *n == keyed::NAME);
    // Only real dependencies named, and no capacity: the three.
    let real_only = !only.is_empty()
        && only.iter().all(|name| {
            *name == scenarios::REAL
                || scenarios(true)
                    .iter()
                    .any(|s| s.name == *name && s.real.is_some())
        });
    let capacities = if real_only
        && word(&args, "--capacity").is_none()
        && word(&args, "--capacities").is_none()
    {
        REAL_CAPACITIES.to_vec()
    } else {
        capacities
    };
    // The reference run (every scenario, the default model) draws the
    // figure of the guide; any other run draws it next to its plots.
    let reference =
        !quick && only.is_empty() && MODEL_FLAGS.iter().all(|flag| word(&args, flag).is_none());
    let mut lines = Vec::new();
    let mut verdicts = Vec::new();
    for &c in &capacities {
        MODEL.set(Model {
            c,
            b: arg(&args, "--base-ms").unwrap_or(100.0) / 1000.0,
            sigma: arg(&args, "--sigma"),
            tolerance: arg(&args, "--tolerance"),
            static_limit: arg(&args, "--static-limit").unwrap_or(1.0),
            initial: arg(&args, "--initial").map(|i| i as u32),
            vegas: word(&args, "--vegas").map(|pair| {
                let mut numbers = pair
                    .split(',')
                    .map(|n| n.trim().parse().expect("--vegas ALPHA,BETA: numbers"));
                let alpha = numbers.next().expect("--vegas ALPHA,BETA");
                (alpha, numbers.next().unwrap_or(2.0 * alpha))
            }),
        });
        if !overload.is_empty() || !keyed.is_empty() {
            if !overload.is_empty() {
                print!("{}", overload::run(&overload, quick).0);
            }
            if !keyed.is_empty() {
                print!("{}", keyed::run_all(quick).0);
            }
            if only.is_empty() {
                continue;
            }
        }
        let out = if capacities.len() > 1 {
            out.join(format!("C{c}"))
        } else {
            out.clone()
        };
        let figure = if reference {
            // A target of `extras/`, beside the repository's `docs/`.
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .parent()
                .expect("extras/ is in the repository")
                .join("docs/adaptive_limits.svg")
        } else {
            out.join("adaptive_limits.svg")
        };
        let (real, rest): (Vec<Scenario>, Vec<Scenario>) =
            selected(quick, &only, word(&args, "--chaos"))
                .into_iter()
                .partition(|s| s.real.is_some());
        let (outages, rest): (Vec<Scenario>, Vec<Scenario>) =
            rest.into_iter().partition(Scenario::cold);
        if !rest.is_empty() || (real.is_empty() && outages.is_empty()) {
            lines.extend(run(&rest, &out, &figure));
        }
        if !outages.is_empty() {
            cold::run(&outages);
        }
        if !real.is_empty() {
            verdicts.extend(real::run(&real, &out));
        }
    }
    if capacities.len() > 1 && !lines.is_empty() {
        summary::print(&lines);
    }
    if !verdicts.is_empty() {
        real::print_targets(&verdicts);
    }
}

/// The capacities `--only real` runs at unless told.
const REAL_CAPACITIES: [f64; 3] = [5.0, 20.0, 50.0];

/// The scenarios to run: those `only` names (`real`: the real ones, `cold`:
/// the cold starts), else all but the noisy, real and cold ones;
/// the keys of `chaos` (`--chaos`) laid over each one's noise.
fn selected(quick: bool, only: &[&str], chaos: Option<&str>) -> Vec<Scenario> {
    scenarios(quick)
        .into_iter()
        .filter(|s| {
            if only.is_empty() {
                !s.named_only
            } else {
                only.contains(&s.name)
                    || (s.real.is_some() && only.contains(&scenarios::REAL))
                    || (s.cold() && only.contains(&scenarios::COLD))
            }
        })
        .map(|s| match chaos {
            None => s,
            Some(keys) => {
                let noise = s.chaos.unwrap_or_else(Noise::none).with(keys);
                s.with_chaos(noise)
            }
        })
        .collect()
}

/// Every limiter on `scenario`: its runs and what they show.
fn simulate_all(scenario: &Scenario) -> (Vec<Run>, Vec<Report>) {
    let runs: Vec<Run> = Kind::ALL.iter().map(|&k| simulate(scenario, k)).collect();
    let reports = runs.iter().map(|r| analyse(scenario, r)).collect();
    (runs, reports)
}

/// Every scenario at the model of the time: its tables on stdout, its plots
/// in `out`, the grid of them at `figure`; the summary lines of the static
/// limit and ours.
fn run(all: &[Scenario], out: &Path, figure: &Path) -> Vec<Line> {
    std::fs::create_dir_all(out).expect("the output directory");
    println!(
        "C = {} calls, B = {} ms, ceiling {CEILING_C} C, initial {}, work {}; goodput = completed within {SLO} x base, against what the capacity allows\n",
        model().c,
        model().b * 1000.0,
        initial(),
        model().sigma.map_or_else(
            || "uniform within 10 % of B".to_owned(),
            |s| format!("lognormal, sigma {s}, median B")
        )
    );
    println!(
        "| scenario | limiter | goodput | p50 | p99 | rejected | limit mean (min-max) | settled in (s, each change) | p99 settled | drift (max from 5 s) | probing | out of band after 5 s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut figures = Vec::new();
    let mut chaos_rows = String::new();
    let mut verdicts = Vec::new();
    let mut lines: Vec<Line> = Kind::ALL
        .iter()
        .filter(|k| k.ours() || **k == Kind::Static)
        .map(|&kind| Line::new(model().c, kind))
        .collect();
    for scenario in all {
        let (runs, reports) = simulate_all(scenario);
        for (report, run) in reports.iter().zip(&runs) {
            println!("{}", row(scenario, report, run));
            if let Some(row) = chaos_row(scenario, run) {
                chaos_rows.push_str(&row);
                chaos_rows.push('\n');
            }
        }
        for line in &mut lines {
            let report = reports.iter().find(|r| r.kind == line.kind);
            line.add(scenario.name, report.expect("every limiter ran"));
        }
        let peer = |kind| {
            reports
                .iter()
                .find(|r| r.kind == kind)
                .expect("every limiter ran")
        };
        for report in reports.iter().filter(|r| r.kind.ours()) {
            let checks = checks(report, peer(Kind::TowerAimd), peer(Kind::TowerVegas));
            verdicts.push((scenario.name, report.kind, checks));
        }
        if let Ok(which) = std::env::var("ADAPTIVE_TRACE") {
            trace(scenario, &runs, &which);
        }
        let seconds = scenario.seconds() as f64;
        let detailed: Vec<Series> = runs
            .iter()
            .map(|r| Series::of(r, seconds, (seconds as usize).min(600)))
            .collect();
        let path = out.join(format!("{}.svg", scenario.name));
        std::fs::write(&path, plot::scenario(scenario, &detailed)).expect("the plot");
        eprintln!("wrote {}", path.display());
        figures.push((
            scenario,
            runs.iter().map(|r| Series::of(r, seconds, 200)).collect(),
        ));
    }
    if !chaos_rows.is_empty() {
        println!(
            "\nChaos (a seeded `bulkhead::chaos::Chaos`, drawn per arrival; a late call holds its slot, a failed one ends as an error): the admitted calls it delayed and failed\n"
        );
        println!("| scenario | limiter | chaos | admitted | delayed | failed |");
        println!("|---|---|---|---|---|---|");
        print!("{chaos_rows}");
    }
    print_targets(&verdicts);
    std::fs::write(figure, plot::grid(&figures)).expect("the figure");
    eprintln!("wrote {}", figure.display());
    lines
}

/// The row of the main table of one limiter in one scenario.
fn row(scenario: &Scenario, report: &Report, run: &Run) -> String {
    let settles = report
        .settles
        .iter()
        .map(|s| s.map_or_else(|| "never".to_owned(), |s| format!("{s:.1}")))
        .collect::<Vec<_>>()
        .join(" / ");
    let drift = report
        .drift
        .zip(report.settled_max)
        .map_or_else(String::new, |(d, m)| format!("{d:+.3} C ({m:.2} C)"));
    let no_load = run.no_load.map_or_else(String::new, |n| {
        format!(" (no-load {:.2} B)", n / model().b)
    });
    format!(
        "| {} | {} | {:.1} % | {:.2} B | {:.2} B | {:.1} % | {:.2} C ({:.2}-{:.2}) | {settles} | {:.2} B | {drift} | {:.1} %{no_load} | {:.1} % |",
        scenario.name,
        report.kind.name(),
        100.0 * report.goodput,
        report.p50,
        report.p99,
        100.0 * report.rejected,
        report.limit_mean,
        report.limit_min,
        report.limit_max,
        report.p99_settled,
        100.0 * report.probe_time,
        100.0 * report.out_of_band,
    )
}

/// The row of the chaos table of one limiter in a scenario with chaos.
fn chaos_row(scenario: &Scenario, run: &Run) -> Option<String> {
    let noise = scenario.chaos?;
    let admitted = run.arrivals - run.rejected;
    let share = |n: u64| 100.0 * n as f64 / admitted.max(1) as f64;
    Some(format!(
        "| {} | {} | {} | {admitted} | {} ({:.2} %) | {} ({:.2} %) |",
        scenario.name,
        run.kind.name(),
        noise.describe(),
        run.delayed,
        share(run.delayed),
        run.faulted,
        share(run.faulted),
    ))
}

/// The targets table: one row per scenario and algorithm of ours, then the
/// count of passes per target.
fn print_targets(verdicts: &[(&str, Kind, Vec<Check>)]) {
    println!("\nTargets (ours; comparisons with tower-resilience as printed: 0.01 B, 0.1 %)\n");
    println!("| scenario | algorithm | {} |", TARGETS.join(" | "));
    println!("|---|---|{}", "---|".repeat(TARGETS.len()));
    for (scenario, kind, checks) in verdicts {
        let cells: Vec<String> = checks.iter().map(Check::cell).collect();
        println!("| {scenario} | {} | {} |", kind.name(), cells.join(" | "));
    }
    println!();
    let (mut passed, mut checked) = (0, 0);
    for (i, target) in TARGETS.iter().enumerate() {
        let results: Vec<bool> = verdicts.iter().filter_map(|(_, _, c)| c[i].pass).collect();
        let pass = results.iter().filter(|p| **p).count();
        passed += pass;
        checked += results.len();
        let verdict = if pass == results.len() {
            "PASS"
        } else {
            "FAIL"
        };
        println!("{verdict} {target}: {pass} of {}", results.len());
    }
    println!("{passed} of {checked} checks pass");
}

/// `ADAPTIVE_TRACE=<limiter>`: the limit of the matching limiters wherever
/// it is out of the band or probing (or, with `ADAPTIVE_AROUND=<s>`, within
/// 5 s of that time), on stderr.
fn trace(scenario: &Scenario, runs: &[Run], which: &str) {
    let around = std::env::var("ADAPTIVE_AROUND")
        .ok()
        .and_then(|a| a.parse::<f64>().ok());
    for run in runs.iter().filter(|r| r.kind.name().contains(which)) {
        for row in &run.rows {
            let x = f64::from(row.limit) / (model().c * scenario.phase_at(row.at).capacity);
            let near = around.is_some_and(|a| (secs(row.at) - a).abs() < 5.0);
            if near
                || (around.is_none()
                    && (row.probing || !(report::BAND.0..=report::BAND.1).contains(&x)))
            {
                eprintln!(
                    "{} {:.1} {} {}",
                    run.kind.name(),
                    secs(row.at),
                    row.limit,
                    row.probing
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::hash_map::DefaultHasher;
    use std::hash::{Hash, Hasher};

    use super::*;

    /// The noisy scenario of `--quick` (5 minutes; the default model), its
    /// chaos' seed `seed`.
    fn noisy(seed: u64) -> Scenario {
        let mut all = selected(true, &["noisy"], Some(&format!("seed={seed}")));
        assert_eq!(all.len(), 1);
        all.remove(0)
    }

    /// What a run of every limiter prints (the main table's rows and the
    /// chaos table's), and a digest of every completed call and trace row.
    fn output(scenario: &Scenario) -> (String, u64) {
        let (runs, reports) = simulate_all(scenario);
        let mut printed = String::new();
        let mut digest = DefaultHasher::new();
        for (report, run) in reports.iter().zip(&runs) {
            printed += &row(scenario, report, run);
            printed += "\n";
            printed += &chaos_row(scenario, run).expect("a scenario with chaos");
            printed += "\n";
            for done in &run.done {
                (done.start, done.ratio.to_bits()).hash(&mut digest);
            }
            for row in &run.rows {
                (row.at, row.limit, row.probing).hash(&mut digest);
            }
            (run.arrivals, run.rejected, run.delayed, run.faulted).hash(&mut digest);
        }
        (printed, digest.finish())
    }

    #[test]
    fn the_same_seed_prints_the_same_and_another_seed_does_not() {
        let seed = scenarios::NOISY_SEED;
        let (first, first_digest) = output(&noisy(seed));
        let (again, again_digest) = output(&noisy(seed));
        assert_eq!(first, again, "two runs of one seed printed differently");
        assert_eq!(first_digest, again_digest, "two runs of one seed differ");
        let (other, other_digest) = output(&noisy(seed + 1));
        assert_ne!(first, other, "another seed printed the same");
        assert_ne!(first_digest, other_digest, "another seed ran the same");
    }

    #[test]
    fn chaos_injects_its_rates_into_every_limiter_s_calls() {
        let scenario = noisy(scenarios::NOISY_SEED);
        let noise = scenario.chaos.expect("the noisy scenario has chaos");
        for kind in Kind::ALL {
            let run = simulate(&scenario, kind);
            let admitted = (run.arrivals - run.rejected) as f64;
            let delayed = run.delayed as f64 / admitted;
            let faulted = run.faulted as f64 / admitted;
            assert!(
                (delayed / noise.latency_rate - 1.0).abs() < 0.3
                    && (faulted / noise.fault_rate - 1.0).abs() < 0.3,
                "{}: {delayed} delayed, {faulted} failed of {admitted} admitted",
                kind.name()
            );
        }
    }

    /// What the real scenario `name` prints at C = `c` (`--quick`): its
    /// reference row and every limiter's row, and a digest of every
    /// completed call and trace row of each limiter and of the sweep.
    fn real_output(name: &str, c: f64) -> (String, u64) {
        MODEL.set(Model { c, ..DEFAULT_MODEL });
        let all = selected(true, &[name], None);
        assert_eq!(all.len(), 1);
        let scenario = &all[0];
        let reference = real::sweep(scenario);
        let mut printed = real::reference_row(scenario, &reference) + "\n";
        let mut digest = DefaultHasher::new();
        for (limit, measure) in &reference.grid {
            (limit, measure.good, measure.p99.to_bits()).hash(&mut digest);
        }
        for kind in Kind::ALL {
            let run = simulate(scenario, kind);
            let measure = real::Measure::of(&run, reference.slo);
            let limits = real::Limits::of(scenario, &run, reference.limit());
            printed += &real::row(scenario, &reference, kind, &measure, &limits);
            printed += "\n";
            for done in &run.done {
                (done.start, done.ratio.to_bits()).hash(&mut digest);
            }
            for row in &run.rows {
                (row.at, row.limit, row.probing).hash(&mut digest);
            }
        }
        (printed, digest.finish())
    }

    #[test]
    fn a_real_scenario_prints_the_same_twice() {
        // Small capacities: the sweep runs a static limit per grid point.
        for (name, c) in [("pareto-1.5", 5.0), ("pauses", 5.0), ("drift", 5.0)] {
            let (first, first_digest) = real_output(name, c);
            let (again, again_digest) = real_output(name, c);
            assert_eq!(first, again, "{name}: two runs printed differently");
            assert_eq!(first_digest, again_digest, "{name}: two runs differ");
        }
    }

    #[test]
    fn real_group_names_the_real_scenarios_and_only_them() {
        let real = selected(true, &[scenarios::REAL], None);
        let names: Vec<&str> = real.iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            [
                "lognormal-0.5",
                "lognormal-1.0",
                "bimodal",
                "pareto-1.5",
                "pauses",
                "drift"
            ]
        );
        assert!(selected(true, &[], None).iter().all(|s| s.real.is_none()));
    }

    #[test]
    fn service_times_have_the_mean_they_are_loaded_by() {
        // The arrival rate is `load C / (B mean)`: each spread's sample mean
        // is its `mean()`, within 2 % (Pareto's tail: 5 %).
        for scenario in selected(true, &[scenarios::REAL], None) {
            let service = scenario.service();
            let mut random = simulate::Random(7);
            let n = 400_000;
            let mean = (0..n).map(|_| random.work(1.0, service)).sum::<f64>() / f64::from(n);
            let tolerance = if scenario.name == "pareto-1.5" {
                0.05
            } else {
                0.02
            };
            assert!(
                (mean / service.mean() - 1.0).abs() < tolerance,
                "{}: sample mean {mean}, mean() {}",
                scenario.name,
                service.mean()
            );
        }
    }

    #[test]
    fn the_no_load_p99_is_the_service_s_and_the_pauses_add_to_it() {
        let p99 = |name: &str| real::no_load_p99(&selected(true, &[name], None)[0]);
        // Uniform within 10 %: 1.098 B; lognormal: exp(2.326 sigma).
        assert!((p99("drift") - 1.098).abs() < 0.005);
        assert!((p99("lognormal-0.5") / (2.326f64 * 0.5).exp() - 1.0).abs() < 0.02);
        assert!((p99("lognormal-1.0") / 2.326f64.exp() - 1.0).abs() < 0.03);
        // 3 % of the time paused, calls meeting a pause wait up to 3 B.
        assert!(p99("pauses") > 2.0 && p99("pauses") < 4.2);
    }

    #[test]
    fn a_pause_stops_the_dependency_for_300_ms_every_10_s() {
        let scenario = &selected(true, &["pauses"], None)[0];
        let s = 1_000_000_000u64;
        assert!(!scenario.paused(0) && !scenario.paused(9 * s));
        assert!(scenario.paused(10 * s) && scenario.paused(10 * s + 299_000_000));
        assert!(!scenario.paused(10 * s + 300_000_000));
        assert_eq!(scenario.next_pause_edge(5 * s), 10 * s);
        assert_eq!(scenario.next_pause_edge(10 * s), 10 * s + 300_000_000);
        assert_eq!(scenario.next_pause_edge(10 * s + 300_000_000), 20 * s);
        let steady = &selected(true, &["steady"], None)[0];
        assert_eq!(steady.next_pause_edge(0), u64::MAX);
        assert!(!steady.paused(10 * s));
    }

    #[test]
    fn a_scenario_without_chaos_injects_nothing() {
        let all = selected(true, &["steady"], None);
        let run = simulate(&all[0], Kind::Static);
        assert_eq!((run.delayed, run.faulted), (0, 0));
        assert!(!run.done.is_empty());
    }
}
