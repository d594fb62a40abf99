//! One line per capacity and limiter over every scenario: the figures the
//! adaptive guide quotes (`--capacities 5,10,20,50`).

use crate::limiters::Kind;
use crate::report::Report;

/// The worst of a limiter's scenarios at one capacity, each with the
/// scenario it came from.
pub(crate) struct Line {
    pub(crate) c: f64,
    pub(crate) kind: Kind,
    /// The slowest settling after a change; `None` inside if some change
    /// never settled.
    settle: Option<(Option<f64>, &'static str)>,
    /// The slowest first entry into the band after a change.
    enter: Option<(Option<f64>, &'static str)>,
    /// The highest limit from 5 s after a change, in the phase's capacity.
    peak: (f64, &'static str),
    /// The largest share of the time out of the band from 5 s after a
    /// change (probes included).
    out_of_band: (f64, &'static str),
    /// The largest share of the time above the band from 5 s after a
    /// change.
    above_band: (f64, &'static str),
    /// The worst p99 once settled, in base latencies.
    p99: (f64, &'static str),
    /// The lowest and highest goodput.
    goodput: (f64, f64),
}

impl Line {
    pub(crate) fn new(c: f64, kind: Kind) -> Self {
        Line {
            c,
            kind,
            settle: None,
            enter: None,
            peak: (0.0, ""),
            out_of_band: (0.0, ""),
            above_band: (0.0, ""),
            p99: (0.0, ""),
            goodput: (f64::INFINITY, 0.0),
        }
    }

    /// Takes in `report`, the run of scenario `name`.
    pub(crate) fn add(&mut self, name: &'static str, report: &Report) {
        slower(&mut self.settle, report.settle(), name);
        slower(&mut self.enter, report.enter(), name);
        if report.peak > self.peak.0 {
            self.peak = (report.peak, name);
        }
        if report.out_of_band > self.out_of_band.0 {
            self.out_of_band = (report.out_of_band, name);
        }
        if report.above_band > self.above_band.0 {
            self.above_band = (report.above_band, name);
        }
        if report.p99_settled > self.p99.0 {
            self.p99 = (report.p99_settled, name);
        }
        self.goodput.0 = self.goodput.0.min(report.goodput);
        self.goodput.1 = self.goodput.1.max(report.goodput);
    }
}

/// Keeps the slower of `worst` and `time` (`None`: never), with the
/// scenario it came from.
fn slower(worst: &mut Option<(Option<f64>, &'static str)>, time: Option<f64>, name: &'static str) {
    let slower = match (*worst, time) {
        (None, _) => true,
        (Some((None, _)), _) => false,
        (Some((Some(_), _)), None) => true,
        (Some((Some(w), _)), Some(t)) => t > w,
    };
    if slower {
        *worst = Some((time, name));
    }
}

/// A time, or never, with its scenario.
fn time(time: Option<(Option<f64>, &'static str)>) -> String {
    match time {
        Some((Some(s), name)) => format!("{s:.1} s ({name})"),
        Some((None, name)) => format!("never ({name})"),
        None => String::new(),
    }
}

/// The summary table.
pub(crate) fn print(lines: &[Line]) {
    println!("\nSummary: the worst scenario of each limiter at each capacity C (in brackets)\n");
    println!(
        "| C | limiter | in the band ±25 % of C after (slowest change) | and stays in it after | highest limit from 5 s after a change | out of the band from 5 s after a change (probes included) | above it | p99 settled | goodput |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for line in lines {
        let (enter, settle) = (time(line.enter), time(line.settle));
        let at = |name: &str| {
            if name.is_empty() {
                String::new()
            } else {
                format!(" ({name})")
            }
        };
        println!(
            "| {} | {} | {enter} | {settle} | {:.2} C{} | {:.1} %{} | {:.1} %{} | {:.2} B{} | {:.1}-{:.1} % |",
            line.c,
            line.kind.name(),
            line.peak.0,
            at(line.peak.1),
            100.0 * line.out_of_band.0,
            at(line.out_of_band.1),
            100.0 * line.above_band.0,
            at(line.above_band.1),
            line.p99.0,
            at(line.p99.1),
            100.0 * line.goodput.0,
            100.0 * line.goodput.1,
        );
    }
}
