//! Real dependencies (issue 29): heavy-tailed, bimodal, pausing, drifting;
//! for each, the best static limit in hindsight, and every algorithm of
//! ours checked against it.
//!
//! The scenarios (`scenarios.rs`; `--only real` runs them all, at C = 5, 20
//! and 50 unless `--capacity`/`--capacities` says otherwise; each also by
//! name): 80 % load (arrivals at `0.8 C / mean work`, Poisson) on the
//! processor-sharing dependency, for 5 minutes with `--quick` (`drift`: 10,
//! one period) and an hour without, with service times
//!
//! - `lognormal-0.5`, `lognormal-1.0`: lognormal, median `B`, sigma 0.5 and
//!   1.0 (mean 1.13 B and 1.65 B);
//! - `bimodal`: 80 % at 0.2 B, 20 % at 1.5 B, each uniform within ±10 % of
//!   its mode (mean 0.46 B);
//! - `pareto-1.5`: Pareto, alpha 1.5, scale B / 3 (mean `B` uncut), cut at
//!   100 B (a client's timeout; mean 0.96 B);
//! - `pauses`: uniform within ±10 % of `B`; every 10 s (at 10 s, 20 s, ..)
//!   the dependency stops for 300 ms: no call progresses, calls keep
//!   arriving and are admitted as the limit allows;
//! - `drift`: uniform within ±10 % of `B`; the capacity is
//!   `C (1 + 0.3 sin(2 pi t / 10 min))`, so the load swings between 62 %
//!   and 114 % of it.
//!
//! **The SLO**, per scenario: a call is good if it completes within
//! [`SLO_MULTIPLE`] times the scenario's **no-load p99**, the 99th
//! percentile of a call's latency on an idle dependency (its work at full
//! speed, plus for `pauses` the part of a pause it meets), drawn by
//! [`NO_LOAD_SAMPLES`] seeded samples ([`no_load_p99`]). For the uniform
//! service that is 2 x 1.10 B = 2.2 B, next to the 2 B of the uniform
//! scenarios. **Goodput** is the count of good calls (printed as a share
//! of the arrivals, which are the same for every limiter).
//!
//! **The best static limit in hindsight** ([`sweep`]): the scenario is run
//! with a static limit at each of the distinct values `max(1, round(m C))`
//! for `m` in [`GRID`] (0.5 C to 2 C by 0.1 C, then 2.25, 2.5, 3, 3.5 and
//! 4 C, the adaptive limiters' ceiling), on the same arrivals and work as
//! every limiter. Among the limits whose p99 of admitted calls is within
//! the SLO, the best is the lowest whose goodput is within [`PLATEAU`]
//! (0.1 %) of the most any of them reached: the goodput of a static limit
//! rises to a plateau as the limit grows and then stays flat (or falls, as
//! queueing pushes calls past the SLO), and on the plateau the most goodput
//! is a matter of a few calls, so the limit that reaches it first is the
//! reference a limiter should find (the plateau's knee), not the one a few
//! lucky calls put ahead. If none is within the SLO, the one with the
//! lowest p99 (flagged "none within the SLO"). Its limit is `L*`. The
//! grid stops at the adaptive limiters' ceiling: a best static limit at
//! its top (flagged "the grid's top") may be lower than the best limit
//! above it, which no adaptive limiter here can reach.
//!
//! **The targets** (item 2 of the issue), for each of our algorithms in
//! each scenario and capacity, PASS or FAIL with the value measured:
//!
//! 1. goodput at least [`GOODPUT_SHARE`] of `L*`'s;
//! 2. p99 of admitted calls at most [`P99_SHARE`] times `L*`'s, and within
//!    the SLO;
//! 3. no collapse: from [`COLLAPSE_FROM_NS`] on, the limit (probes
//!    included: a probe is the limit too) below [`COLLAPSE`] `L*` at most
//!    [`COLLAPSE_TIME`] of the time (trace rows every 100 ms);
//! 4. settled within [`SETTLE_S`] of each change: the changes are the
//!    phases' starts (here the run's start only: pauses and the drift are
//!    how the dependency is, not changes), and settled is as in the
//!    uniform scenarios but around `L*` instead of `C`: from that time to
//!    the phase's end, every trace row outside a probe within ±25 % of
//!    `L*` (for `drift`, of `L*` times the capacity's share at the time);
//! 5. no drift over the hour (without `--quick`): the mean limit over the
//!    last 10 minutes less that over minutes 10 to 20, at most
//!    ±[`DRIFT_MOST`] `L*`;
//! 6. better than tower-resilience, as in the uniform scenarios
//!    (`targets.rs`, [`against_tower`]), with the scenario's SLO as the
//!    latency bound instead of 2 B: not dominated by either of its layers
//!    (goodput as a share of the arrivals, p99 of admitted calls, as
//!    printed: 0.1 %, 0.01 B), and a goodput at least that of each layer
//!    whose settled p99 (of the calls admitted from [`SETTLED_FROM_NS`],
//!    when every algorithm should have settled: target 4) is within the
//!    SLO.
//!
//! The algorithms are the defaults (ceiling 4 C, initial 0.4 C); nothing
//! here is tuned for them.

