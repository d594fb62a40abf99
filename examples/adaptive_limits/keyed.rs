//! A noisy tenant (issue 31; `--only keyed`, run only when named): one
//! tenant at 100 times the others' rate against a shared dependency, one
//! shared `Bulkhead` beside a `KeyedBulkhead`, on a `ManualClock`.
//!
//! The dependency serves `C` calls at once (the model's, 50 by default);
//! both arms admit at most `C` calls, so every admitted call runs at full
//! speed, its service time drawn (Pareto, alpha 1.5, mean about `B`, cut at
//! 100 B) from `simulate.rs`'s seeded generator, one stream per tenant.
//! Nine quiet tenants each call at 2 % of the capacity (`0.02 C / B` calls
//! a second, 10/s at the default model: about 1 call in flight each); the
//! noisy tenant at 100 times that, 2 C / B, twice what the dependency can
//! serve. Callers wait up to `max_wait` = 1 B in either arm, polled by hand
//! (`enter_async` futures, woken by the library as in `overload/`).
//!
//! The arms:
//!
//! - `shared`: one `Bulkhead`, `max_concurrent` = C, `max_wait` = 1 B;
//! - `keyed`: one `KeyedBulkhead<u32>` (a tenant id per key),
//!   `max_concurrent` = C, `per_key` = C / 2, `max_wait` = 1 B. The sizing:
//!   the noisy tenant may take at most half the dependency; the other
//!   half is left to the nine quiet tenants, whose calls in flight together
//!   are Poisson with mean 9 at the default model (M/G/infinity: 9 x
//!   10/s x 0.1 s, whatever the service's tail), above 25 with probability
//!   about 1e-5. Every tenant gets the same `per_key` (nothing in the
//!   configuration names the noisy one).
//!
//! - `keyed` at `per_key` = 0.8 C, looser: the quiet tenants then meet the
//!   global limit more often and rely on the max-min fair hand-off.
//!
//! Each arm runs twice on the same quiet callers: with the noisy tenant,
//! and without it (the baseline). Targets, for the quiet tenants of each
//! arm: at least 99.9 % of their calls admitted, and their p99 latency
//! (arrival to answer) within 10 % of the baseline's of the same arm.
//! Deterministic: fixed seeds, one thread, the clock moved only here.

use std::cmp::Reverse;
use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BinaryHeap};
use std::fmt::Write;
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bulkhead_core::{
    Bulkhead, BulkheadConfig, BulkheadPermit, KeyedBulkhead, ManualClock, PolicyContext,
};

use crate::model;
use crate::overload::{Flag, base, quantiles};
use crate::scenarios::Service;
use crate::simulate::Random;

/// The name `--only` knows.
pub(crate) const NAME: &str = "keyed";

/// The quiet tenants (ids 1 to 9); the noisy one is 0.
const QUIET: u32 = 9;
const NOISY: u32 = 0;
/// The tenants' keys, borrowed by the callers' futures.
static TENANTS: [u32; 10] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
/// A quiet tenant's load, in `C / B`; the noisy tenant's is `NOISY_X`
/// times it.
const QUIET_LOAD: f64 = 0.02;
const NOISY_X: f64 = 100.0;
/// How long a caller waits for a slot, in `B`, in both arms.
const MAX_WAIT_B: f64 = 1.0;
/// The keyed arm's `per_key`, in `C`; a second keyed arm at
/// `PER_KEY_WIDE_C` shows what a looser sizing costs.
const PER_KEY_C: f64 = 0.5;
const PER_KEY_WIDE_C: f64 = 0.8;
/// The dependency's service times.
const SERVICE: Service = Service::Pareto(1.5);
/// The seed of tenant `t`'s stream is `SEED + t`.
const SEED: u64 = 31;

const TARGETS: [&str; 2] = [
    "quiet admitted ≥ 99.9 %",
    "quiet p99 within 10 % of the baseline's",
];

/// One caller: when it arrives, its tenant, its call's work (seconds).
#[derive(Clone, Copy)]
struct Caller {
    at: u64,
    tenant: u32,
    work: f64,
}

/// Every tenant's Poisson arrivals until `end` (ns), merged in order of
/// arrival (a tie: the lower tenant first); without the noisy tenant
/// unless `noisy`. The quiet tenants' streams are the same either way.
fn callers(noisy: bool, end: u64) -> Vec<Caller> {
    let quiet_rate = QUIET_LOAD * model().c / model().b;
    let mut all = Vec::new();
    for tenant in 0..=QUIET {
        if tenant == NOISY && !noisy {
            continue;
        }
        let rate = if tenant == NOISY {
            NOISY_X * quiet_rate
        } else {
            quiet_rate
        };
        let mut random = Random(SEED + u64::from(tenant));
        let mut at = 0u64;
        loop {
            let gap = -(1.0 - random.unit()).ln() / rate;
            at += ((gap * 1e9).round() as u64).max(1);
            if at >= end {
                break;
            }
            let work = random.work(model().b, SERVICE);
            all.push(Caller { at, tenant, work });
        }
    }
    all.sort_by_key(|c| (c.at, c.tenant));
    all
}

