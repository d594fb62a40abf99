//! The targets, checked for each of our algorithms in each
//! scenario: PASS or FAIL with the value measured.

use crate::SLO;
use crate::report::{Report, SETTLE_NS};

/// The targets, as the table's header names them.
pub(crate) const TARGETS: [&str; 8] = [
    "settles within ±25 % of C in 5 s (probes aside)",
    "p99 settled ≤ 2 B",
    "goodput ≥ 90 %",
    "no drift: < 1.5 C, ≤ +0.02 C",
    "p99 ≤ tower Aimd",
    "p99 ≤ tower Vegas",
    "goodput ≥ tower Aimd",
    "goodput ≥ tower Vegas",
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

/// The p99 and the goodput as printed (0.01 B, 0.1 %): a difference too
/// small to print is no difference.
fn p99(report: &Report) -> i64 {
    (report.p99 * 100.0).round() as i64
}

fn goodput(report: &Report) -> i64 {
    (report.goodput * 1000.0).round() as i64
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
    for peer in [tower_aimd, tower_vegas] {
        all.push(check(
            p99(report) <= p99(peer),
            format!("{:.2} vs {:.2} B", report.p99, peer.p99),
        ));
    }
    for peer in [tower_aimd, tower_vegas] {
        all.push(check(
            goodput(report) >= goodput(peer),
            format!(
                "{:.1} vs {:.1} %",
                100.0 * report.goodput,
                100.0 * peer.goodput
            ),
        ));
    }
    all
}
