//! Overload that knows who is calling (issue 30; `docs/design/overload.md`
//! section 5.1): real bulkheads under waiting callers (`waiters.rs`), in
//! two scenarios, each arm on the same callers, side by side.
//!
//! - `sheddable-spike` (`classes.rs`): a 10x spike of Sheddable traffic
//!   over Critical traffic at 60 % of capacity: one bulkhead without
//!   classes (today), one with per-call classes, two bulkheads sized by
//!   hand.
//! - `overload-1.5x` (`queues.rs`): 1.5x sustained overload, callers giving
//!   up after 2 B: today's FIFO queue, FIFO under each caller's deadline,
//!   `lifo`, `codel`.
//!
//! Run only when named: `--only overload` (both), or either by name;
//! `--quick` runs 30 simulated seconds instead of 300.

mod classes;
mod queues;
mod waiters;

pub(crate) use waiters::Flag;

use std::collections::hash_map::DefaultHasher;
use std::fmt::Write;
use std::hash::{Hash, Hasher};
use std::time::Instant;

use waiters::{Caller, Class, Door, Lanes, Outcome, Scope};

use crate::model;
use crate::report::{percentile, sorted};

/// A call in its class's scope (`bulkhead::priority::scope`).
const CLASSED: Scope<Class> = |class, entering| {
    let class = match class {
        Class::Critical => bulkhead::Priority::Critical,
        Class::Normal => bulkhead::Priority::Normal,
        Class::Sheddable => bulkhead::Priority::Sheddable,
    };
    Box::pin(bulkhead::priority::scope(class, entering))
};

/// A call in its deadline's scope (`bulkhead::deadline::scope`).
const DEADLINED: Scope<Instant> =
    |deadline, entering| Box::pin(bulkhead::deadline::scope(deadline, entering));

/// The names `--only` knows: the group and each scenario.
pub(crate) const GROUP: &str = "overload";
const NAMES: [&str; 2] = [classes::NAME, queues::NAME];

/// Whether `name` is one of ours.
pub(crate) fn named(name: &str) -> bool {
    name == GROUP || NAMES.contains(&name)
}

/// One way of facing a scenario: its bulkheads (TOML: the lanes `ids`),
/// which lane each class takes, what scopes each call gets.
pub(crate) struct Arm {
    pub(crate) label: &'static str,
    pub(crate) toml: String,
    pub(crate) ids: &'static [&'static str],
    pub(crate) lane: fn(Class) -> usize,
    /// Each call in its class's scope.
    pub(crate) classed: bool,
    /// Each call in its deadline's scope.
    pub(crate) deadline: bool,
    /// Whether the issue sets its targets for this arm.
    pub(crate) targeted: bool,
}

impl Arm {
    /// Runs `callers` until `end` (ns), waiting at most `max_wait` in its
    /// bulkheads, each caller giving up after `patience` (ns).
    fn run(&self, callers: &[Caller], max_wait: u64, patience: u64, end: u64) -> Outcome {
        let lanes = Lanes::new(&self.toml, self.ids)
            .unwrap_or_else(|e| panic!("{}: its bulkheads: {e}", self.label));
        let door = Door {
            lane: self.lane,
            max_wait,
            patience,
            class: self.classed.then_some(CLASSED),
            deadline: self.deadline.then_some(DEADLINED),
        };
        waiters::run(&lanes, &door, callers, end)
    }
}

/// A bulkhead table of TOML: instance `id`, `max_concurrent` `limit`,
/// `max_wait` `max_wait` ns, and `extra` keys.
pub(crate) fn toml(id: &str, limit: u32, max_wait: u64, extra: &str) -> String {
    format!(
        "[bulkhead.instances.{id}]\nmax_concurrent = {limit}\nmax_wait = \"{max_wait}ns\"\n{extra}"
    )
}

/// `b` base latencies, in ns.
pub(crate) fn base(b: f64) -> u64 {
    waiters::nanos(b * model().b)
}

/// The p50 and p99 of `latencies` (ns), in `B`.
pub(crate) fn quantiles(latencies: impl Iterator<Item = u64>) -> (f64, f64) {
    let sorted = sorted(latencies.map(|l| (l as f64 / 1e9 / model().b) as f32));
    (percentile(&sorted, 0.5), percentile(&sorted, 0.99))
}

/// One target of one arm: PASS or FAIL with the value.
pub(crate) struct Check {
    pass: bool,
    value: String,
}

impl Check {
    pub(crate) fn new(pass: bool, value: String) -> Check {
        Check { pass, value }
    }

    fn cell(&self) -> String {
        let verdict = if self.pass { "PASS" } else { "FAIL" };
        format!("{verdict} {}", self.value)
    }
}

/// What every arm of a scenario faces, and what its table shows.
pub(crate) struct Setting<'c> {
    pub(crate) name: &'static str,
    /// The table's columns after the arm's.
    pub(crate) columns: &'static [&'static str],
    pub(crate) targets: &'static [&'static str],
    pub(crate) callers: &'c [Caller],
    /// The longest wait in a bulkhead and a caller's patience, in ns.
    pub(crate) max_wait: u64,
    pub(crate) patience: u64,
    /// The run's end, in ns.
    pub(crate) end: u64,
}

