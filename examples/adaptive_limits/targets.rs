//! The targets, checked for each of our algorithms in each
//! scenario: PASS or FAIL with the value measured.
//!
//! Better than tower-resilience (issue 29) is two checks, in every
//! scenario ([`against_tower`], for the real dependencies too): **not
//! dominated**, neither of its layers (`Aimd`, `Vegas`) has a goodput at
//! least ours and a p99 at most ours with one of them strictly better; and
//! **goodput ≥ each tower layer within the bound**, ours at least that of
//! each layer whose settled p99 is within the latency bound (2 B here, the
//! scenario's SLO for the real dependencies). Goodput and p99 are compared
//! as printed (0.1 %, 0.01 B): a difference too small to print is none.

use crate::SLO;
use crate::report::{Report, SETTLE_NS};

/// The targets, as the table's header names them.
pub(crate) const TARGETS: [&str; 6] = [
    "settles within ±25 % of C in 5 s (probes aside)",
    "p99 settled ≤ 2 B",
    "goodput ≥ 90 %",
    "no drift: < 1.5 C, ≤ +0.02 C",
    "not dominated by a tower layer (goodput, p99)",
    "goodput ≥ each tower layer's whose settled p99 ≤ 2 B",
];

/// One target in one scenario: `None` where it does not apply (the drift
/// of a short run).
pub(crate) struct Check {
    pub(crate) pass: Option<bool>,
    pub(crate) value: String,
}

impl Check {
    pub(crate) fn cell(&self) -> String {
        match self.pass {
            None => "n/a".to_owned(),
            Some(true) => format!("PASS {}", self.value),
            Some(false) => format!("FAIL {}", self.value),
        }
    }
}

pub(crate) fn check(pass: bool, value: String) -> Check {
    Check {
        pass: Some(pass),
        value,
    }
}

/// What a limiter did, as the comparisons with tower-resilience read it:
/// its name, goodput (a share), p99 and settled p99 (in `B`).
#[derive(Clone, Copy)]
pub(crate) struct Score {
    pub(crate) name: &'static str,
    pub(crate) goodput: f64,
    pub(crate) p99: f64,
    pub(crate) p99_settled: f64,
}

impl Score {
    /// From a report of the uniform scenarios.
    pub(crate) fn of(report: &Report, name: &'static str) -> Score {
        Score {
            name,
            goodput: report.goodput,
            p99: report.p99,
            p99_settled: report.p99_settled,
        }
    }

    /// The goodput and the p99s as printed (0.1 %, 0.01 B): a difference
    /// too small to print is no difference.
    fn goodput(&self) -> i64 {
        (self.goodput * 1000.0).round() as i64
    }

    fn p99(&self) -> i64 {
        (self.p99 * 100.0).round() as i64
    }

    fn p99_settled(&self) -> i64 {
        (self.p99_settled * 100.0).round() as i64
    }

    /// Whether `self` dominates `other`: at least as good on both goodput
    /// and p99, strictly better on one.
    fn dominates(&self, other: &Score) -> bool {
        self.goodput() >= other.goodput()
            && self.p99() <= other.p99()
            && (self.goodput() > other.goodput() || self.p99() < other.p99())
    }
}

/// Ours against tower-resilience's layers: not dominated by either, and a
/// goodput at least that of each whose settled p99 is within `bound` (in
/// `B`).
pub(crate) fn against_tower(ours: &Score, towers: &[Score], bound: f64) -> [Check; 2] {
    let dominating: Vec<&str> = towers
        .iter()
        .filter(|t| t.dominates(ours))
        .map(|t| t.name)
        .collect();
    let scores = towers
        .iter()
        .map(|t| format!("{} {:.1} % {:.2} B", t.name, 100.0 * t.goodput, t.p99))
        .collect::<Vec<_>>()
        .join(", ");
    let not_dominated = check(
        dominating.is_empty(),
        format!(
            "ours {:.1} % {:.2} B; {scores}{}",
            100.0 * ours.goodput,
            ours.p99,
            if dominating.is_empty() {
                String::new()
            } else {
                format!("; dominated by {}", dominating.join(", "))
            }
        ),
    );
    let bound_at = (bound * 100.0).round() as i64;
    let within: Vec<&Score> = towers
        .iter()
        .filter(|t| t.p99_settled() <= bound_at)
        .collect();
    let goodput = if within.is_empty() {
        check(true, format!("no tower layer within {bound:.2} B"))
    } else {
        let peers = within
            .iter()
            .map(|t| format!("{} {:.1} %", t.name, 100.0 * t.goodput))
            .collect::<Vec<_>>()
            .join(", ");
        check(
            within.iter().all(|t| ours.goodput() >= t.goodput()),
            format!("{:.1} % vs {peers}", 100.0 * ours.goodput),
        )
    };
    [not_dominated, goodput]
}