/// A caller's entering future: a permit, or `None` for a refusal.
type Entering<'a> = Pin<Box<dyn Future<Output = Option<BulkheadPermit<'a>>> + 'a>>;

/// What the callers enter.
enum Gate {
    Shared(Bulkhead),
    Keyed(KeyedBulkhead<u32>),
}

impl Gate {
    fn label(&self) -> String {
        match self {
            Gate::Shared(_) => "shared Bulkhead".to_owned(),
            Gate::Keyed(keyed) => format!("KeyedBulkhead, per_key {}", keyed.per_key()),
        }
    }

    fn enter(&self, tenant: u32) -> Entering<'_> {
        let key: &'static u32 = &TENANTS[tenant as usize];
        match self {
            Gate::Shared(bulkhead) => Box::pin(async move { bulkhead.enter_async().await.ok() }),
            Gate::Keyed(keyed) => Box::pin(async move { keyed.enter_async(key).await.ok() }),
        }
    }
}

/// The `per_key` of a keyed arm at `share` of `C`.
fn per_key(share: f64) -> u32 {
    ((share * model().c) as u32).max(1)
}

/// The arm's bulkhead on a `ManualClock` of its own: keyed with `per_key`,
/// else one shared bulkhead.
fn gate(keyed: Option<u32>) -> (Gate, ManualClock) {
    let clock = ManualClock::new();
    let context = PolicyContext::new(Arc::new(clock.clone()));
    let c = model().c as u32;
    let max_wait = Duration::from_nanos(base(MAX_WAIT_B));
    let gate = if let Some(per_key) = keyed {
        let config = BulkheadConfig::builder()
            .max_concurrent(c)
            .per_key(per_key)
            .max_wait(max_wait)
            .build()
            .expect("a valid keyed bulkhead");
        Gate::Keyed(KeyedBulkhead::with_context("dependency", config, context))
    } else {
        let config = BulkheadConfig::builder()
            .max_concurrent(c)
            .max_wait(max_wait)
            .build()
            .expect("a valid bulkhead");
        Gate::Shared(Bulkhead::with_context("dependency", config, context))
    };
    (gate, clock)
}

/// What became of one caller (ns).
#[derive(Clone, Copy, Default, Hash)]
struct Fate {
    started: Option<u64>,
    done: Option<u64>,
    refused: bool,
}

/// One arm's run: every caller's fate, the most calls in service at
/// once, and the slot-seconds the dependency worked.
struct Outcome {
    fates: Vec<Fate>,
    most_in_service: usize,
    busy: f64,
}

struct Run<'a> {
    gate: &'a Gate,
    callers: &'a [Caller],
    now: u64,
    in_service: BinaryHeap<Reverse<(u64, usize)>>,
    permits: BTreeMap<usize, BulkheadPermit<'a>>,
    waiting: BTreeMap<usize, (Entering<'a>, Waker)>,
    woken: Arc<Mutex<Vec<usize>>>,
    fates: Vec<Fate>,
}

/// Runs `callers` through `gate` until every call has ended or been
/// refused: arrivals, answers (a permit dropped) and each waiter's
/// `max_wait` (the clock moved there: the library wakes it) in order.
fn run(gate: &Gate, clock: &ManualClock, callers: &[Caller]) -> Outcome {
    let max_wait = base(MAX_WAIT_B);
    let mut run = Run {
        gate,
        callers,
        now: 0,
        in_service: BinaryHeap::new(),
        permits: BTreeMap::new(),
        waiting: BTreeMap::new(),
        woken: Arc::new(Mutex::new(Vec::new())),
        fates: vec![Fate::default(); callers.len()],
    };
    let mut timers: BinaryHeap<Reverse<u64>> = BinaryHeap::new();
    let mut most_in_service = 0;
    let mut next = 0;
    loop {
        let departure = run.in_service.peek().map_or(u64::MAX, |Reverse(d)| d.0);
        let timer = timers.peek().map_or(u64::MAX, |Reverse(t)| *t);
        let arrival = callers.get(next).map_or(u64::MAX, |c| c.at);
        let t = departure.min(timer).min(arrival);
        if t == u64::MAX {
            break;
        }
        run.now = t;
        let elapsed = clock.elapsed();
        let target = Duration::from_nanos(t);
        if target > elapsed {
            clock.advance(target - elapsed);
        }
        run.poll_woken();
        if t == departure {
            let Reverse((_, id)) = run.in_service.pop().expect("a call in service");
            run.fates[id].done = Some(t);
            drop(run.permits.remove(&id));
        } else if t == timer {
            timers.pop();
        } else {
            if run.arrive(next) {
                timers.push(Reverse(t + max_wait));
            }
            next += 1;
        }
        run.poll_woken();
        most_in_service = most_in_service.max(run.in_service.len());
    }
    assert!(run.waiting.is_empty(), "a caller still waits at the end");
    let busy = callers
        .iter()
        .zip(&run.fates)
        .filter(|(_, f)| f.started.is_some())
        .map(|(c, _)| c.work)
        .sum();
    Outcome {
        fates: std::mem::take(&mut run.fates),
        most_in_service,
        busy,
    }
}