use std::path::Path;

use crate::limiters::{Kind, Limiter};
use crate::plot::{self, Series};
use crate::report::{BAND, percentile, sorted};
use crate::scenarios::{PAUSE_EVERY_NS, PAUSE_NS, Real, Scenario};
use crate::simulate::{Random, Run, simulate, simulate_with};
use crate::targets::{Check, Score, against_tower, check};
use crate::{ceiling, initial, model};

/// The SLO, in no-load p99s.
pub(crate) const SLO_MULTIPLE: f64 = 2.0;
/// Samples of the no-load latency.
pub(crate) const NO_LOAD_SAMPLES: usize = 200_000;
/// The static limits swept, in `C`.
pub(crate) const GRID: [f64; 21] = [
    0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2.0, 2.25, 2.5, 3.0,
    3.5, 4.0,
];
/// The best static limit: the lowest within this share of the most goodput.
pub(crate) const PLATEAU: f64 = 0.001;
/// Target 1: goodput at least this share of the best static limit's.
pub(crate) const GOODPUT_SHARE: f64 = 0.95;
/// Target 2: p99 at most this many times the best static limit's.
pub(crate) const P99_SHARE: f64 = 1.1;
/// Target 3: the limit below `COLLAPSE L*` at most `COLLAPSE_TIME` of the
/// time from `COLLAPSE_FROM_NS` on.
pub(crate) const COLLAPSE: f64 = 0.5;
pub(crate) const COLLAPSE_TIME: f64 = 0.02;
pub(crate) const COLLAPSE_FROM_NS: u64 = 10_000_000_000;
/// Target 4: settled within this many seconds of each change.
pub(crate) const SETTLE_S: f64 = 10.0;
/// Target 5: the drift over the hour at most this many `L*`.
pub(crate) const DRIFT_MOST: f64 = 0.05;
/// Target 6: the settled p99 is of the calls admitted from here on (the
/// settling time of target 4).
pub(crate) const SETTLED_FROM_NS: u64 = 10_000_000_000;

/// The targets, as the table's header names them.
pub(crate) const TARGETS: [&str; 7] = [
    "goodput ≥ 95 % of best static",
    "p99 ≤ 1.1x best static's, ≤ SLO",
    "no collapse: < 0.5 L* ≤ 2 % of the time after 10 s",
    "settled within 10 s (±25 % of L*, probes aside)",
    "no drift over the hour (≤ ±0.05 L*)",
    "not dominated by a tower layer (goodput, p99)",
    "goodput ≥ each tower layer's whose settled p99 ≤ SLO",
];

/// The latency of a call of `work` seconds starting at `start` (seconds)
/// on an idle dependency: its work, plus the pauses it meets.
fn idle_latency(scenario: &Scenario, start: f64, work: f64) -> f64 {
    if !matches!(scenario.real, Some(Real { pauses: true, .. })) {
        return work;
    }
    let every = PAUSE_EVERY_NS as f64 / 1e9;
    let pause = PAUSE_NS as f64 / 1e9;
    let (mut t, mut left) = (start, work);
    loop {
        let into = t % every;
        if into < pause {
            t += pause - into;
            continue;
        }
        let run = every - into;
        if left <= run {
            return t + left - start;
        }
        left -= run;
        t += run;
    }
}