/// Our `report` against the targets, next to tower-resilience's AIMD and
/// Vegas on the same scenario, in the order of [`TARGETS`].
pub(crate) fn checks(report: &Report, tower_aimd: &Report, tower_vegas: &Report) -> Vec<Check> {
    let settles = report
        .settles
        .iter()
        .map(|s| s.map_or_else(|| "never".to_owned(), |s| format!("{s:.1}")))
        .collect::<Vec<_>>()
        .join(" / ");
    let limit_cap = 1.5;
    let drift = match (report.settled_max, report.drift) {
        (Some(most), Some(drift)) => check(
            most < limit_cap && drift <= 0.02,
            format!(
                "max {most:.2} C from {} s, drift {drift:+.3} C",
                SETTLE_NS / 1_000_000_000
            ),
        ),
        _ => Check {
            pass: None,
            value: String::new(),
        },
    };
    let mut all = vec![
        check(
            report.settle().is_some_and(|s| s <= 5.0),
            format!("{settles} s"),
        ),
        check(
            report.p99_settled <= SLO,
            format!("{:.2} B", report.p99_settled),
        ),
        check(
            report.goodput >= 0.9,
            format!("{:.1} %", 100.0 * report.goodput),
        ),
        drift,
    ];
    let towers = [
        Score::of(tower_aimd, "Aimd"),
        Score::of(tower_vegas, "Vegas"),
    ];
    all.extend(against_tower(&Score::of(report, "ours"), &towers, SLO));
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn score(name: &'static str, goodput: f64, p99: f64, p99_settled: f64) -> Score {
        Score {
            name,
            goodput,
            p99,
            p99_settled,
        }
    }

    #[test]
    fn a_tower_layer_dominates_only_when_better_on_one_and_no_worse_on_the_other() {
        let ours = score("ours", 0.98, 1.20, 1.20);
        let verdict = |tower: Score| against_tower(&ours, &[tower], 2.0)[0].pass;
        assert_eq!(verdict(score("Aimd", 0.99, 1.20, 1.2)), Some(false));
        assert_eq!(verdict(score("Aimd", 0.98, 1.19, 1.2)), Some(false));
        // A trade-off is no domination, and neither is a tie.
        assert_eq!(verdict(score("Aimd", 0.99, 1.21, 1.2)), Some(true));
        assert_eq!(verdict(score("Aimd", 0.98, 1.20, 1.2)), Some(true));
        // A difference too small to print (0.1 %, 0.01 B) is none.
        assert_eq!(verdict(score("Aimd", 0.9804, 1.196, 1.2)), Some(true));
    }

    #[test]
    fn goodput_is_held_only_against_layers_within_the_bound() {
        let ours = score("ours", 0.95, 1.20, 1.20);
        let aimd = score("Aimd", 0.99, 2.30, 2.40);
        let vegas = score("Vegas", 0.90, 1.10, 1.10);
        let [_, goodput] = against_tower(&ours, &[aimd, vegas], 2.0);
        assert_eq!(goodput.pass, Some(true), "{}", goodput.value);
        let [_, goodput] = against_tower(&ours, &[aimd, vegas], 2.5);
        assert_eq!(goodput.pass, Some(false), "{}", goodput.value);
        let [_, goodput] = against_tower(&ours, &[aimd], 2.0);
        assert_eq!(goodput.pass, Some(true), "{}", goodput.value);
        assert!(goodput.value.contains("no tower layer within"));
    }
}
