//! The simulation: Poisson arrivals, a processor-sharing dependency, by
//! discrete events, each limiter on the same arrivals and work (and, in a
//! scenario with chaos, the same injections).
//!
//! Chaos sits inside the limiter, as in the library (`Bulkhead( Chaos(
//! call ) )`): an admitted call drawn for a latency waits it out holding
//! its slot, outside the dependency (which does no work for it meanwhile),
//! then is served; a call drawn for a fault ends as a failure, at once or
//! after its latency, without reaching the dependency. The limiter is told
//! a failure as the library tells it: ours get `CallOutcome::Error` on the
//! permit (what a pipeline sets for `Rejection::Injected`: counted, its
//! hold time left out of the latency samples); tower-resilience's layer
//! sees its service's future end in `Err`, and calls its algorithm's
//! `record_failure`.
//!
//! An outage (the cold start's scenarios) answers no call admitted during
//! it: a hung call holds its slot until the caller's timeout drops it (ours
//! are told `CallOutcome::Dropped`; tower-resilience's layer has its future
//! dropped, and calls its algorithm's `record_dropped`), a failed one ends
//! at once as an error, as chaos' faults do. Neither reaches the dependency.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::time::Duration;

use crate::chaos::{Injected, draw};
use crate::limiters::{Kind, Limiter, Ticket};
use crate::scenarios::{Outage, PARETO_CUT, Phase, Scenario, Service, TIMEOUT_B};
use crate::{TRACE_NS, model};

/// splitmix64: the same arrivals and work for every limiter.
pub(crate) struct Random(pub(crate) u64);

impl Random {
    pub(crate) fn unit(&mut self) -> f64 {
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

    /// The work of a call whose base latency is `base`, spread as
    /// `service` says: two draws, however it is spread, so that every
    /// limiter sees the same sequence.
    pub(crate) fn work(&mut self, base: f64, service: Service) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        let lognormal = |sigma: f64| {
            let normal = (-2.0 * (1.0 - u).ln()).sqrt() * (std::f64::consts::TAU * v).cos();
            base * (sigma * normal).exp()
        };
        match service {
            Service::Model => match model().sigma {
                None => base * (0.9 + 0.2 * u),
                Some(sigma) => lognormal(sigma),
            },
            Service::Lognormal(sigma) => lognormal(sigma),
            Service::Bimodal => {
                if u < 0.8 {
                    0.2 * base * (0.9 + 0.2 * u / 0.8)
                } else {
                    1.5 * base * (0.9 + 0.2 * (u - 0.8) / 0.2)
                }
            }
            Service::Pareto(alpha) => {
                let scale = base * (alpha - 1.0) / alpha;
                (scale * (1.0 - u).powf(-1.0 / alpha)).min(PARETO_CUT * base)
            }
        }
    }
}

/// One admitted call.
struct Call {
    start: u64,
    base: f64,
    ticket: Ticket,
    /// Its work, in seconds of service at full speed.
    work: f64,
    /// Whether chaos fails it once its injected latency is over.
    fault: bool,
    /// Whether an outage hung it: the caller's timeout drops it when its
    /// wait is over.
    hangs: bool,
}

/// One completed call: when it was admitted, and its latency in base
/// latencies of its time.
#[derive(Clone, Copy)]
pub(crate) struct Done {
    pub(crate) start: u64,
    pub(crate) ratio: f32,
}

#[derive(Clone, Copy)]
pub(crate) struct Row {
    pub(crate) at: u64,
    pub(crate) limit: u32,
    pub(crate) probing: bool,
}

pub(crate) struct Run {
    pub(crate) kind: Kind,
    pub(crate) done: Vec<Done>,
    pub(crate) rows: Vec<Row>,
    pub(crate) arrivals: u64,
    pub(crate) rejected: u64,
    /// Admitted calls chaos delayed, and those it failed.
    pub(crate) delayed: u64,
    pub(crate) faulted: u64,
    pub(crate) no_load: Option<f64>,
}

pub(crate) fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn nanos(seconds: f64) -> u64 {
    (seconds * 1e9).round() as u64
}

pub(crate) fn simulate(scenario: &Scenario, kind: Kind) -> Run {
    simulate_with(scenario, kind, Limiter::new(kind))
}

/// [`simulate`] with `limiter` (a static limit of the sweep, `real.rs`).
pub(crate) fn simulate_with(scenario: &Scenario, kind: Kind, limiter: Limiter) -> Run {
    simulate_observed(scenario, kind, limiter, |_, _| {})
}

