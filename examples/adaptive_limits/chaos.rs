//! The noise of a scenario: faults and extra latency drawn per call by a
//! real chaos policy of the library (`bulkhead::chaos::Chaos`, enabled,
//! seeded), as `--chaos fault_rate=..,latency_rate=..,latency=..,seed=..`
//! or the `noisy` scenarios set it.
//!
//! The simulation asks the policy what to inject ([`Chaos::draw`]) for
//! every arrival, in the order of arrival, admitted or not, so that every
//! limiter sees the same injections on the same arrivals, as it sees the
//! same work (in the library a rejected call never reaches chaos and takes
//! no number; the draws are as random either way). Nothing is slept: the
//! simulation schedules the injected latency as an event of its own.

use bulkhead::chaos::{Chaos, ChaosConfig, ChaosLatency};

/// What chaos injects: the share of the calls failed, the share delayed,
/// by how much, and the seed of the draws.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Noise {
    pub(crate) fault_rate: f64,
    pub(crate) latency_rate: f64,
    pub(crate) latency: ChaosLatency,
    pub(crate) seed: u64,
}

impl Noise {
    /// No noise: what `--chaos` lays its keys over in a scenario that has
    /// none of its own.
    pub(crate) fn none() -> Noise {
        Noise {
            fault_rate: 0.0,
            latency_rate: 0.0,
            latency: ChaosLatency::fixed(ChaosConfig::DEFAULT_LATENCY),
            seed: 0,
        }
    }

    /// `self` with the keys of `list` (`key=value,key=value`): `fault_rate`,
    /// `latency_rate`, `latency` (`"300ms"` or `"500ms..2s"`) and `seed`.
    ///
    /// # Panics
    ///
    /// On an unknown key or a value that does not parse or is out of range,
    /// naming it (a flag of the command line).
    pub(crate) fn with(mut self, list: &str) -> Noise {
        for pair in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = pair
                .split_once('=')
                .unwrap_or_else(|| panic!("--chaos: {pair:?} is not key=value"));
            let (key, value) = (key.trim(), value.trim());
            let number = || -> f64 {
                value
                    .parse()
                    .unwrap_or_else(|_| panic!("--chaos {key}: {value:?} is not a number"))
            };
            match key {
                "fault_rate" => self.fault_rate = number(),
                "latency_rate" => self.latency_rate = number(),
                "latency" => {
                    self.latency = ChaosLatency::parse(key, value)
                        .unwrap_or_else(|e| panic!("--chaos latency: {e}"));
                }
                "seed" => {
                    self.seed = value
                        .parse()
                        .unwrap_or_else(|_| panic!("--chaos seed: {value:?} is not a u64"));
                }
                _ => {
                    panic!("--chaos: unknown key {key:?} (fault_rate, latency_rate, latency, seed)")
                }
            }
        }
        self.config(); // refuses a rate out of 0..=1 here, with the library's error
        self
    }

    /// In a scenario's description: `1 % of calls +500ms..2s, 1 % fail,
    /// seed 28`.
    pub(crate) fn describe(&self) -> String {
        format!(
            "{} % of calls +{}, {} % fail, seed {}",
            100.0 * self.latency_rate,
            self.latency,
            100.0 * self.fault_rate,
            self.seed
        )
    }

    /// The configuration of the chaos policy: enabled, seeded.
    pub(crate) fn config(&self) -> ChaosConfig {
        ChaosConfig::builder()
            .enabled(true)
            .fault_rate(self.fault_rate)
            .latency_rate(self.latency_rate)
            .latency(self.latency)
            .seed(self.seed)
            .build()
            .unwrap_or_else(|e| panic!("--chaos: {e}"))
    }

    /// A chaos policy of the library drawing this noise, its count of calls
    /// at 0: one per run, so that every limiter's run draws the same
    /// sequence.
    pub(crate) fn chaos(&self) -> Chaos {
        Chaos::new("adaptive_limits", self.config())
    }
}

/// What chaos injects into one call: an extra latency before it, in
/// nanoseconds, and whether it then fails.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub(crate) struct Injected {
    pub(crate) latency: Option<u64>,
    pub(crate) fault: bool,
}

/// The next call's injection (nothing without chaos).
pub(crate) fn draw(chaos: Option<&Chaos>) -> Injected {
    match chaos.and_then(Chaos::draw) {
        None => Injected::default(),
        Some(injection) => Injected {
            latency: injection
                .latency()
                .map(|l| u64::try_from(l.as_nanos()).unwrap_or(u64::MAX)),
            fault: injection.fault().is_some(),
        },
    }
}
