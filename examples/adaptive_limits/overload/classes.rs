//! `sheddable-spike`: a 10x spike of Sheddable traffic over Critical
//! traffic at 60 % of capacity.
//!
//! Critical callers arrive (Poisson) at 0.6 C/B throughout; Sheddable ones
//! at 0.2 C/B, then at 6 C/B (ten times the Critical rate) for the middle
//! third. Every caller waits at most `max_wait` = 1 B for a slot and gives
//! up after 2 B. The arms, on the same callers:
//!
//! - (a) today: one bulkhead at C, no classes;
//! - (b) one bulkhead at C, each call in its class's scope
//!   (`bulkhead::priority::scope`), the default `shed_at` (Sheddable 0.5);
//! - (c) two bulkheads sized by hand: Critical 0.7 C, Sheddable 0.3 C.
//!
//! Reported, over the run and in the spike (callers arriving in it): the
//! share of Critical callers admitted, the p50 and p99 of admitted
//! Critical calls (arrival to answer), Sheddable goodput (answers within
//! the caller's patience, as a share of the capacity `C / B`); and the
//! capacity left idle in the spike. Targets (arm b): Critical admitted ≥
//! 99.9 %, Critical p99 ≤ 1.2 B, each over the run and in the spike (the
//! calm two thirds must not hide what the spike does).

use std::collections::hash_map::DefaultHasher;
use std::fmt::Write;

use super::waiters::{Caller, Class, Outcome, merge, poisson};
use super::{Arm, Check, Setting, Verdicts, base, quantiles, toml};
use crate::model;

pub(crate) const NAME: &str = "sheddable-spike";

/// Critical load, Sheddable load outside and in the spike (in `C / B`).
const CRITICAL: f64 = 0.6;
const SHEDDABLE: f64 = 0.2;
const SPIKE: f64 = 10.0 * CRITICAL;
/// How long a caller waits for a slot, and when it gives up (in `B`).
const MAX_WAIT_B: f64 = 1.0;
const PATIENCE_B: f64 = 2.0;
/// The shares of `C` of arm c's bulkheads.
const CRITICAL_SHARE: f64 = 0.7;
const SHEDDABLE_SHARE: f64 = 0.3;

const COLUMNS: [&str; 6] = [
    "Critical admitted (run / spike)",
    "Critical p50 (run / spike)",
    "Critical p99 (run / spike)",
    "Sheddable goodput (run / spike)",
    "idle capacity in spike",
    "wake-ups (for nothing)",
];

const TARGETS: [&str; 2] = [
    "Critical admitted ≥ 99.9 % (run / spike)",
    "Critical p99 ≤ 1.2 B (run / spike)",
];

fn arms() -> Vec<Arm> {
    let c = model().c;
    let max_wait = base(MAX_WAIT_B);
    let one = toml("dependency", c.round() as u32, max_wait, "");
    let two = toml(
        "critical",
        (CRITICAL_SHARE * c).round() as u32,
        max_wait,
        "",
    ) + &toml(
        "sheddable",
        (SHEDDABLE_SHARE * c).round() as u32,
        max_wait,
        "",
    );
    vec![
        Arm {
            label: "(a) today: one bulkhead at C, no classes",
            toml: one.clone(),
            ids: &["dependency"],
            lane: |_| 0,
            classed: false,
            deadline: false,
            targeted: false,
        },
        Arm {
            label: "(b) one bulkhead at C, per-call classes",
            toml: one,
            ids: &["dependency"],
            lane: |_| 0,
            classed: true,
            deadline: false,
            targeted: true,
        },
        Arm {
            label: "(c) two bulkheads: Critical 0.7 C, Sheddable 0.3 C",
            toml: two,
            ids: &["critical", "sheddable"],
            lane: |class| usize::from(class != Class::Critical),
            classed: false,
            deadline: false,
            targeted: false,
        },
    ]
}

/// The run's length (s): the spike is its middle third.
fn seconds(quick: bool) -> u64 {
    if quick { 30 } else { 300 }
}

/// Every caller: Critical and Sheddable streams of their own seeds.
fn callers(seconds: u64) -> Vec<Caller> {
    let end = seconds * 1_000_000_000;
    let (from, to) = (end / 3, 2 * end / 3);
    let per_second = |load: f64| load * model().c / model().b;
    let critical = poisson(0xC417, Class::Critical, end, |_| per_second(CRITICAL));
    let sheddable = poisson(0x5ED, Class::Sheddable, end, |t| {
        per_second(if (from..to).contains(&t) {
            SPIKE
        } else {
            SHEDDABLE
        })
    });
    merge(vec![critical, sheddable])
}

