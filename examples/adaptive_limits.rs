//! Adaptive limits against a simulated dependency, on a `ManualClock`: how
//! AIMD, Vegas and Gradient2 find a dependency's capacity, follow it when
//! it slows down or the traffic doubles, and do not drift, next to a static
//! limit and to tower-resilience's adaptive layers.
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
//! tower-resilience's `AdaptiveService` times calls with
//! `std::time::Instant::now()`, which no simulated clock moves; so its
//! published algorithms (`Aimd`, `Vegas`, 0.13) are driven here exactly as
//! that service drives them: a call is admitted while fewer than `limit()`
//! are in flight, and `record_success(latency)` is called when it ends.
//!
//! Run it with `cargo run --release --example adaptive_limits` (`-- --quick`
//! skips the hour-long runs).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use bulkhead::{Adaptive, BulkheadConfig, CallOutcome, ManualClock, OwnedBulkheadPermit, Registry};
use tower_resilience::adaptive::{Aimd, ConcurrencyAlgorithm, Vegas};

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
}

static MODEL: std::sync::OnceLock<Model> = std::sync::OnceLock::new();

fn ceiling() -> u32 {
    (CEILING_C * model().c) as u32
}

fn model() -> Model {
    *MODEL.get_or_init(|| Model {
        c: 50.0,
        b: 0.1,
        sigma: None,
        tolerance: None,
    })
}
/// The ceiling every adaptive limiter gets (in `C`), and where it starts.
const CEILING_C: f64 = 4.0;
const INITIAL: u32 = 20;
/// The latency objective, in base latencies of the time.
const SLO: f64 = 2.0;
/// Trace resolution.
const TRACE_NS: u64 = 100_000_000;

// ----------------------------------------------------------------- scenarios

/// A stretch of a scenario: its length, the arrival rate (as a share of the
/// healthy capacity `C / B`) and how many times slower the dependency is.
#[derive(Clone, Copy)]
struct Phase {
    seconds: u64,
    load: f64,
    slow: f64,
}

struct Scenario {
    name: &'static str,
    what: &'static str,
    phases: Vec<Phase>,
    /// Whether the drift of the limit is measured (hour-long runs).
    long: bool,
}

fn scenarios(quick: bool) -> Vec<Scenario> {
    let phase = |seconds, load, slow| Phase {
        seconds,
        load,
        slow,
    };
    let mut all = vec![
        Scenario {
            name: "steady",
            what: "80 % of capacity for 5 minutes",
            phases: vec![phase(300, 0.8, 1.0)],
            long: false,
        },
        Scenario {
            name: "slow3x",
            what: "80 %; the dependency slows 3x at 60 s for 30 s",
            phases: vec![
                phase(60, 0.8, 1.0),
                phase(30, 0.8, 3.0),
                phase(90, 0.8, 1.0),
            ],
            long: false,
        },
        Scenario {
            name: "double",
            what: "80 %; arrivals double at 60 s for 30 s",
            phases: vec![
                phase(60, 0.8, 1.0),
                phase(30, 1.6, 1.0),
                phase(90, 0.8, 1.0),
            ],
            long: false,
        },
    ];
    if !quick {
        all.push(Scenario {
            name: "hour",
            what: "80 % of capacity for an hour",
            phases: vec![phase(3600, 0.8, 1.0)],
            long: true,
        });
        all.push(Scenario {
            name: "hour-overload",
            what: "120 % of capacity for an hour",
            phases: vec![phase(3600, 1.2, 1.0)],
            long: true,
        });
    }
    all
}

// ------------------------------------------------------------------ limiters

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Static,
    Ours(Adaptive),
    TowerAimd,
    TowerVegas,
}

impl Kind {
    const ALL: [Kind; 6] = [
        Kind::Static,
        Kind::Ours(Adaptive::Aimd),
        Kind::Ours(Adaptive::Vegas),
        Kind::Ours(Adaptive::Gradient2),
        Kind::TowerAimd,
        Kind::TowerVegas,
    ];