/// The scenario's no-load p99, in `B`: [`NO_LOAD_SAMPLES`] calls, each
/// alone on the dependency, starting uniformly within a pause cycle.
pub(crate) fn no_load_p99(scenario: &Scenario) -> f64 {
    let mut random = Random(0x0029_5EED);
    let b = model().b;
    let every = PAUSE_EVERY_NS as f64 / 1e9;
    let service = scenario.service();
    let latencies = sorted((0..NO_LOAD_SAMPLES).map(|_| {
        let start = every * (1.0 + random.unit());
        let work = random.work(b, service);
        (idle_latency(scenario, start, work) / b) as f32
    }));
    percentile(&latencies, 0.99)
}

/// What a run did, against the scenario's SLO (in `B`).
#[derive(Clone, Copy)]
pub(crate) struct Measure {
    /// Calls completed within the SLO.
    pub(crate) good: u64,
    pub(crate) arrivals: u64,
    pub(crate) p50: f64,
    pub(crate) p99: f64,
    /// Of the calls admitted from [`SETTLED_FROM_NS`] on.
    pub(crate) p99_settled: f64,
    pub(crate) rejected: f64,
}

impl Measure {
    pub(crate) fn of(run: &Run, slo: f64) -> Measure {
        let all = sorted(run.done.iter().map(|d| d.ratio));
        Measure {
            good: run
                .done
                .iter()
                .filter(|d| f64::from(d.ratio) <= slo)
                .count() as u64,
            arrivals: run.arrivals,
            p50: percentile(&all, 0.5),
            p99: percentile(&all, 0.99),
            p99_settled: percentile(
                &sorted(
                    run.done
                        .iter()
                        .filter(|d| d.start >= SETTLED_FROM_NS)
                        .map(|d| d.ratio),
                ),
                0.99,
            ),
            rejected: run.rejected as f64 / run.arrivals.max(1) as f64,
        }
    }

    /// Goodput, as a share of the arrivals.
    pub(crate) fn goodput(&self) -> f64 {
        self.good as f64 / self.arrivals.max(1) as f64
    }

    /// As the comparisons with tower-resilience read it.
    pub(crate) fn score(&self, name: &'static str) -> Score {
        Score {
            name,
            goodput: self.goodput(),
            p99: self.p99,
            p99_settled: self.p99_settled,
        }
    }
}

/// The reference of a scenario: its SLO, the sweep of static limits and
/// the best of them.
pub(crate) struct Reference {
    pub(crate) no_load_p99: f64,
    pub(crate) slo: f64,
    /// Each static limit of the grid, in calls, and what it did.
    pub(crate) grid: Vec<(u32, Measure)>,
    /// The best of them (an index into `grid`).
    pub(crate) best: usize,
    /// Whether the best is within the SLO (else: none was).
    pub(crate) within: bool,
}

impl Reference {
    pub(crate) fn limit(&self) -> u32 {
        self.grid[self.best].0
    }

    pub(crate) fn measure(&self) -> Measure {
        self.grid[self.best].1
    }
}

/// The distinct static limits of [`GRID`] at the model's capacity.
pub(crate) fn grid() -> Vec<u32> {
    let mut limits: Vec<u32> = GRID
        .iter()
        .map(|m| ((m * model().c).round() as u32).max(1))
        .collect();
    limits.dedup();
    limits
}