impl<'a> Run<'a> {
    /// Caller `id` arrives and polls its future once; true if it waits.
    fn arrive(&mut self, id: usize) -> bool {
        let mut entering = self.gate.enter(self.callers[id].tenant);
        let waker = Waker::from(Arc::new(Flag {
            id,
            woken: Arc::clone(&self.woken),
        }));
        match entering.as_mut().poll(&mut Context::from_waker(&waker)) {
            Poll::Ready(entered) => {
                self.entered(id, entered);
                false
            }
            Poll::Pending => {
                self.waiting.insert(id, (entering, waker));
                true
            }
        }
    }

    fn entered(&mut self, id: usize, entered: Option<BulkheadPermit<'a>>) {
        match entered {
            Some(permit) => {
                self.fates[id].started = Some(self.now);
                let finish = self.now + base(self.callers[id].work / model().b).max(1);
                self.in_service.push(Reverse((finish, id)));
                self.permits.insert(id, permit);
            }
            None => self.fates[id].refused = true,
        }
    }

    /// Polls the callers woken, in the order they were woken, until no
    /// more are.
    fn poll_woken(&mut self) {
        loop {
            let woken = std::mem::take(&mut *self.woken.lock().expect("one thread"));
            if woken.is_empty() {
                return;
            }
            for id in woken {
                let Some((mut entering, waker)) = self.waiting.remove(&id) else {
                    continue;
                };
                match entering.as_mut().poll(&mut Context::from_waker(&waker)) {
                    Poll::Ready(entered) => self.entered(id, entered),
                    Poll::Pending => {
                        self.waiting.insert(id, (entering, waker));
                    }
                }
            }
        }
    }
}

/// What one run shows.
struct Measure {
    quiet_calls: usize,
    quiet_admitted: f64,
    quiet_p50: f64,
    quiet_p99: f64,
    noisy_admitted: f64,
    most_in_service: usize,
    /// The share of the dependency's capacity used over `seconds`.
    busy: f64,
}

impl Measure {
    fn of(callers: &[Caller], outcome: &Outcome, seconds: u64) -> Measure {
        let (mut quiet, mut quiet_in, mut noisy, mut noisy_in) = (0usize, 0usize, 0usize, 0usize);
        for (caller, fate) in callers.iter().zip(&outcome.fates) {
            let admitted = usize::from(fate.started.is_some());
            if caller.tenant == NOISY {
                noisy += 1;
                noisy_in += admitted;
            } else {
                quiet += 1;
                quiet_in += admitted;
            }
        }
        let (quiet_p50, quiet_p99) = quantiles(
            callers
                .iter()
                .zip(&outcome.fates)
                .filter(|(c, _)| c.tenant != NOISY)
                .filter_map(|(c, f)| f.done.map(|done| done - c.at)),
        );
        Measure {
            quiet_calls: quiet,
            quiet_admitted: quiet_in as f64 / quiet.max(1) as f64,
            quiet_p50,
            quiet_p99,
            noisy_admitted: if noisy == 0 {
                f64::NAN
            } else {
                noisy_in as f64 / noisy as f64
            },
            most_in_service: outcome.most_in_service,
            busy: outcome.busy / (model().c * seconds as f64),
        }
    }
}