/// The Critical callers of a stretch: the share admitted, the p50 and p99
/// of the admitted (in `B`).
struct Critical {
    admitted: f64,
    p50: f64,
    p99: f64,
}

impl Critical {
    /// Of the Critical callers arriving from `from` to `to` (ns).
    fn of(callers: &[Caller], outcome: &Outcome, from: u64, to: u64) -> Critical {
        let critical = || {
            callers
                .iter()
                .zip(&outcome.fates)
                .filter(|(c, _)| c.class == Class::Critical && (from..to).contains(&c.at))
        };
        let arrived = critical().count();
        let admitted = critical().filter(|(_, f)| f.started.is_some()).count();
        let (p50, p99) = quantiles(critical().filter_map(|(c, f)| f.done.map(|d| d - c.at)));
        Critical {
            admitted: admitted as f64 / arrived.max(1) as f64,
            p50,
            p99,
        }
    }
}

/// What one arm did, over the run and in the spike.
struct Measure {
    critical: Critical,
    critical_spike: Critical,
    sheddable_goodput: f64,
    sheddable_goodput_spike: f64,
    idle_spike: f64,
    wakeups: u64,
    idle_wakeups: u64,
}

impl Measure {
    fn of(callers: &[Caller], outcome: &Outcome, seconds: u64) -> Measure {
        let patience = base(PATIENCE_B);
        let end = seconds * 1_000_000_000;
        let (from, to) = (end / 3, 2 * end / 3);
        // Answers within patience, per second, against `C / B`.
        let goodput = |from: u64, to: u64| {
            let answered = callers
                .iter()
                .zip(&outcome.fates)
                .filter(|(c, f)| {
                    c.class == Class::Sheddable
                        && f.done
                            .is_some_and(|d| d <= c.at + patience && (from..to).contains(&d))
                })
                .count();
            answered as f64 / ((to - from) as f64 / 1e9) / (model().c / model().b)
        };
        Measure {
            critical: Critical::of(callers, outcome, 0, end),
            critical_spike: Critical::of(callers, outcome, from, to),
            sheddable_goodput: goodput(0, end),
            sheddable_goodput_spike: goodput(from, to),
            idle_spike: outcome.idle((seconds / 3) as usize, (2 * seconds / 3) as usize),
            wakeups: outcome.wakeups,
            idle_wakeups: outcome.idle_wakeups,
        }
    }

    /// Each target over the run and in the spike: both must hold.
    fn checks(&self) -> Vec<Check> {
        let (run, spike) = (&self.critical, &self.critical_spike);
        vec![
            Check::new(
                run.admitted >= 0.999 && spike.admitted >= 0.999,
                format!(
                    "{:.2} % / {:.2} %",
                    100.0 * run.admitted,
                    100.0 * spike.admitted
                ),
            ),
            Check::new(
                run.p99 <= 1.2 && spike.p99 <= 1.2,
                format!("{:.2} B / {:.2} B", run.p99, spike.p99),
            ),
        ]
    }
}

pub(crate) fn run(quick: bool, out: &mut String, hash: &mut DefaultHasher) -> Verdicts {
    let seconds = seconds(quick);
    let callers = callers(seconds);
    let _ = writeln!(
        out,
        "{NAME}: Critical at {CRITICAL} C/B throughout, Sheddable at {SHEDDABLE} C/B then {SPIKE} C/B from {} s to {} s ({seconds} s, {} callers); max_wait {MAX_WAIT_B} B, callers give up after {PATIENCE_B} B\n",
        seconds / 3,
        2 * seconds / 3,
        callers.len()
    );
    let setting = Setting {
        name: NAME,
        columns: &COLUMNS,
        targets: &TARGETS,
        callers: &callers,
        max_wait: base(MAX_WAIT_B),
        patience: base(PATIENCE_B),
        end: seconds * 1_000_000_000,
    };
    setting.run(&arms(), out, hash, |outcome| {
        let m = Measure::of(&callers, outcome, seconds);
        let (run, spike) = (&m.critical, &m.critical_spike);
        let cells = vec![
            format!(
                "{:.2} % / {:.2} %",
                100.0 * run.admitted,
                100.0 * spike.admitted
            ),
            format!("{:.2} B / {:.2} B", run.p50, spike.p50),
            format!("{:.2} B / {:.2} B", run.p99, spike.p99),
            format!(
                "{:.1} % / {:.1} %",
                100.0 * m.sheddable_goodput,
                100.0 * m.sheddable_goodput_spike
            ),
            format!("{:.1} %", 100.0 * m.idle_spike),
            format!("{} ({})", m.wakeups, m.idle_wakeups),
        ];
        (cells, m.checks())
    })
}