/// The best static limit in hindsight for `scenario` (see the module's
/// docs).
pub(crate) fn sweep(scenario: &Scenario) -> Reference {
    let no_load_p99 = no_load_p99(scenario);
    let slo = SLO_MULTIPLE * no_load_p99;
    let grid: Vec<(u32, Measure)> = grid()
        .into_iter()
        .map(|limit| {
            let run = simulate_with(scenario, Kind::Static, Limiter::fixed(limit));
            (limit, Measure::of(&run, slo))
        })
        .collect();
    let within = grid.iter().any(|(_, m)| m.p99 <= slo);
    let best = if within {
        let most = grid
            .iter()
            .filter(|(_, m)| m.p99 <= slo)
            .map(|(_, m)| m.good)
            .max()
            .expect("a limit within the SLO");
        // The grid is in ascending order of limits: the first on the
        // plateau.
        grid.iter()
            .position(|(_, m)| m.p99 <= slo && m.good as f64 >= (1.0 - PLATEAU) * most as f64)
            .expect("the most goodput is on the plateau")
    } else {
        (0..grid.len())
            .min_by(|&i, &j| grid[i].1.p99.total_cmp(&grid[j].1.p99))
            .expect("a grid of limits")
    };
    Reference {
        no_load_p99,
        slo,
        grid,
        best,
        within,
    }
}

/// What a limiter's limit did against `L*`.
pub(crate) struct Limits {
    /// Mean, min and max, in `L*`.
    pub(crate) mean: f64,
    pub(crate) min: f64,
    pub(crate) max: f64,
    /// The share of the time from [`COLLAPSE_FROM_NS`] below
    /// [`COLLAPSE`] `L*`.
    pub(crate) collapsed: f64,
    /// How long after each phase's start the limit settled, `None` if it
    /// never did.
    pub(crate) settles: Vec<Option<f64>>,
    /// The drift over the hour, in `L*` (long runs).
    pub(crate) drift: Option<f64>,
}

impl Limits {
    pub(crate) fn of(scenario: &Scenario, run: &Run, best: u32) -> Limits {
        let best = f64::from(best);
        let share = |limit: u32| f64::from(limit) / best;
        let n = run.rows.len().max(1) as f64;
        let after: Vec<_> = run
            .rows
            .iter()
            .filter(|r| r.at >= COLLAPSE_FROM_NS)
            .collect();
        let collapsed = after.iter().filter(|r| share(r.limit) < COLLAPSE).count() as f64
            / after.len().max(1) as f64;
        let mut settles = Vec::new();
        let mut start = 0u64;
        for phase in &scenario.phases {
            let end = start + phase.seconds * 1_000_000_000;
            let rows: Vec<_> = run
                .rows
                .iter()
                .filter(|r| r.at >= start && r.at < end)
                .collect();
            let mut first = rows.len();
            for (i, row) in rows.iter().enumerate().rev() {
                let reference = best * scenario.capacity_at(row.at) / phase.capacity;
                let x = f64::from(row.limit) / reference;
                if row.probing || (BAND.0..=BAND.1).contains(&x) {
                    first = i;
                } else {
                    break;
                }
            }
            settles.push(rows.get(first).map(|r| (r.at - start) as f64 / 1e9));
            start = end;
        }
        let mean = |a: u64, b: u64| {
            let xs: Vec<f64> = run
                .rows
                .iter()
                .filter(|r| r.at >= a * 60_000_000_000 && r.at < b * 60_000_000_000)
                .map(|r| share(r.limit))
                .collect();
            xs.iter().sum::<f64>() / xs.len().max(1) as f64
        };
        let limits = run.rows.iter().map(|r| share(r.limit));
        Limits {
            mean: run.rows.iter().map(|r| share(r.limit)).sum::<f64>() / n,
            min: limits.clone().fold(f64::INFINITY, f64::min),
            max: limits.fold(0.0, f64::max),
            collapsed,
            settles,
            drift: scenario.long.then(|| mean(50, 60) - mean(10, 20)),
        }
    }

    /// The slowest settling, `None` if some phase never settled.
    fn settle(&self) -> Option<f64> {
        self.settles
            .iter()
            .try_fold(0.0f64, |worst, s| s.map(|s| worst.max(s)))
    }

    fn settles(&self) -> String {
        self.settles
            .iter()
            .map(|s| s.map_or_else(|| "never".to_owned(), |s| format!("{s:.1}")))
            .collect::<Vec<_>>()
            .join(" / ")
    }
}

/// One row of the targets table.
pub(crate) struct Verdict {
    pub(crate) c: f64,
    pub(crate) scenario: &'static str,
    pub(crate) kind: Kind,
    pub(crate) checks: Vec<Check>,
}

