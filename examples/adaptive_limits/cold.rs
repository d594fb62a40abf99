//! A cold start into an outage (issue 29, item 3): "a dependency that hangs
//! or fails from the first call lowers the limit within the first windows,
//! for every algorithm".
//!
//! The scenarios (`scenarios.rs`; `--only cold`, or by name), 80 % load on
//! the uniform dependency, 90 s:
//!
//! - `cold-hang`: from t = 0 to [`OUTAGE_S`] every admitted call hangs; the
//!   caller's timeout drops it after [`TIMEOUT_B`] base latencies (1 s at
//!   B = 100 ms). Ours are told `CallOutcome::Dropped`, a congestion signal
//!   for every algorithm from the first call on (the adaptive guide, "How
//!   it works"); tower-resilience's layer sees its future dropped and calls
//!   its algorithm's `record_dropped`, which its `Aimd` and `Vegas` ignore.
//! - `cold-fail`: from t = 0 to [`OUTAGE_S`] every admitted call fails at
//!   once with an error. The guide says an error is counted but is no
//!   congestion signal unless `Sampling::errors_as_drops`: so ours run
//!   twice here, with the default sampling (the row says what the default
//!   did, and is held to the documented behaviour: errors alone do not cut)
//!   and with `errors_as_drops(true)` (held to the target).
//!   tower-resilience's layer calls `record_failure`, which cuts its
//!   algorithms.
//!
//! Then the dependency serves as in the uniform scenarios for a minute.
//!
//! Per limiter: when the limit in force, outside a probe, first fell below
//! the initial limit (the time of the event that did it, and the windows
//! its algorithm had closed by then, from the bulkhead's
//! `AdaptiveSnapshot::windows`); the limit at 5 s and at 29 s; how long
//! after the recovery it first reached the band around `C` (0.75 C, outside
//! a probe); and the verdict:
//!
//! **Lowered within the first windows**: below the initial limit (outside
//! a probe) by [`BOUND_S`] = 3 s, three of the longest windows
//! (`Sampling::max_window`, 1 s by default). A window lasts at most
//! `max_window` unless its limit bound and too few calls ended, and a
//! window whose drops are over the tolerance closes as soon as it is
//! `max_window` old; in a hang no call ends before the timeout (1 s), so
//! the first window that can see a drop closes at about 1 s, and two more
//! windows are allowed for the algorithm to act. For the failures with the
//! default sampling the verdict is the documented one instead: **errors
//! alone do not lower the limit** (not below the initial limit outside a
//! probe before the recovery). Only ours' verdicts are counted; tower's
//! are printed for comparison.

use bulkhead::Adaptive;

use crate::limiters::{Kind, Limiter};
use crate::report::BAND;
use crate::scenarios::{OUTAGE_S, Outage, Scenario, TIMEOUT_B};
use crate::simulate::{Run, secs, simulate_observed};
use crate::targets::{Check, check};
use crate::{initial, model};

/// The bound of the target: three `max_window`s (1 s each by default).
pub(crate) const BOUND_S: f64 = 3.0;

/// One limiter's cold start.
pub(crate) struct Trial {
    pub(crate) scenario: &'static str,
    pub(crate) kind: Kind,
    /// Ours with `Sampling::errors_as_drops(true)`.
    pub(crate) errors_as_drops: bool,
    /// When the limit first fell below the initial limit outside a probe,
    /// in seconds, and the windows closed by then (ours).
    pub(crate) first_cut: Option<(f64, Option<u64>)>,
    /// The limit at 5 s and at 29 s.
    pub(crate) at_5: u32,
    pub(crate) at_29: u32,
    /// Seconds after the recovery until the limit first reached 0.75 C
    /// outside a probe.
    pub(crate) regrown: Option<f64>,
    pub(crate) check: Check,
}