impl Setting<'_> {
    /// Runs each of `arms` on the callers: a row of the table each (the
    /// cells `measure` gives), every fate into
    /// `hash`; its checks.
    pub(crate) fn run(
        &self,
        arms: &[Arm],
        out: &mut String,
        hash: &mut DefaultHasher,
        measure: impl Fn(&Outcome) -> (Vec<String>, Vec<Check>),
    ) -> Verdicts {
        let _ = writeln!(out, "| arm | {} |", self.columns.join(" | "));
        let _ = writeln!(out, "|---|{}", "---|".repeat(self.columns.len()));
        let mut verdicts = Verdicts {
            scenario: self.name,
            targets: self.targets,
            arms: Vec::new(),
        };
        for arm in arms {
            let label = arm.label.to_owned();
            let outcome = arm.run(self.callers, self.max_wait, self.patience, self.end);
            digest(&outcome, hash);
            let (cells, checks) = measure(&outcome);
            let _ = writeln!(out, "| {label} | {} |", cells.join(" | "));
            verdicts.arms.push((label, arm.targeted, checks));
        }
        let _ = writeln!(out);
        verdicts
    }
}

/// A scenario's arms, run: their checks.
pub(crate) struct Verdicts {
    scenario: &'static str,
    targets: &'static [&'static str],
    /// Per arm: its label, whether targeted, its checks.
    arms: Vec<(String, bool, Vec<Check>)>,
}

/// The scenarios `only` names (all for the group), run: their tables, then
/// every target of each arm side by side, and a digest of every caller's
/// fate (for the determinism test).
pub(crate) fn run(only: &[&str], quick: bool) -> (String, u64) {
    let all = only.contains(&GROUP);
    let mut out = String::new();
    let mut digest = DefaultHasher::new();
    let _ = writeln!(
        out,
        "Overload (issue 30): C = {} calls, B = {} ms; real bulkheads on a ManualClock, waiting callers' enter_async futures polled by hand; latency from arrival to answer, in B\n",
        model().c,
        model().b * 1000.0
    );
    let mut verdicts = Vec::new();
    if all || only.contains(&classes::NAME) {
        verdicts.push(classes::run(quick, &mut out, &mut digest));
    }
    if all || only.contains(&queues::NAME) {
        verdicts.push(queues::run(quick, &mut out, &mut digest));
    }
    print_targets(&verdicts, &mut out);
    (out, digest.finish())
}

/// Every fate of `outcome` into `digest`.
fn digest(outcome: &Outcome, digest: &mut DefaultHasher) {
    outcome.fates.hash(digest);
    for busy in &outcome.busy {
        busy.to_bits().hash(digest);
    }
    (outcome.wakeups, outcome.idle_wakeups).hash(digest);
}

fn print_targets(verdicts: &[Verdicts], out: &mut String) {
    let _ = writeln!(
        out,
        "Targets (issue 30; checked for every arm, set for those marked *)\n"
    );
    for v in verdicts {
        let _ = writeln!(out, "| {} | {} |", v.scenario, v.targets.join(" | "));
        let _ = writeln!(out, "|---|{}", "---|".repeat(v.targets.len()));
        for (label, targeted, checks) in &v.arms {
            let cells: Vec<String> = checks.iter().map(Check::cell).collect();
            let mark = if *targeted { " *" } else { "" };
            let _ = writeln!(out, "| {label}{mark} | {} |", cells.join(" | "));
        }
        let _ = writeln!(out);
    }
    let (mut passed, mut checked) = (0, 0);
    for v in verdicts {
        for (i, target) in v.targets.iter().enumerate() {
            let run: Vec<bool> = v
                .arms
                .iter()
                .filter(|(_, targeted, _)| *targeted)
                .map(|(_, _, checks)| checks[i].pass)
                .collect();
            let pass = run.iter().filter(|p| **p).count();
            passed += pass;
            checked += run.len();
            let verdict = if pass == run.len() { "PASS" } else { "FAIL" };
            let _ = writeln!(
                out,
                "{verdict} {}: {target}: {pass} of {} arms",
                v.scenario,
                run.len()
            );
        }
    }
    let _ = writeln!(out, "{passed} of {checked} checks pass");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overload_prints_the_same_bytes_twice() {
        let (first, first_digest) = run(&[GROUP], true);
        let (again, again_digest) = run(&[GROUP], true);
        assert_eq!(first, again, "two runs printed differently");
        assert_eq!(first_digest, again_digest, "two runs differ");
        assert!(first.contains(classes::NAME) && first.contains(queues::NAME));
    }

    #[test]
    fn a_scenario_runs_alone_by_name() {
        let (out, _) = run(&[queues::NAME], true);
        assert!(out.contains(queues::NAME) && !out.contains(classes::NAME));
    }
}