/// Our `measure` and `limits` against the targets, in the order of
/// [`TARGETS`], next to tower-resilience's `towers` (their scores).
pub(crate) fn checks(
    reference: &Reference,
    measure: &Measure,
    limits: &Limits,
    towers: &[Score],
) -> Vec<Check> {
    let best = reference.measure();
    let share = measure.good as f64 / best.good.max(1) as f64;
    let drift = match limits.drift {
        // As printed (0.001 L*): a difference too small to print is none.
        Some(drift) => check(
            (drift.abs() * 1000.0).round() <= DRIFT_MOST * 1000.0,
            format!("{drift:+.3} L*"),
        ),
        None => Check {
            pass: None,
            value: String::new(),
        },
    };
    let [not_dominated, goodput] = against_tower(&measure.score("ours"), towers, reference.slo);
    vec![
        check(share >= GOODPUT_SHARE, format!("{:.1} %", 100.0 * share)),
        check(
            measure.p99 <= P99_SHARE * best.p99 && measure.p99 <= reference.slo,
            format!(
                "{:.2} vs {:.2} B ({:.2}x)",
                measure.p99,
                best.p99,
                measure.p99 / best.p99
            ),
        ),
        check(
            limits.collapsed <= COLLAPSE_TIME,
            format!("{:.1} %", 100.0 * limits.collapsed),
        ),
        check(
            limits.settle().is_some_and(|s| s <= SETTLE_S),
            format!("{} s", limits.settles()),
        ),
        drift,
        not_dominated,
        goodput,
    ]
}

