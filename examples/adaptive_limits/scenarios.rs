//! The scenarios: steady load, a slowdown, a loss of half the capacity, a
//! burst of arrivals, an hour; and, when named, a noisy dependency (faults
//! and extra latency drawn by a chaos policy), real dependencies, and a
//! cold start into an outage.

use std::time::Duration;

use bulkhead::chaos::ChaosLatency;

use crate::chaos::Noise;
use crate::model;

/// A stretch of a scenario: its length, the arrival rate (as a share of the
/// healthy capacity `C / B`), how many times slower the dependency is, and
/// the share of its capacity `C` it has (calls it serves at once at its
/// latency of the time).
#[derive(Clone, Copy)]
pub(crate) struct Phase {
    pub(crate) seconds: u64,
    pub(crate) load: f64,
    pub(crate) slow: f64,
    pub(crate) capacity: f64,
    /// An outage through the phase, if any: every call admitted in it hangs
    /// or fails.
    pub(crate) outage: Option<Outage>,
}

/// How a dependency in an outage answers the calls admitted meanwhile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outage {
    /// Never: the caller's timeout drops the call after [`TIMEOUT_B`] base
    /// latencies (the limiter is told `CallOutcome::Dropped`, or
    /// tower-resilience's layer sees its future dropped).
    Hang,
    /// At once, with an error (`CallOutcome::Error`; tower-resilience's
    /// layer sees its service's future end in `Err`).
    Fail,
}

/// The caller's timeout of the calls an outage hangs, in `B`: ten times the
/// no-load latency, far above the 1.1 B a healthy call takes and the
/// 4.4 B the ceiling (4 C) allows a served call, so only hung calls reach
/// it.
pub(crate) const TIMEOUT_B: f64 = 10.0;

pub(crate) struct Scenario {
    pub(crate) name: &'static str,
    pub(crate) what: &'static str,
    pub(crate) phases: Vec<Phase>,
    /// Whether the drift of the limit is measured (hour-long runs).
    pub(crate) long: bool,
    /// What a chaos policy injects into its calls, if anything.
    pub(crate) chaos: Option<Noise>,
    /// Run only when `--only` names it (the noisy ones, the real ones), so
    /// that a run without `--only` prints what it printed before them.
    pub(crate) named_only: bool,
    /// A real dependency's latency (issue 29; `real.rs`), if any: then its
    /// service times, pauses and drift are the scenario's, not the model's.
    pub(crate) real: Option<Real>,
}

/// How a call's work is spread around the base latency `B`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Service {
    /// The model's: uniform within ±10 % of `B`, or lognormal with the
    /// model's `--sigma`.
    Model,
    /// Lognormal with this sigma, median `B`.
    Lognormal(f64),
    /// 80 % of the calls at 0.2 B, 20 % at 1.5 B, each uniform within
    /// ±10 % of its mode (cache hits and misses).
    Bimodal,
    /// Pareto with this alpha, scale `B (alpha - 1) / alpha` (mean `B`
    /// untruncated), cut at [`PARETO_CUT`] B (a client's timeout).
    Pareto(f64),
}

/// Where a Pareto draw is cut, in `B`.
pub(crate) const PARETO_CUT: f64 = 100.0;

/// A real dependency's latency: its service times, whether it pauses
/// ([`PAUSE_EVERY_NS`], for [`PAUSE_NS`]), whether its capacity drifts
/// (by ±[`DRIFT`] over [`DRIFT_PERIOD_NS`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Real {
    pub(crate) service: Service,
    pub(crate) pauses: bool,
    pub(crate) drift: bool,
}

/// The dependency stops every 10 s, at 10 s, 20 s, .., for 300 ms.
pub(crate) const PAUSE_EVERY_NS: u64 = 10_000_000_000;
pub(crate) const PAUSE_NS: u64 = 300_000_000;
/// Its capacity is `C (1 + DRIFT sin(2 pi t / DRIFT_PERIOD))`.
pub(crate) const DRIFT: f64 = 0.3;
pub(crate) const DRIFT_PERIOD_NS: u64 = 600_000_000_000;

impl Service {
    /// The mean work of a call, in `B` (the uniform model's and the model's
    /// lognormal count as `B`, as they always have).
    pub(crate) fn mean(self) -> f64 {
        match self {
            Service::Model => 1.0,
            Service::Lognormal(sigma) => (sigma * sigma / 2.0).exp(),
            Service::Bimodal => 0.8 * 0.2 + 0.2 * 1.5,
            Service::Pareto(alpha) => {
                // E[min(X, H)] = a x / (a - 1) - x^a H^(1 - a) / (a - 1).
                let scale = (alpha - 1.0) / alpha;
                alpha * scale / (alpha - 1.0)
                    - scale.powf(alpha) * PARETO_CUT.powf(1.0 - alpha) / (alpha - 1.0)
            }
        }
    }
}

