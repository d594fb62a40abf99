//! The simulation: Poisson arrivals, a processor-sharing dependency, by
//! discrete events, each limiter on the same arrivals and work.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::time::Duration;

use crate::limiters::{Kind, Limiter, Ticket};
use crate::scenarios::{Phase, Scenario};
use crate::{TRACE_NS, model};

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
    pub(crate) no_load: Option<f64>,
}

pub(crate) fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn nanos(seconds: f64) -> u64 {
    (seconds * 1e9).round() as u64
}

pub(crate) fn simulate(scenario: &Scenario, kind: Kind) -> Run {
    let mut limiter = Limiter::new(kind);
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
        no_load: None,
    };
    let rate = |phase: Phase| phase.load * model().c / model().b;
    let mut next_arrival = nanos(random.exponential(rate(phase_at(0))));
    loop {
        let n = in_service.len() as f64;
        let c = model().c * phase_at(now).capacity;
        let speed = if n > c { c / n } else { 1.0 };
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
