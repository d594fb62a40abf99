//! SVG plots, written by hand: the limit and the p99 latency over time,
//! one scenario with every limiter, and every scenario and limiter in one
//! grid.

use std::fmt::Write as _;

use crate::limiters::Kind;
use crate::report::{BAND, percentile, sorted};
use crate::scenarios::Scenario;
use crate::simulate::{Run, secs};
use crate::{CEILING_C, model};

/// A run, bucketed: per bucket of time, the mean limit (in `C`) and the p99
/// latency of the calls admitted in it (in base latencies of their time).
pub(crate) struct Series {
    pub(crate) kind: Kind,
    pub(crate) limit: Vec<(f64, f64)>,
    pub(crate) p99: Vec<(f64, f64)>,
}

impl Series {
    pub(crate) fn of(run: &Run, total: f64, buckets: usize) -> Series {
        let bucket = total / buckets as f64;
        let at = |t: f64| ((t / bucket) as usize).min(buckets - 1);
        let mut limits = vec![(0.0, 0u32); buckets];
        for row in &run.rows {
            let b = at(secs(row.at));
            limits[b].0 += f64::from(row.limit) / model().c;
            limits[b].1 += 1;
        }
        let mut latencies: Vec<Vec<f32>> = vec![Vec::new(); buckets];
        for done in &run.done {
            latencies[at(secs(done.start))].push(done.ratio);
        }
        Series {
            kind: run.kind,
            limit: limits
                .iter()
                .enumerate()
                .filter(|(_, (_, n))| *n > 0)
                .map(|(b, (sum, n))| (b as f64 * bucket, sum / f64::from(*n)))
                .collect(),
            p99: latencies
                .into_iter()
                .enumerate()
                .filter(|(_, v)| !v.is_empty())
                .map(|(b, v)| (b as f64 * bucket, percentile(&sorted(v.into_iter()), 0.99)))
                .collect(),
        }
    }
}

/// Both panels' scale: limits up to the ceiling, latencies as far.
const TOP: f64 = CEILING_C;

/// A panel of a plot: where it is and what time it spans.
struct Panel {
    x: f64,
    y: f64,
    width: f64,
    height: f64,
    seconds: f64,
}

impl Panel {
    fn x(&self, t: f64) -> f64 {
        self.x + self.width * t / self.seconds
    }

    fn y(&self, v: f64) -> f64 {
        self.y + self.height * (1.0 - (v / TOP).clamp(0.0, 1.0))
    }

    /// The frame, the band of ±25 % around the capacity (if `band`), the scale's
    /// lines (labelled if `labels`) and the scenario's changes.
    fn frame(&self, svg: &mut String, scenario: &Scenario, band: bool, labels: bool) {
        if band {
            // Around the capacity of each phase.
            let mut at = 0.0;
            for phase in &scenario.phases {
                let seconds = phase.seconds as f64;
                let _ = write!(
                    svg,
                    r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="#e8f4e8"/>"##,
                    self.x(at),
                    self.y(BAND.1 * phase.capacity),
                    self.x(at + seconds) - self.x(at),
                    self.y(BAND.0 * phase.capacity) - self.y(BAND.1 * phase.capacity)
                );
                at += seconds;
            }
        }
        for v in 1..=(TOP as u32) {
            let y = self.y(f64::from(v));
            let _ = write!(
                svg,
                r##"<line x1="{}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#ddd"/>"##,
                self.x,
                self.x + self.width
            );
            if labels {
                let _ = write!(
                    svg,
                    r#"<text x="{}" y="{:.1}" text-anchor="end">{v}</text>"#,
                    self.x - 4.0,
                    y + 4.0
                );
            }
        }
        let mut at = 0;
        for phase in &scenario.phases[..scenario.phases.len() - 1] {
            at += phase.seconds;
            let x = self.x(at as f64);
            let _ = write!(
                svg,
                r##"<line x1="{x:.1}" x2="{x:.1}" y1="{}" y2="{}" stroke="#999" stroke-dasharray="4 3"/>"##,
                self.y,
                self.y + self.height
            );
        }
        let _ = write!(
            svg,
            r##"<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#444"/>"##,
            self.x, self.y, self.width, self.height
        );
    }

    fn line(&self, svg: &mut String, points: &[(f64, f64)], colour: &str, width: f64) {
        let points = points
            .iter()
            .map(|(t, v)| format!("{:.1},{:.1}", self.x(*t), self.y(*v)))
            .collect::<Vec<_>>()
            .join(" ");
        let _ = write!(
            svg,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="{width}" points="{points}"/>"#
        );
    }
}