impl Scenario {
    /// Its length, in seconds.
    pub(crate) fn seconds(&self) -> u64 {
        self.phases.iter().map(|p| p.seconds).sum()
    }

    /// The scenario with `noise` injected into its calls.
    pub(crate) fn with_chaos(mut self, noise: Noise) -> Scenario {
        self.chaos = Some(noise);
        self
    }

    /// What it is, with its chaos if any.
    pub(crate) fn description(&self) -> String {
        match &self.chaos {
            None => self.what.to_owned(),
            Some(noise) => format!("{}; chaos: {}", self.what, noise.describe()),
        }
    }

    /// The share of `C` the dependency has at `ns`: its phase's, drifting
    /// if it drifts.
    pub(crate) fn capacity_at(&self, ns: u64) -> f64 {
        let phase = self.phase_at(ns).capacity;
        match self.real {
            Some(Real { drift: true, .. }) => {
                let turn = (ns % DRIFT_PERIOD_NS) as f64 / DRIFT_PERIOD_NS as f64;
                phase * (1.0 + DRIFT * (std::f64::consts::TAU * turn).sin())
            }
            _ => phase,
        }
    }

    /// Whether the dependency is paused at `ns`.
    pub(crate) fn paused(&self, ns: u64) -> bool {
        matches!(self.real, Some(Real { pauses: true, .. }))
            && ns >= PAUSE_EVERY_NS
            && ns % PAUSE_EVERY_NS < PAUSE_NS
    }

    /// The next start or end of a pause after `ns` (`u64::MAX` if it never
    /// pauses).
    pub(crate) fn next_pause_edge(&self, ns: u64) -> u64 {
        if !matches!(self.real, Some(Real { pauses: true, .. })) {
            return u64::MAX;
        }
        let cycle = ns / PAUSE_EVERY_NS * PAUSE_EVERY_NS;
        if ns < PAUSE_EVERY_NS {
            PAUSE_EVERY_NS
        } else if ns - cycle < PAUSE_NS {
            cycle + PAUSE_NS
        } else {
            cycle + PAUSE_EVERY_NS
        }
    }

    /// Whether a phase of it is an outage (the cold start's scenarios).
    pub(crate) fn cold(&self) -> bool {
        self.phases.iter().any(|p| p.outage.is_some())
    }

    /// How the calls' work is spread.
    pub(crate) fn service(&self) -> Service {
        self.real.map_or(Service::Model, |r| r.service)
    }

    /// The phase at `ns` into the scenario (the last one past its end).
    pub(crate) fn phase_at(&self, ns: u64) -> Phase {
        let mut end = 0;
        for phase in &self.phases {
            end += phase.seconds * 1_000_000_000;
            if ns < end {
                return *phase;
            }
        }
        self.phases[self.phases.len() - 1]
    }
}

pub(crate) fn scenarios(quick: bool) -> Vec<Scenario> {
    let phase = |seconds, load, slow| Phase {
        seconds,
        load,
        slow,
        capacity: 1.0,
        outage: None,
    };
    let mut all = vec![
        Scenario {
            name: "steady",
            what: "80 % of capacity for 5 minutes",
            phases: vec![phase(300, 0.8, 1.0)],
            long: false,
            chaos: None,
            named_only: false,
            real: None,
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
            chaos: None,
            named_only: false,
            real: None,
        },
        Scenario {
            name: "half",
            what: "80 %; the capacity halves at 60 s for 60 s",
            phases: vec![
                phase(60, 0.8, 1.0),
                Phase {
                    capacity: 0.5,
                    ..phase(60, 0.8, 1.0)
                },
                phase(60, 0.8, 1.0),
            ],
            long: false,
            chaos: None,
            named_only: false,
            real: None,
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
            chaos: None,
            named_only: false,
            real: None,
        },
    ];
    if !quick {
        all.push(Scenario {
            name: "hour",
            what: "80 % of capacity for an hour",
            phases: vec![phase(3600, 0.8, 1.0)],
            long: true,
            chaos: None,
            named_only: false,
            real: None,
        });
        all.push(Scenario {
            name: "hour-overload",
            what: "120 % of capacity for an hour",
            phases: vec![phase(3600, 1.2, 1.0)],
            long: true,
            chaos: None,
            named_only: false,
            real: None,
        });
    }
    // A noisy dependency: 1 % of the calls 5-20x B late (chaos holds their
    // slot while it sleeps; the dependency does no more work for them) and
    // 1 % failed at once, at 80 % load. Neither is congestion: the
    // dependency's capacity is intact, and the slots the late calls hold
    // raise the concurrency the load needs only from 0.8 C to about 0.9 C
    // (Little: 0.8 C x (1 + 0.01 x 12.5)), below C, so a static limit at C
    // still admits nearly every call. What an adaptive limit loses beyond
    // it, it loses by reading the noise as overload. (At 5 % late the load
    // needs 1.3 C and every limit at C rejects a quarter of the calls:
    // `--chaos latency_rate=0.05`.)
    let noise = Noise {
        fault_rate: 0.01,
        latency_rate: 0.01,
        latency: ChaosLatency::range(
            Duration::from_secs_f64(5.0 * model().b),
            Duration::from_secs_f64(20.0 * model().b),
        ),
        seed: NOISY_SEED,
    };
    let noisy = |name, what, seconds, long| {
        Scenario {
            name,
            what,
            phases: vec![phase(seconds, 0.8, 1.0)],
            long,
            chaos: None,
            named_only: true,
            real: None,
        }
        .with_chaos(noise)
    };
    all.push(noisy(
        "noisy",
        "80 % for 5 minutes, a noisy dependency",
        300,
        false,
    ));
    if !quick {
        all.push(noisy(
            "noisy-hour",
            "80 % for an hour, a noisy dependency",
            3600,
            true,
        ));
    }
    all.extend(real(quick));
    all.extend(cold());
    all
}