    fn name(self) -> &'static str {
        match self {
            Kind::Static => "static C",
            Kind::Ours(Adaptive::Aimd) => "ours: aimd",
            Kind::Ours(Adaptive::Vegas) => "ours: vegas",
            Kind::Ours(_) => "ours: gradient2",
            Kind::TowerAimd => "tower-resilience Aimd",
            Kind::TowerVegas => "tower-resilience Vegas",
        }
    }

    fn colour(self) -> &'static str {
        match self {
            Kind::Static => "#888888",
            Kind::Ours(Adaptive::Aimd) => "#1f77b4",
            Kind::Ours(Adaptive::Vegas) => "#2ca02c",
            Kind::Ours(_) => "#d62728",
            Kind::TowerAimd => "#9467bd",
            Kind::TowerVegas => "#ff7f0e",
        }
    }

    fn ours(self) -> bool {
        matches!(self, Kind::Ours(_))
    }
}

/// What a limiter gives an admitted call.
enum Ticket {
    Permit(OwnedBulkheadPermit),
    Counted,
}

enum Limiter {
    /// Ours (and the static limit): a bulkhead of a registry on the
    /// simulation's clock.
    Bulkhead {
        bulkhead: bulkhead::Bulkhead,
        clock: ManualClock,
        at: u64,
    },
    /// tower-resilience's algorithm, driven as its `AdaptiveService` does.
    Tower {
        algorithm: Box<dyn ConcurrencyAlgorithm>,
        in_flight: usize,
    },
}

impl Limiter {
    fn new(kind: Kind) -> Limiter {
        let tower = |algorithm: Box<dyn ConcurrencyAlgorithm>| Limiter::Tower {
            algorithm,
            in_flight: 0,
        };
        let spec = match kind {
            Kind::TowerAimd => {
                let aimd = Aimd::builder()
                    .initial_limit(INITIAL as usize)
                    .max_limit(ceiling() as usize)
                    // The most favourable threshold: the latency objective.
                    .latency_threshold(Duration::from_secs_f64(SLO * model().b))
                    .build()
                    .expect("valid");
                return tower(Box::new(aimd));
            }
            Kind::TowerVegas => {
                let vegas = Vegas::builder()
                    .initial_limit(INITIAL as usize)
                    .max_limit(ceiling() as usize)
                    .build()
                    .expect("valid");
                return tower(Box::new(vegas));
            }
            Kind::Static => BulkheadConfig::builder().max_concurrent(model().c as u32),
            Kind::Ours(adaptive) => {
                let spec = BulkheadConfig::builder()
                    .max_concurrent(ceiling())
                    .initial_concurrent(INITIAL)
                    .adaptive(adaptive);
                match model().tolerance {
                    None => spec,
                    Some(tolerance) => spec
                        .aimd(
                            bulkhead::adaptive::Aimd::builder()
                                .rtt_tolerance(tolerance)
                                .build()
                                .expect("valid"),
                        )
                        .gradient2(
                            bulkhead::adaptive::Gradient2::builder()
                                .rtt_tolerance(tolerance)
                                .build()
                                .expect("valid"),
                        ),
                }
            }
        };
        let clock = ManualClock::new();
        let registry = Registry::builder().clock(clock.clone()).build();
        let bulkhead = registry
            .bulkhead_policy("dependency", "adaptive_limits", &spec)
            .expect("a valid bulkhead");
        Limiter::Bulkhead {
            bulkhead,
            clock,
            at: 0,
        }
    }

    /// Moves the limiter's clock to `now`.
    fn at(&mut self, now: u64) {
        if let Limiter::Bulkhead { clock, at, .. } = self
            && now > *at
        {
            clock.advance(Duration::from_nanos(now - *at));
            *at = now;
        }
    }

    fn admit(&mut self) -> Option<Ticket> {
        match self {
            Limiter::Bulkhead { bulkhead, .. } => {
                bulkhead.try_enter_owned().ok().map(Ticket::Permit)
            }
            Limiter::Tower {
                algorithm,
                in_flight,
            } => (*in_flight < algorithm.limit()).then(|| {
                *in_flight += 1;
                Ticket::Counted
            }),
        }
    }