impl Trial {
    /// The limiter's name, with its sampling if not the default.
    pub(crate) fn name(&self) -> String {
        if self.errors_as_drops {
            format!("{} (errors_as_drops)", self.kind.name())
        } else {
            self.kind.name().to_owned()
        }
    }

    /// Whether the verdict is counted: ours only.
    pub(crate) fn counted(&self) -> bool {
        self.kind.ours()
    }
}

/// The limiters of `scenario`: our three, again with `errors_as_drops`
/// where the outage fails calls, and tower-resilience's two.
pub(crate) fn trials(scenario: &Scenario) -> Vec<Trial> {
    let fails = scenario
        .phases
        .iter()
        .any(|p| p.outage == Some(Outage::Fail));
    let ours = [Adaptive::Aimd, Adaptive::Vegas, Adaptive::Gradient2];
    let mut all: Vec<Trial> = ours
        .iter()
        .map(|&a| trial(scenario, Kind::Ours(a), false))
        .collect();
    if fails {
        all.extend(ours.iter().map(|&a| trial(scenario, Kind::Ours(a), true)));
    }
    all.push(trial(scenario, Kind::TowerAimd, false));
    all.push(trial(scenario, Kind::TowerVegas, false));
    all
}

/// One limiter through `scenario`.
pub(crate) fn trial(scenario: &Scenario, kind: Kind, errors_as_drops: bool) -> Trial {
    let limiter = match kind {
        Kind::Ours(adaptive) if errors_as_drops => Limiter::errors_as_drops(adaptive),
        _ => Limiter::new(kind),
    };
    let start = initial();
    let mut first_cut = None;
    let run = simulate_observed(scenario, kind, limiter, |now, limiter| {
        if first_cut.is_none() && !limiter.probing() && limiter.limit() < start {
            first_cut = Some((secs(now), limiter.windows()));
        }
    });
    let recovery = OUTAGE_S * 1_000_000_000;
    let regrown = run
        .rows
        .iter()
        .find(|r| r.at >= recovery && !r.probing && f64::from(r.limit) >= BAND.0 * model().c)
        .map(|r| secs(r.at - recovery));
    let documented = kind.ours()
        && !errors_as_drops
        && scenario
            .phases
            .iter()
            .any(|p| p.outage == Some(Outage::Fail));
    let check = if documented {
        let before = first_cut.filter(|(at, _)| *at < OUTAGE_S as f64);
        check(
            before.is_none(),
            before.map_or_else(
                || "not cut by errors".to_owned(),
                |(at, _)| format!("cut at {at:.2} s"),
            ),
        )
    } else {
        check(
            first_cut.is_some_and(|(at, _)| at <= BOUND_S),
            first_cut.map_or_else(|| "never".to_owned(), |(at, _)| format!("{at:.2} s")),
        )
    };
    Trial {
        scenario: scenario.name,
        kind,
        errors_as_drops,
        first_cut,
        at_5: limit_at(&run, 5),
        at_29: limit_at(&run, OUTAGE_S - 1),
        regrown,
        check,
    }
}

/// The limit of the trace row at `seconds`.
fn limit_at(run: &Run, seconds: u64) -> u32 {
    run.rows
        .iter()
        .find(|r| r.at >= seconds * 1_000_000_000)
        .map_or(0, |r| r.limit)
}

/// The row of one trial.
pub(crate) fn row(trial: &Trial) -> String {
    let (first, windows) = match trial.first_cut {
        None => ("never".to_owned(), String::new()),
        Some((at, windows)) => (
            format!("{at:.2} s"),
            windows.map_or_else(|| "n/a".to_owned(), |w| w.to_string()),
        ),
    };
    format!(
        "| {} | {} | {first} | {windows} | {} | {} | {} | {}{} |",
        trial.scenario,
        trial.name(),
        trial.at_5,
        trial.at_29,
        trial
            .regrown
            .map_or_else(|| "never".to_owned(), |s| format!("{s:.1} s")),
        trial.check.cell(),
        if trial.counted() {
            ""
        } else {
            " (not counted)"
        },
    )
}