/// Every real scenario at the model of the time: the references and every
/// limiter's row on stdout, the plots in `out`; the verdicts of ours.
pub(crate) fn run(scenarios: &[Scenario], out: &Path) -> Vec<Verdict> {
    std::fs::create_dir_all(out).expect("the output directory");
    println!(
        "Real dependencies (issue 29): C = {} calls, B = {} ms, 80 % load of the mean work, ceiling {} calls, initial {}; SLO = {SLO_MULTIPLE} x the no-load p99; static limits swept: {:?}\n",
        model().c,
        model().b * 1000.0,
        ceiling(),
        initial(),
        grid(),
    );
    let mut rows = String::new();
    let mut references = String::new();
    let mut verdicts = Vec::new();
    for scenario in scenarios {
        let reference = sweep(scenario);
        references.push_str(&reference_row(scenario, &reference));
        references.push('\n');
        let runs: Vec<Run> = Kind::ALL.iter().map(|&k| simulate(scenario, k)).collect();
        if let Ok(which) = std::env::var("ADAPTIVE_TRACE") {
            crate::trace(scenario, &runs, &which);
        }
        let measures: Vec<Measure> = runs.iter().map(|r| Measure::of(r, reference.slo)).collect();
        let tower = |kind, name| {
            let at = runs.iter().position(|r| r.kind == kind);
            measures[at.expect("every limiter ran")].score(name)
        };
        let towers = [
            tower(Kind::TowerAimd, "Aimd"),
            tower(Kind::TowerVegas, "Vegas"),
        ];
        for (run, measure) in runs.iter().zip(&measures) {
            let limits = Limits::of(scenario, run, reference.limit());
            rows.push_str(&row(scenario, &reference, run.kind, measure, &limits));
            rows.push('\n');
            if run.kind.ours() {
                verdicts.push(Verdict {
                    c: model().c,
                    scenario: scenario.name,
                    kind: run.kind,
                    checks: checks(&reference, measure, &limits, &towers),
                });
            }
        }
        let seconds = scenario.seconds() as f64;
        let detailed: Vec<Series> = runs
            .iter()
            .map(|r| Series::of(r, seconds, (seconds as usize).min(600)))
            .collect();
        let path = out.join(format!("{}.svg", scenario.name));
        std::fs::write(&path, plot::scenario(scenario, &detailed)).expect("the plot");
        eprintln!("wrote {}", path.display());
    }
    println!(
        "| scenario | what | no-load p99 | SLO | best static L* | its goodput | its p99 | its rejected | static C: goodput / p99 | the sweep: goodput / p99 from the lowest limit to the highest |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    print!("{references}");
    println!(
        "\n| scenario | limiter | goodput (of arrivals) | of L*'s | p50 | p99 | rejected | limit mean (min-max), in L* | < 0.5 L* after 10 s | settled in (s, ±25 % of L*) | drift |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    print!("{rows}");
    println!();
    verdicts
}

/// The reference row of a scenario.
pub(crate) fn reference_row(scenario: &Scenario, reference: &Reference) -> String {
    let best = reference.measure();
    let at_c = reference
        .grid
        .iter()
        .find(|(l, _)| *l == (model().c.round() as u32).max(1))
        .map_or_else(String::new, |(_, m)| {
            format!("{:.1} % / {:.2} B", 100.0 * m.goodput(), m.p99)
        });
    let sweep = reference
        .grid
        .iter()
        .map(|(l, m)| format!("{l}: {:.1} / {:.2}", 100.0 * m.goodput(), m.p99))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "| {} | {} | {:.2} B | {:.2} B | {} ({:.2} C){} | {:.1} % | {:.2} B | {:.1} % | {at_c} | {sweep} |",
        scenario.name,
        scenario.what,
        reference.no_load_p99,
        reference.slo,
        reference.limit(),
        f64::from(reference.limit()) / model().c,
        match (reference.within, reference.best + 1 == reference.grid.len()) {
            (false, _) => ", none within the SLO",
            (true, true) => ", the grid's top",
            (true, false) => "",
        },
        100.0 * best.goodput(),
        best.p99,
        100.0 * best.rejected,
    )
}

/// The row of one limiter in a real scenario.
pub(crate) fn row(
    scenario: &Scenario,
    reference: &Reference,
    kind: Kind,
    measure: &Measure,
    limits: &Limits,
) -> String {
    format!(
        "| {} | {} | {:.1} % | {:.1} % | {:.2} B | {:.2} B | {:.1} % | {:.2} ({:.2}-{:.2}) | {:.1} % | {} | {} |",
        scenario.name,
        kind.name(),
        100.0 * measure.goodput(),
        100.0 * measure.good as f64 / reference.measure().good.max(1) as f64,
        measure.p50,
        measure.p99,
        100.0 * measure.rejected,
        limits.mean,
        limits.min,
        limits.max,
        100.0 * limits.collapsed,
        limits.settles(),
        limits
            .drift
            .map_or_else(String::new, |d| format!("{d:+.3} L*")),
    )
}

/// The targets table of every capacity, then the count of passes per
/// target.
pub(crate) fn print_targets(verdicts: &[Verdict]) {
    println!(
        "Targets of issue 29 (ours against the best static limit in hindsight L*, and against tower-resilience's layers with the SLO as their latency bound, comparisons as printed: 0.1 %, 0.01 B; SLO = {SLO_MULTIPLE} x the no-load p99; settled p99 from {} s)\n",
        SETTLED_FROM_NS / 1_000_000_000
    );
    println!("| C | scenario | algorithm | {} |", TARGETS.join(" | "));
    println!("|---|---|---|{}", "---|".repeat(TARGETS.len()));
    for v in verdicts {
        let cells: Vec<String> = v.checks.iter().map(Check::cell).collect();
        println!(
            "| {} | {} | {} | {} |",
            v.c,
            v.scenario,
            v.kind.name(),
            cells.join(" | ")
        );
    }
    println!();
    let (mut passed, mut checked) = (0, 0);
    for (i, target) in TARGETS.iter().enumerate() {
        let results: Vec<bool> = verdicts.iter().filter_map(|v| v.checks[i].pass).collect();
        let pass = results.iter().filter(|p| **p).count();
        passed += pass;
        checked += results.len();
        let verdict = if results.is_empty() {
            "n/a"
        } else if pass == results.len() {
            "PASS"
        } else {
            "FAIL"
        };
        println!("{verdict} {target}: {pass} of {}", results.len());
    }
    println!("{passed} of {checked} checks pass");
}
