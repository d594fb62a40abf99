//! The scenarios: steady load, a slowdown, a loss of half the capacity, a
//! burst of arrivals, an hour.

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
}

impl Scenario {
    /// Its length, in seconds.
    pub(crate) fn seconds(&self) -> u64 {
        self.phases.iter().map(|p| p.seconds).sum()
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