    fn complete(&mut self, ticket: Ticket, latency: Duration) {
        match (self, ticket) {
            (
                Limiter::Tower {
                    algorithm,
                    in_flight,
                },
                _,
            ) => {
                *in_flight -= 1;
                algorithm.record_success(latency);
            }
            (Limiter::Bulkhead { .. }, Ticket::Permit(mut permit)) => {
                // How the call ended: it succeeded (the default, spelled out).
                permit.set_outcome(CallOutcome::Success);
            }
            (Limiter::Bulkhead { .. }, Ticket::Counted) => {}
        }
    }

    fn limit(&self) -> u32 {
        match self {
            Limiter::Bulkhead { bulkhead, .. } => bulkhead.max_concurrent(),
            Limiter::Tower { algorithm, .. } => algorithm.limit() as u32,
        }
    }

    fn probing(&self) -> bool {
        match self {
            Limiter::Bulkhead { bulkhead, .. } => bulkhead.adaptive().is_some_and(|a| a.probing),
            Limiter::Tower { .. } => false,
        }
    }

    fn no_load(&self) -> Option<f64> {
        match self {
            Limiter::Bulkhead { bulkhead, .. } => {
                bulkhead.adaptive()?.no_load.map(|d| d.as_secs_f64())
            }
            Limiter::Tower { .. } => None,
        }
    }
}

// ---------------------------------------------------------------- simulation

/// splitmix64: the same arrivals and work for every limiter.
struct Random(u64);

impl Random {
    fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    fn exponential(&mut self, rate: f64) -> f64 {
        -(1.0 - self.unit()).ln() / rate
    }

    /// The work of a call whose base latency is `base`: two draws, however
    /// it is spread, so that every limiter sees the same sequence.
    fn work(&mut self, base: f64) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        match model().sigma {
            None => base * (0.9 + 0.2 * u),
            Some(sigma) => {
                let normal = (-2.0 * (1.0 - u).ln()).sqrt() * (std::f64::consts::TAU * v).cos();
                base * (sigma * normal).exp()
            }
        }
    }
}

/// One admitted call.
struct Call {
    start: u64,
    base: f64,
    ticket: Ticket,
}

/// One completed call: when it was admitted, and its latency in base
/// latencies of its time.
#[derive(Clone, Copy)]
struct Done {
    start: u64,
    ratio: f32,
}

#[derive(Clone, Copy)]
struct Row {
    at: u64,
    limit: u32,
    probing: bool,
}

