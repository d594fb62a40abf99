//! The scenarios: steady load, a slowdown, a loss of half the capacity, a
//! burst of arrivals, an hour; and, when named, a noisy dependency (faults
//! and extra latency drawn by a chaos policy).

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
}

pub(crate) struct Scenario {
    pub(crate) name: &'static str,
    pub(crate) what: &'static str,
    pub(crate) phases: Vec<Phase>,
    /// Whether the drift of the limit is measured (hour-long runs).
    pub(crate) long: bool,
    /// What a chaos policy injects into its calls, if anything.
    pub(crate) chaos: Option<Noise>,
    /// Run only when `--only` names it (the noisy ones), so that a run
    /// without `--only` prints what it printed before them.
    pub(crate) named_only: bool,
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
    };
    let mut all = vec![
        Scenario {
            name: "steady",
            what: "80 % of capacity for 5 minutes",
            phases: vec![phase(300, 0.8, 1.0)],
            long: false,
            chaos: None,
            named_only: false,
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
        });
        all.push(Scenario {
            name: "hour-overload",
            what: "120 % of capacity for an hour",
            phases: vec![phase(3600, 1.2, 1.0)],
            long: true,
            chaos: None,
            named_only: false,
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
    all
}

/// The seed of the noisy scenarios' chaos (`--chaos seed=N` for another).
pub(crate) const NOISY_SEED: u64 = 28;