/// [`simulate_with`], showing `observe` the limiter after each event, at
/// the event's time (the cold start's first cut, `cold.rs`).
pub(crate) fn simulate_observed(
    scenario: &Scenario,
    kind: Kind,
    mut limiter: Limiter,
    mut observe: impl FnMut(u64, &Limiter),
) -> Run {
    let service = scenario.service();
    let mut random = Random(0x5EED);
    let end = scenario.seconds() * 1_000_000_000;
    let phase_at = |t: u64| scenario.phase_at(t);
    // Processor sharing in virtual time: each call needs `work` seconds of
    // service; with n in service each progresses at min(1, C / n), `C` the
    // capacity of the phase.
    let mut virtual_time = 0.0f64;
    let mut in_service: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
    let mut calls: HashMap<u64, Call> = HashMap::new();
    let mut now = 0u64;
    let mut next_id = 0u64;
    let mut next_trace = 0u64;
    let mut run = Run {
        kind,
        done: Vec::new(),
        rows: Vec::new(),
        arrivals: 0,
        rejected: 0,
        delayed: 0,
        faulted: 0,
        no_load: None,
    };
    // One chaos policy per run, its count of calls at 0: each limiter's
    // arrivals draw the same injections.
    let chaos = scenario.chaos.map(|noise| noise.chaos());
    // Calls waiting out an injected latency: when it ends, and the call.
    let mut sleeping: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
    let rate = |phase: Phase| phase.load * model().c / (model().b * service.mean());
    let mut next_arrival = nanos(random.exponential(rate(phase_at(0))));
    loop {
        let n = in_service.len() as f64;
        let c = model().c * scenario.capacity_at(now);
        // A paused dependency serves nothing until the pause ends (the
        // pause's edges are events of their own).
        let paused = scenario.paused(now);
        let speed = if paused {
            0.0
        } else if n > c {
            c / n
        } else {
            1.0
        };
        let next_departure = match in_service.peek() {
            Some(Reverse((finish, _))) if !paused => {
                let left = (f64::from_bits(*finish) - virtual_time).max(0.0);
                now + nanos(left / speed).max(1)
            }
            _ => u64::MAX,
        };
        let next_wake = sleeping.peek().map_or(u64::MAX, |Reverse((at, _))| *at);
        let next_edge = scenario.next_pause_edge(now);
        let t = next_arrival
            .min(next_departure)
            .min(next_wake)
            .min(next_edge);
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
        if t == next_edge && t != next_departure && t != next_wake && t != next_arrival {
            // A pause starts or ends: the speed changes from here.
            continue;
        }
        if t == next_departure {
            let Reverse((_, id)) = in_service.pop().expect("a call in service");
            let call = calls.remove(&id).expect("a known call");
            let latency = now - call.start;
            limiter.complete(call.ticket, Duration::from_nanos(latency), true);
            run.done.push(Done {
                start: call.start,
                ratio: (secs(latency) / call.base) as f32,
            });
        } else if t == next_wake {
            // An injected latency is over: the call fails, or reaches the
            // dependency.
            let Reverse((_, id)) = sleeping.pop().expect("a call asleep");
            if calls[&id].hangs {
                let call = calls.remove(&id).expect("a known call");
                limiter.time_out(call.ticket, Duration::from_nanos(now - call.start));
            } else if calls[&id].fault {
                let call = calls.remove(&id).expect("a known call");
                run.faulted += 1;
                limiter.complete(call.ticket, Duration::from_nanos(now - call.start), false);
            } else {
                in_service.push(Reverse(((virtual_time + calls[&id].work).to_bits(), id)));
            }
        } else {
            let phase = phase_at(now);
            run.arrivals += 1;
            // Drawn for every arrival, admitted or not: the same injections
            // on the same arrivals for every limiter.
            let injected: Injected = draw(chaos.as_ref());
            match limiter.admit() {
                Some(ticket) if phase.outage.is_some() => {
                    let base = model().b * phase.slow;
                    let _ = random.work(base, service);
                    match phase.outage {
                        Some(Outage::Hang) => {
                            next_id += 1;
                            calls.insert(
                                next_id,
                                Call {
                                    start: now,
                                    base,
                                    ticket,
                                    work: 0.0,
                                    fault: false,
                                    hangs: true,
                                },
                            );
                            let timeout = nanos(TIMEOUT_B * base);
                            sleeping.push(Reverse((now + timeout, next_id)));
                        }
                        _ => limiter.complete(ticket, Duration::ZERO, false),
                    }
                }
                Some(ticket) => {
                    let base = model().b * phase.slow;
                    let work = random.work(base, service);
                    run.delayed += u64::from(injected.latency.is_some());
                    match injected.latency {
                        None if injected.fault => {
                            // Failed at once, its slot given back.
                            run.faulted += 1;
                            limiter.complete(ticket, Duration::ZERO, false);
                        }
                        latency => {
                            next_id += 1;
                            calls.insert(
                                next_id,
                                Call {
                                    start: now,
                                    base,
                                    ticket,
                                    work,
                                    fault: injected.fault,
                                    hangs: false,
                                },
                            );
                            match latency {
                                None => in_service
                                    .push(Reverse(((virtual_time + work).to_bits(), next_id))),
                                Some(latency) => {
                                    sleeping.push(Reverse((now.saturating_add(latency), next_id)))
                                }
                            }
                        }
                    }
                }
                None => {
                    run.rejected += 1;
                    // Draw the work anyway, so every limiter sees the same
                    // sequence of arrivals and work.
                    let _ = random.work(1.0, service);
                }
            }
            next_arrival = now + nanos(random.exponential(rate(phase_at(now)))).max(1);
        }
        observe(now, &limiter);
    }
    run.no_load = limiter.no_load();
    run
}