fn open(svg: &mut String, width: f64, height: f64, title: &str) {
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = write!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = write!(svg, r#"<text x="10" y="20" font-size="14">{title}</text>"#);
}

fn model_line() -> String {
    format!("C = {} calls, B = {} ms", model().c, model().b * 1000.0)
}

/// One scenario: the limits of every limiter in one panel, their p99
/// latencies in the other.
pub(crate) fn scenario(scenario: &Scenario, series: &[Series]) -> String {
    let (width, height) = (960.0, 610.0);
    let seconds = scenario.seconds() as f64;
    let panel = |y| Panel {
        x: 70.0,
        y,
        width: width - 90.0,
        height: 220.0,
        seconds,
    };
    let (limits, latencies) = (panel(40.0), panel(320.0));
    let mut svg = String::new();
    let title = format!(
        "{}: {} ({})",
        scenario.name,
        scenario.description(),
        model_line()
    );
    open(&mut svg, width, height, &title);
    limits.frame(&mut svg, scenario, true, true);
    latencies.frame(&mut svg, scenario, false, true);
    for (panel, label) in [
        (&limits, "limit / C"),
        (&latencies, "p99 latency / base latency"),
    ] {
        let _ = write!(
            svg,
            r#"<text x="{}" y="{}">{label}</text>"#,
            panel.x,
            panel.y - 4.0
        );
    }
    let step = (scenario.seconds() / 6).max(1);
    let mut t = 0;
    while t <= scenario.seconds() {
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{t} s</text>"#,
            latencies.x(t as f64),
            latencies.y + latencies.height + 16.0
        );
        t += step;
    }
    for (i, one) in series.iter().enumerate() {
        let colour = one.kind.colour();
        limits.line(&mut svg, &one.limit, colour, 1.2);
        latencies.line(&mut svg, &one.p99, colour, 1.2);
        let lx = 80.0 + (i % 3) as f64 * 230.0;
        let ly = latencies.y + latencies.height + 40.0 + (i / 3) as f64 * 16.0;
        let _ = write!(
            svg,
            r#"<rect x="{lx}" y="{}" width="14" height="4" fill="{colour}"/><text x="{}" y="{ly}">{}</text>"#,
            ly - 6.0,
            lx + 18.0,
            one.kind.name()
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// Every scenario (columns) and limiter (rows): the limit in the limiter's
/// colour over the band of ±25 % around the capacity, the p99 latency in
/// black.
pub(crate) fn grid(scenarios: &[(&Scenario, Vec<Series>)]) -> String {
    let (cell_width, cell_height, gap) = (220.0, 100.0, 16.0);
    let (left, top) = (180.0, 100.0);
    let rows = scenarios.first().map_or(0, |(_, s)| s.len());
    let width = left + scenarios.len() as f64 * (cell_width + gap) + 10.0;
    let height = top + rows as f64 * (cell_height + gap) + 40.0;
    let mut svg = String::new();
    open(
        &mut svg,
        width,
        height,
        &format!(
            "Adaptive limits on a simulated dependency ({})",
            model_line()
        ),
    );
    let _ = write!(
        svg,
        r#"<text x="10" y="40">The limit / C in colour over the band of the capacity ± 25 %; the p99 latency of admitted calls / base latency in black; dashed: the scenario's changes.</text>"#
    );
    for (column, (scenario, series)) in scenarios.iter().enumerate() {
        let x = left + column as f64 * (cell_width + gap);
        let _ = write!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            x + cell_width / 2.0,
            top - 34.0,
            scenario.name,
        );
        for (line, what) in scenario.description().split("; ").enumerate() {
            let _ = write!(
                svg,
                r#"<text x="{}" y="{}" text-anchor="middle" font-size="10">{what}</text>"#,
                x + cell_width / 2.0,
                top - 20.0 + line as f64 * 11.0,
            );
        }
        for (row, one) in series.iter().enumerate() {
            let panel = Panel {
                x,
                y: top + row as f64 * (cell_height + gap),
                width: cell_width,
                height: cell_height,
                seconds: scenario.seconds() as f64,
            };
            if column == 0 {
                let _ = write!(
                    svg,
                    r#"<text x="10" y="{}" fill="{}">{}</text>"#,
                    panel.y + cell_height / 2.0,
                    one.kind.colour(),
                    one.kind.name()
                );
            }
            panel.frame(&mut svg, scenario, true, column == 0);
            panel.line(&mut svg, &one.p99, "#000", 0.7);
            panel.line(&mut svg, &one.limit, one.kind.colour(), 1.4);
        }
        let _ = write!(
            svg,
            r#"<text x="{}" y="{}" text-anchor="middle" font-size="10">0 to {} s</text>"#,
            x + cell_width / 2.0,
            top + rows as f64 * (cell_height + gap) + 4.0,
            scenario.seconds()
        );
    }
    svg.push_str("</svg>\n");
    svg
}