struct Run {
    kind: Kind,
    done: Vec<Done>,
    rows: Vec<Row>,
    arrivals: u64,
    rejected: u64,
    no_load: Option<f64>,
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn nanos(seconds: f64) -> u64 {
    (seconds * 1e9).round() as u64
}

fn simulate(scenario: &Scenario, kind: Kind) -> Run {
    let mut limiter = Limiter::new(kind);
    let mut random = Random(0x5EED);
    let mut ends = Vec::new();
    let mut end = 0;
    for phase in &scenario.phases {
        end += phase.seconds * 1_000_000_000;
        ends.push((end, *phase));
    }
    let phase_at = |t: u64| {
        ends.iter()
            .find(|(end, _)| t < *end)
            .map_or(ends[ends.len() - 1].1, |(_, p)| *p)
    };
    // Processor sharing in virtual time: each call needs `work` seconds of
    // service; with n in service each progresses at min(1, C / n).
    let mut virtual_time = 0.0f64;
    let mut in_service: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
    let mut calls: std::collections::HashMap<u64, Call> = std::collections::HashMap::new();
    let mut now = 0u64;
    let mut next_id = 0u64;
    let mut next_trace = 0u64;
    let mut run = Run {
        kind,
        done: Vec::new(),
        rows: Vec::new(),
        arrivals: 0,
        rejected: 0,
        no_load: None,
    };
    let rate = |phase: Phase| phase.load * model().c / model().b;
    let mut next_arrival = nanos(random.exponential(rate(phase_at(0))));
    loop {
        let n = in_service.len() as f64;
        let speed = if n > model().c { model().c / n } else { 1.0 };
        let next_departure = in_service.peek().map_or(u64::MAX, |Reverse((finish, _))| {
            let left = (f64::from_bits(*finish) - virtual_time).max(0.0);
            now + nanos(left / speed).max(1)
        });
        let t = next_arrival.min(next_departure);
        if t >= end {
            break;
        }
        while next_trace <= t {
            limiter.at(next_trace);
            run.rows.push(Row {
                at: next_trace,
                limit: limiter.limit(),
                probing: limiter.probing(),
            });
            next_trace += TRACE_NS;
        }
        virtual_time += secs(t - now) * speed;
        now = t;
        limiter.at(now);
        if t == next_departure {
            let Reverse((_, id)) = in_service.pop().expect("a call in service");
            let call = calls.remove(&id).expect("a known call");
            let latency = now - call.start;
            limiter.complete(call.ticket, Duration::from_nanos(latency));
            run.done.push(Done {
                start: call.start,
                ratio: (secs(latency) / call.base) as f32,
            });
        } else {
            let phase = phase_at(now);
            run.arrivals += 1;
            match limiter.admit() {
                Some(ticket) => {
                    let base = model().b * phase.slow;
                    let work = random.work(base);
                    next_id += 1;
                    calls.insert(
                        next_id,
                        Call {
                            start: now,
                            base,
                            ticket,
                        },
                    );
                    in_service.push(Reverse(((virtual_time + work).to_bits(), next_id)));
                }
                None => {
                    run.rejected += 1;
                    // Draw the work anyway, so every limiter sees the same
                    // sequence of arrivals and work.
                    let _ = random.work(1.0);
                }
            }
            next_arrival = now + nanos(random.exponential(rate(phase_at(now)))).max(1);
        }
    }
    run.no_load = limiter.no_load();
    run
}

// ------------------------------------------------------------------ analysis

fn percentile(sorted: &[f32], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let at = ((sorted.len() as f64 * p) as usize).min(sorted.len() - 1);
    f64::from(sorted[at])
}

fn sorted(ratios: impl Iterator<Item = f32>) -> Vec<f32> {
    let mut v: Vec<f32> = ratios.collect();
    v.sort_by(f32::total_cmp);
    v
}

/// How one limiter did in one scenario.
struct Report {
    kind: Kind,
    goodput: f64,
    p50: f64,
    p99: f64,
    rejected: f64,
    limit_mean: f64,
    limit_min: f64,
    limit_max: f64,
    /// The slowest settling after a change, `None` if some phase never
    /// settled.
    settle: Option<f64>,
    /// The worst p99 of a phase once settled (5 s after its change).
    p99_settled: f64,
    /// Limit over the last 10 minutes less the limit over minutes 10 to 20.
    drift: Option<f64>,
    /// The highest limit after the first minute (the long runs).
    long_max: Option<f64>,
    probe_time: f64,
}

const BAND: (f64, f64) = (0.75, 1.25);

fn analyse(scenario: &Scenario, run: &Run) -> Report {
    let mut allowed = 0.0;
    let mut settle = Some(0.0f64);
    let mut p99_settled = 0.0f64;
    let mut start = 0u64;
    for phase in &scenario.phases {
        let end = start + phase.seconds * 1_000_000_000;
        allowed += phase.seconds as f64
            * (phase.load * model().c / model().b).min(model().c / (model().b * phase.slow));
        // Settled: from the first row after which every row (probes left
        // out) is within the band until the phase ends.
        let rows: Vec<&Row> = run
            .rows
            .iter()
            .filter(|r| r.at >= start && r.at < end)
            .collect();
        let in_band = |r: &&Row| {
            let x = f64::from(r.limit) / model().c;
            r.probing || (BAND.0..=BAND.1).contains(&x)
        };
        let mut first = rows.len();
        for (i, row) in rows.iter().enumerate().rev() {
            if in_band(row) {
                first = i;
            } else {
                break;
            }
        }
        let phase_settle = rows.get(first).map(|r| secs(r.at - start));
        settle = match (settle, phase_settle) {
            (Some(a), Some(b)) => Some(a.max(b)),
            _ => None,
        };
        let from = start + 5_000_000_000;
        let settled = sorted(
            run.done
                .iter()
                .filter(|d| d.start >= from && d.start < end)
                .map(|d| d.ratio),
        );
        p99_settled = p99_settled.max(percentile(&settled, 0.99));
        start = end;
    }
    let all = sorted(run.done.iter().map(|d| d.ratio));
    let good = run
        .done
        .iter()
        .filter(|d| f64::from(d.ratio) <= SLO)
        .count();
    let limits: Vec<f64> = run
        .rows
        .iter()
        .map(|r| f64::from(r.limit) / model().c)
        .collect();
    let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len().max(1) as f64;
    let drift = scenario.long.then(|| {
        let minutes = |a: u64, b: u64| {
            let xs: Vec<f64> = run
                .rows
                .iter()
                .filter(|r| r.at >= a * 60_000_000_000 && r.at < b * 60_000_000_000)
                .map(|r| f64::from(r.limit) / model().c)
                .collect();
            mean(&xs)
        };
        minutes(50, 60) - minutes(10, 20)
    });
    let long_max = scenario.long.then(|| {
        run.rows
            .iter()
            .filter(|r| r.at >= 60_000_000_000)
            .map(|r| f64::from(r.limit) / model().c)
            .fold(0.0, f64::max)
    });
    Report {
        kind: run.kind,
        goodput: good as f64 / allowed,
        p50: percentile(&all, 0.5),
        p99: percentile(&all, 0.99),
        rejected: run.rejected as f64 / run.arrivals.max(1) as f64,
        limit_mean: mean(&limits),
        limit_min: limits.iter().copied().fold(f64::INFINITY, f64::min),
        limit_max: limits.iter().copied().fold(0.0, f64::max),
        settle,
        p99_settled,
        drift,
        long_max,
        probe_time: run.rows.iter().filter(|r| r.probing).count() as f64
            / run.rows.len().max(1) as f64,
    }
}

/// Whether ours met the issue's targets in this scenario, and why not.
fn verdict(report: &Report, peers: &[&Report]) -> String {
    let mut misses = Vec::new();
    match report.settle {
        Some(s) if s <= 5.0 => {}
        Some(s) => misses.push(format!("settled in {s:.1} s")),
        None => misses.push("never settled".to_owned()),
    }
    if report.p99_settled > SLO {
        misses.push(format!("p99 {:.2} B once settled", report.p99_settled));
    }
    if report.goodput < 0.9 {
        misses.push(format!("goodput {:.1} %", 100.0 * report.goodput));
    }
    if let Some(most) = report.long_max
        && most >= 1.5
    {
        misses.push(format!("limit reached {most:.2} C after the first minute"));
    }
    if let Some(drift) = report.drift
        && drift > 0.02
    {
        misses.push(format!("drifted {drift:+.3} C"));
    }
    for peer in peers {
        let mut behind = Vec::new();
        // Differences within the noise of the measure are ties.
        if report.goodput < peer.goodput - 0.001 {
            behind.push(format!(
                "goodput {:.1} % < {:.1} %",
                100.0 * report.goodput,
                100.0 * peer.goodput
            ));
        }
        if report.p99 > peer.p99 + 0.005 {
            behind.push(format!("p99 {:.2} B > {:.2} B", report.p99, peer.p99));
        }
        if !behind.is_empty() {
            misses.push(format!("vs {}: {}", peer.kind.name(), behind.join(", ")));
        }
    }
    if misses.is_empty() {
        "met".to_owned()
    } else {
        format!("not met: {}", misses.join(", "))
    }
}

// ---------------------------------------------------------------------- plot

fn plot(scenario: &Scenario, runs: &[Run]) -> String {
    let (width, height) = (960.0, 610.0);
    let (left, right) = (70.0, 20.0);
    let top = [40.0, 320.0];
    let panel = 220.0;
    let total = scenario.phases.iter().map(|p| p.seconds).sum::<u64>() as f64;
    let x = |t: f64| left + (width - left - right) * t / total;
    let limit_max = 4.0;
    let latency_max = 4.0;
    let y_limit = |v: f64| top[0] + panel * (1.0 - (v / limit_max).min(1.0));
    let y_latency = |v: f64| top[1] + panel * (1.0 - (v / latency_max).min(1.0));
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = write!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = write!(
        svg,
        r#"<text x="{left}" y="20" font-size="14">{}: {} (C = {}, B = {} ms)</text>"#,
        scenario.name,
        scenario.what,
        model().c,
        model().b * 1000.0
    );
    // The band and the axes.
    let _ = write!(
        svg,
        r##"<rect x="{left}" y="{}" width="{}" height="{}" fill="#e8f4e8"/>"##,
        y_limit(BAND.1),
        width - left - right,
        y_limit(BAND.0) - y_limit(BAND.1)
    );
    for (t, label, max, y) in [
        (
            top[0],
            "limit / C",
            limit_max,
            &y_limit as &dyn Fn(f64) -> f64,
        ),
        (top[1], "p99 latency / base (1 s)", latency_max, &y_latency),
    ] {
        let _ = write!(
            svg,
            r##"<rect x="{left}" y="{t}" width="{}" height="{panel}" fill="none" stroke="#444"/>"##,
            width - left - right
        );
        let _ = write!(svg, r#"<text x="{left}" y="{}">{label}</text>"#, t - 4.0);
        for v in 0..=(max as u32) {
            let v = f64::from(v);
            let _ = write!(
                svg,
                r##"<text x="{}" y="{}" text-anchor="end">{v}</text><line x1="{left}" x2="{}" y1="{y2}" y2="{y2}" stroke="#ddd"/>"##,
                left - 6.0,
                y(v) + 4.0,
                width - right,
                y2 = y(v)
            );
        }
    }
    // The changes of the scenario.
    let mut at = 0;
    for phase in &scenario.phases[..scenario.phases.len() - 1] {
        at += phase.seconds;
        for y in [top[0], top[1]] {
            let _ = write!(
                svg,
                r##"<line x1="{x0}" x2="{x0}" y1="{y}" y2="{}" stroke="#999" stroke-dasharray="4 3"/>"##,
                y + panel,
                x0 = x(at as f64)
            );
        }
    }
    let mut t = 0;
    let step = (scenario.phases.iter().map(|p| p.seconds).sum::<u64>() / 6).max(1);
    while t as f64 <= total {
        let _ = write!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="middle">{t} s</text>"#,
            x(t as f64),
            top[1] + panel + 16.0
        );
        t += step;
    }
    // One point per bucket: the mean limit, the p99 of the calls admitted.
    let bucket = (total / 600.0).max(1.0);
    for (i, run) in runs.iter().enumerate() {
        let buckets = (total / bucket).ceil() as usize;
        let mut limits = vec![(0.0, 0u32); buckets];
        for row in &run.rows {
            let b = ((secs(row.at) / bucket) as usize).min(buckets - 1);
            limits[b].0 += f64::from(row.limit) / model().c;
            limits[b].1 += 1;
        }
        let mut latencies: Vec<Vec<f32>> = vec![Vec::new(); buckets];
        for done in &run.done {
            let b = ((secs(done.start) / bucket) as usize).min(buckets - 1);
            latencies[b].push(done.ratio);
        }
        let colour = run.kind.colour();
        let points = |values: Vec<(f64, f64)>, y: &dyn Fn(f64) -> f64| {
            values
                .iter()
                .map(|(t, v)| format!("{:.1},{:.1}", x(*t), y(*v)))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let limit_points = points(
            limits
                .iter()
                .enumerate()
                .filter(|(_, (_, n))| *n > 0)
                .map(|(b, (sum, n))| (b as f64 * bucket, sum / f64::from(*n)))
                .collect(),
            &y_limit,
        );
        let latency_points = points(
            latencies
                .into_iter()
                .enumerate()
                .filter(|(_, v)| !v.is_empty())
                .map(|(b, v)| (b as f64 * bucket, percentile(&sorted(v.into_iter()), 0.99)))
                .collect(),
            &y_latency,
        );
        let _ = write!(
            svg,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="1.2" points="{limit_points}"/>"#
        );
        let _ = write!(
            svg,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="1.2" points="{latency_points}"/>"#
        );
        let lx = left + 10.0 + (i % 3) as f64 * 230.0;
        let ly = top[1] + panel + 40.0 + (i / 3) as f64 * 16.0;
        let _ = write!(
            svg,
            r#"<rect x="{lx}" y="{}" width="14" height="4" fill="{colour}"/><text x="{}" y="{ly}">{}</text>"#,
            ly - 6.0,
            lx + 18.0,
            run.kind.name()
        );
    }
    svg.push_str("</svg>\n");
    svg
}

// ---------------------------------------------------------------------- main

/// The value after `--flag`, if given.
fn arg(args: &[String], flag: &str) -> Option<f64> {
    let at = args.iter().position(|a| a == flag)?;
    args.get(at + 1)?.parse().ok()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let _ = MODEL.set(Model {
        c: arg(&args, "--capacity").unwrap_or(50.0),
        b: arg(&args, "--base-ms").unwrap_or(100.0) / 1000.0,
        sigma: arg(&args, "--sigma"),
        tolerance: arg(&args, "--tolerance"),
    });
    let out = args
        .iter()
        .position(|a| a == "--out")
        .and_then(|i| args.get(i + 1))
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let target = std::env::var("CARGO_TARGET_DIR").unwrap_or_else(|_| "target".to_owned());
            PathBuf::from(target).join("adaptive_limits")
        });
    let only: Vec<&str> = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .map(|s| s.split(',').collect())
        .unwrap_or_default();
    std::fs::create_dir_all(&out).expect("the output directory");
    println!(
        "C = {} calls, B = {} ms, ceiling {CEILING_C} C, initial {INITIAL}, work {}; goodput = completed within {SLO} x base, against what the capacity allows\n",
        model().c,
        model().b * 1000.0,
        model().sigma.map_or_else(
            || "uniform within 10 % of B".to_owned(),
            |s| format!("lognormal, sigma {s}, median B")
        )
    );
    println!(
        "| scenario | limiter | goodput | p50 | p99 | rejected | limit mean (min-max) | settle | p99 settled | drift (max after 1 min) | probing | targets |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for scenario in scenarios(quick) {
        if !only.is_empty() && !only.contains(&scenario.name) {
            continue;
        }
        let runs: Vec<Run> = Kind::ALL.iter().map(|&k| simulate(&scenario, k)).collect();
        let reports: Vec<Report> = runs.iter().map(|r| analyse(&scenario, r)).collect();
        let peers: Vec<&Report> = reports
            .iter()
            .filter(|r| matches!(r.kind, Kind::TowerAimd | Kind::TowerVegas))
            .collect();
        for (report, run) in reports.iter().zip(&runs) {
            let targets = if report.kind.ours() {
                verdict(report, &peers)
            } else {
                String::new()
            };
            let settle = report
                .settle
                .map_or_else(|| "never".to_owned(), |s| format!("{s:.1} s"));
            let drift = report
                .drift
                .zip(report.long_max)
                .map_or_else(String::new, |(d, m)| format!("{d:+.3} C ({m:.2} C)"));
            let no_load = run.no_load.map_or_else(String::new, |n| {
                format!(" (no-load {:.2} B)", n / model().b)
            });
            println!(
                "| {} | {} | {:.1} % | {:.2} B | {:.2} B | {:.1} % | {:.2} C ({:.2}-{:.2}) | {settle} | {:.2} B | {drift} | {:.1} %{no_load} | {targets} |",
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
            );
        }
        if let Ok(which) = std::env::var("ADAPTIVE_TRACE") {
            for run in runs
                .iter()
                .filter(|r| r.kind.name().contains(which.as_str()))
            {
                for row in &run.rows {
                    let x = f64::from(row.limit) / model().c;
                    let around = std::env::var("ADAPTIVE_AROUND")
                        .ok()
                        .and_then(|a| a.parse::<f64>().ok());
                    let near = around.is_some_and(|a| (secs(row.at) - a).abs() < 5.0);
                    if near
                        || (around.is_none() && (row.probing || !(BAND.0..=BAND.1).contains(&x)))
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
        let path = out.join(format!("{}.svg", scenario.name));
        std::fs::write(&path, plot(&scenario, &runs)).expect("the plot");
        eprintln!("wrote {}", path.display());
    }
}