/// Every cold-start scenario at the model of the time: the table on stdout
/// and the count of ours' passes.
pub(crate) fn run(scenarios: &[Scenario]) {
    println!(
        "Cold start into an outage (issue 29, item 3): C = {} calls, B = {} ms, 80 % load, initial limit {}, caller's timeout {TIMEOUT_B} B; the outage from 0 to {OUTAGE_S} s, then the uniform service. Target: below the initial limit (outside a probe) by {BOUND_S} s, three max_windows; with errors and the default sampling, the documented behaviour: errors alone do not cut\n",
        model().c,
        model().b * 1000.0,
        initial(),
    );
    println!(
        "| scenario | limiter | first cut below the initial limit | windows closed by then | limit at 5 s | limit at 29 s | back to 0.75 C after the recovery | verdict |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut counted = Vec::new();
    for scenario in scenarios {
        for trial in trials(scenario) {
            println!("{}", row(&trial));
            if trial.counted() {
                counted.extend(trial.check.pass);
            }
        }
    }
    let pass = counted.iter().filter(|p| **p).count();
    println!(
        "\n{} cold start (ours): {pass} of {}",
        if pass == counted.len() {
            "PASS"
        } else {
            "FAIL"
        },
        counted.len()
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::COLD;
    use crate::{DEFAULT_MODEL, MODEL, selected};

    /// The cold start `name` at the default model (`--quick`).
    fn cold(name: &str) -> Scenario {
        MODEL.set(DEFAULT_MODEL);
        let mut all = selected(true, &[name], None);
        assert_eq!(all.len(), 1);
        all.remove(0)
    }

    #[test]
    fn cold_group_names_the_cold_starts_and_only_them() {
        let names: Vec<&str> = selected(true, &[COLD], None)
            .iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(names, ["cold-hang", "cold-fail"]);
        assert!(selected(true, &[], None).iter().all(|s| !s.cold()));
        assert!(selected(false, &[], None).iter().all(|s| !s.cold()));
    }

    #[test]
    fn every_algorithm_of_ours_cuts_a_hang_within_three_windows_and_regrows() {
        let scenario = cold("cold-hang");
        for trial in trials(&scenario).iter().filter(|t| t.counted()) {
            let (at, windows) = trial.first_cut.expect("the limit was cut");
            assert!(at <= BOUND_S, "{}: cut at {at} s", trial.name());
            assert!(
                windows.is_some_and(|w| w <= 3),
                "{}: {windows:?} windows",
                trial.name()
            );
            assert!(trial.at_29 < initial(), "{}: {}", trial.name(), trial.at_29);
            assert!(trial.regrown.is_some(), "{}: never regrew", trial.name());
            assert_eq!(trial.check.pass, Some(true));
        }
    }

    #[test]
    fn errors_cut_ours_only_as_drops() {
        let scenario = cold("cold-fail");
        let all = trials(&scenario);
        assert_eq!(all.iter().filter(|t| t.counted()).count(), 6);
        for trial in all.iter().filter(|t| t.counted()) {
            let before = trial
                .first_cut
                .filter(|(at, _)| *at < OUTAGE_S as f64)
                .map(|(at, _)| at);
            if trial.errors_as_drops {
                assert!(
                    before.is_some_and(|at| at <= BOUND_S),
                    "{}: {before:?}",
                    trial.name()
                );
            } else {
                assert_eq!(before, None, "{}", trial.name());
            }
            assert_eq!(trial.check.pass, Some(true), "{}", trial.name());
        }
    }

    #[test]
    fn a_cold_start_prints_the_same_twice() {
        let scenario = cold("cold-hang");
        let print = || trials(&scenario).iter().map(row).collect::<Vec<_>>();
        assert_eq!(print(), print());
    }
}
