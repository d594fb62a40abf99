//! `overload-1.5x`: 1.5x sustained overload, callers who give up after
//! 2 B.
//!
//! Callers arrive (Poisson) at 1.5 C/B for the whole run; each waits up to
//! `max_wait` = 2 B for a slot of one bulkhead at C, and gives up (drops
//! its future) after 2 B, its deadline. The arms, on the same callers:
//!
//! - today: `fifo`, no deadline scope;
//! - `fifo` under each caller's deadline (`bulkhead::deadline::scope`);
//! - `lifo` (`queue_target` 0.05 B, `queue_interval` 1 B);
//! - `codel` (the same target and interval).
//!
//! `lifo` and `codel` run under each caller's deadline once the library
//! has deadlines, without it until then (their `max_wait` is the deadline
//! anyway).
//!
//! Reported: goodput (answers delivered to a caller still waiting, as a
//! share of the capacity `C / B`), the p50 and p99 of admitted calls
//! (arrival to answer), the shares admitted and refused, the calls started
//! after their caller's deadline, and those answered after it (work done
//! for nobody). Targets (`lifo`, `codel`): goodput ≥ 95 % of capacity, p50
//! ≤ 1.3 B, no call started after its deadline.

use std::collections::hash_map::DefaultHasher;
use std::fmt::Write;

use super::waiters::{Caller, Class, Outcome, poisson};
use super::{Arm, Check, Setting, Verdicts, base, quantiles, toml};
use crate::model;

pub(crate) const NAME: &str = "overload-1.5x";

/// The load, in `C / B`.
const LOAD: f64 = 1.5;
/// How long a caller waits for a slot, and when it gives up (in `B`).
const MAX_WAIT_B: f64 = 2.0;
const PATIENCE_B: f64 = 2.0;
/// `queue_target` and `queue_interval` of `lifo` and `codel` (in `B`).
const QUEUE_TARGET_B: f64 = 0.05;
const QUEUE_INTERVAL_B: f64 = 1.0;

const COLUMNS: [&str; 9] = [
    "goodput",
    "p50",
    "p99",
    "admitted",
    "refused",
    "gave up waiting",
    "started after deadline",
    "answered after deadline",
    "wake-ups (for nothing)",
];

const TARGETS: [&str; 3] = [
    "goodput ≥ 95 % of capacity",
    "p50 ≤ 1.3 B",
    "no call started after its deadline",
];

fn arms() -> Vec<Arm> {
    let c = model().c.round() as u32;
    let max_wait = base(MAX_WAIT_B);
    let discipline = |queue: &str| {
        toml(
            "dependency",
            c,
            max_wait,
            &format!(
                "queue = \"{queue}\"\nqueue_target = \"{}ns\"\nqueue_interval = \"{}ns\"\n",
                base(QUEUE_TARGET_B),
                base(QUEUE_INTERVAL_B)
            ),
        )
    };
    let arm = |label, toml, deadline, targeted| Arm {
        label,
        toml,
        ids: &["dependency"],
        lane: |_| 0,
        classed: false,
        deadline,
        targeted,
    };
    let fifo = toml("dependency", c, max_wait, "");
    vec![
        arm("today: fifo, max_wait 2 B", fifo.clone(), false, false),
        arm("fifo + deadline 2 B", fifo, true, false),
        arm("lifo + deadline 2 B", discipline("lifo"), true, true),
        arm("codel + deadline 2 B", discipline("codel"), true, true),
    ]
}

/// The run's length (s).
fn seconds(quick: bool) -> u64 {
    if quick { 30 } else { 300 }
}

/// What one arm did.
struct Measure {
    goodput: f64,
    p50: f64,
    p99: f64,
    admitted: f64,
    refused: f64,
    gave_up: f64,
    started_late: usize,
    answered_late: usize,
    wakeups: u64,
    idle_wakeups: u64,
}

impl Measure {
    fn of(callers: &[Caller], outcome: &Outcome, seconds: u64) -> Measure {
        let patience = base(PATIENCE_B);
        let fates = || callers.iter().zip(&outcome.fates);
        let share = |n: usize| n as f64 / callers.len().max(1) as f64;
        let answered = fates()
            .filter(|(c, f)| f.done.is_some_and(|d| d <= c.at + patience))
            .count();
        let (p50, p99) = quantiles(fates().filter_map(|(c, f)| f.done.map(|d| d - c.at)));
        Measure {
            goodput: answered as f64 / seconds as f64 / (model().c / model().b),
            p50,
            p99,
            admitted: share(fates().filter(|(_, f)| f.started.is_some()).count()),
            refused: share(fates().filter(|(_, f)| f.refused.is_some()).count()),
            gave_up: share(fates().filter(|(_, f)| f.gave_up).count()),
            started_late: fates()
                .filter(|(c, f)| f.started.is_some_and(|s| s > c.at + patience))
                .count(),
            answered_late: fates()
                .filter(|(c, f)| f.done.is_some_and(|d| d > c.at + patience))
                .count(),
            wakeups: outcome.wakeups,
            idle_wakeups: outcome.idle_wakeups,
        }
    }

    fn checks(&self) -> Vec<Check> {
        vec![
            Check::new(
                self.goodput >= 0.95,
                format!("{:.1} %", 100.0 * self.goodput),
            ),
            Check::new(self.p50 <= 1.3, format!("{:.2} B", self.p50)),
            Check::new(self.started_late == 0, format!("{}", self.started_late)),
        ]
    }
}

pub(crate) fn run(quick: bool, out: &mut String, hash: &mut DefaultHasher) -> Verdicts {
    let seconds = seconds(quick);
    let end = seconds * 1_000_000_000;
    let callers = poisson(0x0FF, Class::Normal, end, |_| LOAD * model().c / model().b);
    let _ = writeln!(
        out,
        "{NAME}: callers at {LOAD} C/B ({seconds} s, {} callers); max_wait {MAX_WAIT_B} B, callers give up after {PATIENCE_B} B (their deadline); lifo and codel: queue_target {QUEUE_TARGET_B} B, queue_interval {QUEUE_INTERVAL_B} B\n",
        callers.len()
    );
    let setting = Setting {
        name: NAME,
        columns: &COLUMNS,
        targets: &TARGETS,
        callers: &callers,
        max_wait: base(MAX_WAIT_B),
        patience: base(PATIENCE_B),
        end,
    };
    setting.run(&arms(), out, hash, |outcome| {
        let m = Measure::of(&callers, outcome, seconds);
        let cells = vec![
            format!("{:.1} %", 100.0 * m.goodput),
            format!("{:.2} B", m.p50),
            format!("{:.2} B", m.p99),
            format!("{:.1} %", 100.0 * m.admitted),
            format!("{:.1} %", 100.0 * m.refused),
            format!("{:.1} %", 100.0 * m.gave_up),
            m.started_late.to_string(),
            m.answered_late.to_string(),
            format!("{} ({})", m.wakeups, m.idle_wakeups),
        ];
        (cells, m.checks())
    })
}