/// The scenario: its tables and targets, and a digest of every caller's
/// fate (for the determinism test). `--quick`: 60 simulated seconds
/// instead of 300.
pub(crate) fn run_all(quick: bool) -> (String, u64) {
    let seconds: u64 = if quick { 60 } else { 300 };
    let end = seconds * 1_000_000_000;
    let mut out = String::new();
    let mut digest = DefaultHasher::new();
    let quiet_rate = QUIET_LOAD * model().c / model().b;
    let _ = writeln!(
        out,
        "Keyed bulkheads (issue 31): a noisy tenant. C = {} calls, B = {} ms, {seconds} s simulated on a ManualClock; service Pareto alpha 1.5 (mean ~B, cut at 100 B); {QUIET} quiet tenants at {quiet_rate:.1}/s each, the noisy one at {:.0}/s ({:.1} C/B); max_wait {MAX_WAIT_B} B in both arms; keyed: per_key {} (every key; a second arm at {}), max_concurrent {}; latency from arrival to answer, in B\n",
        model().c,
        model().b * 1000.0,
        NOISY_X * quiet_rate,
        NOISY_X * QUIET_LOAD,
        per_key(PER_KEY_C),
        per_key(PER_KEY_WIDE_C),
        model().c,
    );
    let _ = writeln!(
        out,
        "| arm | noisy tenant | quiet calls | quiet admitted | quiet p50 | quiet p99 | noisy admitted | most in service | work admitted (of C x run) |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|");
    let mut verdicts = Vec::new();
    let arms = [
        None,
        Some(per_key(PER_KEY_C)),
        Some(per_key(PER_KEY_WIDE_C)),
    ];
    for keyed in arms {
        let mut measures = Vec::new();
        for noisy in [false, true] {
            let callers = callers(noisy, end);
            let (gate, clock) = gate(keyed);
            let outcome = run(&gate, &clock, &callers);
            assert!(
                outcome.most_in_service <= model().c as usize,
                "{}: more than C in service",
                gate.label()
            );
            outcome.fates.hash(&mut digest);
            let m = Measure::of(&callers, &outcome, seconds);
            let noisy_admitted = if m.noisy_admitted.is_nan() {
                "-".to_owned()
            } else {
                format!("{:.1} %", 100.0 * m.noisy_admitted)
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {:.3} % | {:.2} B | {:.2} B | {noisy_admitted} | {} | {:.1} % |",
                gate.label(),
                if noisy { "100x" } else { "absent (baseline)" },
                m.quiet_calls,
                100.0 * m.quiet_admitted,
                m.quiet_p50,
                m.quiet_p99,
                m.most_in_service,
                100.0 * m.busy,
            );
            measures.push((gate.label(), m));
        }
        let (label, baseline) = &measures[0];
        let loaded = &measures[1].1;
        let ratio = loaded.quiet_p99 / baseline.quiet_p99;
        verdicts.push((
            label.clone(),
            [
                (
                    loaded.quiet_admitted >= 0.999,
                    format!("{:.3} %", 100.0 * loaded.quiet_admitted),
                ),
                (
                    (ratio - 1.0).abs() <= 0.10,
                    format!(
                        "{:.2} B vs {:.2} B ({:+.1} %)",
                        loaded.quiet_p99,
                        baseline.quiet_p99,
                        100.0 * (ratio - 1.0)
                    ),
                ),
            ],
        ));
    }
    let _ = writeln!(
        out,
        "\nTargets (issue 31; the quiet tenants, noisy one present; set for the keyed arms, the shared bulkhead checked beside them)\n"
    );
    let _ = writeln!(out, "| arm | {} |", TARGETS.join(" | "));
    let _ = writeln!(out, "|---|---|---|");
    for (label, checks) in &verdicts {
        let cells: Vec<String> = checks
            .iter()
            .map(|(pass, value)| format!("{} {value}", if *pass { "PASS" } else { "FAIL" }))
            .collect();
        let _ = writeln!(out, "| {label} | {} |", cells.join(" | "));
    }
    let _ = writeln!(out);
    for (label, checks) in &verdicts {
        for (target, (pass, _)) in TARGETS.iter().zip(checks) {
            let verdict = if *pass { "PASS" } else { "FAIL" };
            let _ = writeln!(out, "{verdict} {label}: {target}");
        }
    }
    (out, digest.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyed_prints_the_same_bytes_twice() {
        let (first, first_digest) = run_all(true);
        let (again, again_digest) = run_all(true);
        assert_eq!(first, again, "two runs printed differently");
        assert_eq!(first_digest, again_digest, "two runs differ");
    }

    #[test]
    fn the_keyed_arm_keeps_the_quiet_tenants_and_the_shared_one_does_not() {
        let end = 30 * 1_000_000_000;
        let callers = callers(true, end);
        let admitted = |keyed| {
            let (gate, clock) = gate(keyed);
            Measure::of(&callers, &run(&gate, &clock, &callers), 30).quiet_admitted
        };
        let (shared, keyed) = (admitted(None), admitted(Some(per_key(PER_KEY_C))));
        assert!(shared < 0.9, "the shared bulkhead admitted {shared}");
        assert!(keyed >= 0.999, "the keyed bulkhead admitted {keyed}");
    }

    #[test]
    fn the_quiet_streams_do_not_depend_on_the_noisy_one() {
        let end = 10 * 1_000_000_000;
        let quiet = |noisy| -> Vec<(u64, u32)> {
            callers(noisy, end)
                .iter()
                .filter(|c| c.tenant != NOISY)
                .map(|c| (c.at, c.tenant))
                .collect()
        };
        assert_eq!(quiet(false), quiet(true));
        assert!(callers(true, end).iter().any(|c| c.tenant == NOISY));
    }
}