/// A cold start into an outage (issue 29; `--only cold`, or by name), at
/// 80 % of the capacity: from the first call the dependency hangs
/// (`cold-hang`) or fails (`cold-fail`), then at [`OUTAGE_S`] it recovers to
/// the uniform service, served for a minute more. The same with `--quick`.
fn cold() -> Vec<Scenario> {
    let scenario = |name, what, outage| Scenario {
        name,
        what,
        phases: vec![
            Phase {
                seconds: OUTAGE_S,
                load: 0.8,
                slow: 1.0,
                capacity: 1.0,
                outage: Some(outage),
            },
            Phase {
                seconds: 60,
                load: 0.8,
                slow: 1.0,
                capacity: 1.0,
                outage: None,
            },
        ],
        long: false,
        chaos: None,
        named_only: true,
        real: None,
    };
    vec![
        scenario(
            "cold-hang",
            "80 %; from the first call every call hangs until the caller's timeout (10 B) drops it; recovers at 30 s",
            Outage::Hang,
        ),
        scenario(
            "cold-fail",
            "80 %; from the first call every call fails at once with an error; recovers at 30 s",
            Outage::Fail,
        ),
    ]
}

/// How long the outage of the cold start lasts, in seconds.
pub(crate) const OUTAGE_S: u64 = 30;

/// The names `--only cold` stands for.
pub(crate) const COLD: &str = "cold";

/// The real dependencies of issue 29 (`--only real`, or by name), at 80 %
/// of the capacity (of the mean work: the arrival rate is `0.8 C / mean`):
/// 5 minutes each with `--quick` (10 for `drift`, one period), an hour
/// without.
fn real(quick: bool) -> Vec<Scenario> {
    let seconds = if quick { 300 } else { 3600 };
    let scenario = |name, what, service, pauses, drift| Scenario {
        name,
        what,
        phases: vec![Phase {
            seconds: if drift && quick { 600 } else { seconds },
            load: 0.8,
            slow: 1.0,
            capacity: 1.0,
            outage: None,
        }],
        long: !quick,
        chaos: None,
        named_only: true,
        real: Some(Real {
            service,
            pauses,
            drift,
        }),
    };
    vec![
        scenario(
            "lognormal-0.5",
            "80 %, lognormal service times, sigma 0.5, median B",
            Service::Lognormal(0.5),
            false,
            false,
        ),
        scenario(
            "lognormal-1.0",
            "80 %, lognormal service times, sigma 1.0, median B",
            Service::Lognormal(1.0),
            false,
            false,
        ),
        scenario(
            "bimodal",
            "80 %, 80 % of the calls at 0.2 B, 20 % at 1.5 B",
            Service::Bimodal,
            false,
            false,
        ),
        scenario(
            "pareto-1.5",
            "80 %, Pareto service times, alpha 1.5, mean B, cut at 100 B",
            Service::Pareto(1.5),
            false,
            false,
        ),
        scenario(
            "pauses",
            "80 %, uniform service times; every 10 s the dependency stops for 300 ms",
            Service::Model,
            true,
            false,
        ),
        scenario(
            "drift",
            "80 % of C, uniform service times; the capacity drifts by +-30 % over 10 minutes",
            Service::Model,
            false,
            true,
        ),
    ]
}

/// The names `--only real` stands for.
pub(crate) const REAL: &str = "real";

/// The seed of the noisy scenarios' chaos (`--chaos seed=N` for another).
pub(crate) const NOISY_SEED: u64 = 28;
