//! What a run shows: goodput, latency, rejections, the limit, how fast it
//! settled after each change, and its drift over an hour.

use crate::limiters::Kind;
use crate::scenarios::Scenario;
use crate::simulate::{Row, Run, secs};
use crate::{SLO, model};

/// How long after a change the limit may take to settle (the issue's
/// target), and from when the latency of admitted calls counts as settled.
pub(crate) const SETTLE_NS: u64 = 5_000_000_000;

pub(crate) fn percentile(sorted: &[f32], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let at = ((sorted.len() as f64 * p) as usize).min(sorted.len() - 1);
    f64::from(sorted[at])
}

pub(crate) fn sorted(ratios: impl Iterator<Item = f32>) -> Vec<f32> {
    let mut v: Vec<f32> = ratios.collect();
    v.sort_by(f32::total_cmp);
    v
}

/// How one limiter did in one scenario.
pub(crate) struct Report {
    pub(crate) kind: Kind,
    /// Calls completed within the latency objective, as a share of what
    /// the capacity allows (the arrivals, or the capacity if fewer).
    pub(crate) goodput: f64,
    /// Of the admitted calls, in base latencies of their time.
    pub(crate) p50: f64,
    pub(crate) p99: f64,
    /// Rejected calls, as a share of the arrivals.
    pub(crate) rejected: f64,
    /// The limit, in `C`.
    pub(crate) limit_mean: f64,
    pub(crate) limit_min: f64,
    pub(crate) limit_max: f64,
    /// How long the limit took to settle after each change (the start is
    /// the first), `None` for a phase in which it never did.
    pub(crate) settles: Vec<Option<f64>>,
    /// How long after each change the limit first was within the band
    /// outside a probe, `None` for a phase in which it never was.
    pub(crate) enters: Vec<Option<f64>>,
    /// The worst p99 of a phase once settled (5 s after its change).
    pub(crate) p99_settled: f64,
    /// Limit over the last 10 minutes less the limit over minutes 10 to 20
    /// (the long runs).
    pub(crate) drift: Option<f64>,
    /// The highest limit from 5 s into the run on (the long runs).
    pub(crate) settled_max: Option<f64>,
    /// The highest limit from 5 s after each change to the next, in the
    /// capacity of its phase.
    pub(crate) peak: f64,
    /// The share of the time a probe cut the limit.
    pub(crate) probe_time: f64,
    /// The share of the time, from 5 s after each change, the limit was out
    /// of the band, probes included.
    pub(crate) out_of_band: f64,
    /// The share of the time, from 5 s after each change, the limit was
    /// above the band.
    pub(crate) above_band: f64,
}

impl Report {
    /// The slowest settling after a change, `None` if some phase never
    /// settled.
    pub(crate) fn settle(&self) -> Option<f64> {
        slowest(&self.settles)
    }

    /// The slowest entry into the band after a change, `None` if in some
    /// phase it never entered.
    pub(crate) fn enter(&self) -> Option<f64> {
        slowest(&self.enters)
    }
}

fn slowest(times: &[Option<f64>]) -> Option<f64> {
    times
        .iter()
        .try_fold(0.0f64, |worst, s| s.map(|s| worst.max(s)))
}

pub(crate) const BAND: (f64, f64) = (0.75, 1.25);

pub(crate) fn analyse(scenario: &Scenario, run: &Run) -> Report {
    let mut allowed = 0.0;
    let mut settles = Vec::new();
    let mut enters = Vec::new();
    let (mut out, mut above, mut settled_rows) = (0usize, 0usize, 0usize);
    let mut p99_settled = 0.0f64;
    let mut peak = 0.0f64;
    let mut start = 0u64;
    for phase in &scenario.phases {
        let end = start + phase.seconds * 1_000_000_000;
        let c = model().c * phase.capacity;
        allowed += phase.seconds as f64
            * (phase.load * model().c / model().b).min(c / (model().b * phase.slow));
        // Settled: from the first row after which every row (probes left
        // out) is within the band around the phase's capacity until the
        // phase ends.
        let rows: Vec<&Row> = run
            .rows
            .iter()
            .filter(|r| r.at >= start && r.at < end)
            .collect();
        let in_band = |r: &&Row| {
            let x = f64::from(r.limit) / c;
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
        settles.push(rows.get(first).map(|r| secs(r.at - start)));
        enters.push(
            rows.iter()
                .find(|r| !r.probing && in_band(r))
                .map(|r| secs(r.at - start)),
        );
        for row in rows.iter().filter(|r| r.at >= start + SETTLE_NS) {
            let x = f64::from(row.limit) / c;
            settled_rows += 1;
            out += usize::from(!(BAND.0..=BAND.1).contains(&x));
            above += usize::from(x > BAND.1);
            peak = peak.max(x);
        }
        let from = start + SETTLE_NS;
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
    let settled_max = scenario.long.then(|| {
        run.rows
            .iter()
            .filter(|r| r.at >= SETTLE_NS)
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
        settles,
        enters,
        p99_settled,
        drift,
        settled_max,
        peak,
        probe_time: run.rows.iter().filter(|r| r.probing).count() as f64
            / run.rows.len().max(1) as f64,
        out_of_band: out as f64 / settled_rows.max(1) as f64,
        above_band: above as f64 / settled_rows.max(1) as f64,
    }
}
