//! One sample of the dashboard's stream: the registry's snapshot as JSON,
//! with the refusals per second since the sample before.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bulkhead_core::{BulkheadEventKind, Event, EventStream, HistogramKind, HistogramSnapshot};
use serde_json::{Value, json};

use crate::RegistrySnapshot;
use crate::observe::names::circuit_state;
use crate::registry::Registry;

/// The counters of one sample that the next one needs for its rates.
#[derive(Debug, Default)]
struct Counters {
    at: Option<Instant>,
    /// A bulkhead's `traffic.rejected`, when the registry tracks sizing.
    rejected: HashMap<String, u64>,
    /// A bulkhead's `shed` per class.
    shed: HashMap<String, [u64; 4]>,
    /// A circuit breaker's `not_permitted_calls`.
    not_permitted: HashMap<String, u64>,
    /// Each instance's call durations, all outcomes together
    /// (cumulative).
    calls: HashMap<String, HistogramSnapshot>,
}

/// What the events since the last sample counted, per instance.
#[derive(Debug, Default)]
struct EventCounts {
    bulkhead_rejected: HashMap<&'static str, u64>,
    keyed_rejected: HashMap<&'static str, u64>,
    rate_limited: HashMap<&'static str, u64>,
}

/// How many of an instance's events one of [`EventCounts`]' maps counted.
fn counted(counts: &HashMap<&'static str, u64>, id: &str) -> u64 {
    counts.get(id).copied().unwrap_or(0)
}

/// Samples a registry for one client of the stream: its own subscription
/// to the registry's events (the refusals no counter keeps) and its own
/// previous sample, so that each client's rates cover its own intervals.
#[derive(Debug)]
pub(super) struct Sampler {
    registry: Registry,
    events: EventStream,
    seq: Arc<AtomicU64>,
    previous: Counters,
    interval: Duration,
}

impl Sampler {
    pub(super) fn new(registry: &Registry, seq: Arc<AtomicU64>, interval: Duration) -> Self {
        Sampler {
            registry: registry.clone(),
            events: registry.subscribe(),
            seq,
            previous: Counters::default(),
            interval,
        }
    }

    /// The registry now, as the page reads it.
    pub(super) fn sample(&mut self) -> Value {
        let mut counts = EventCounts::default();
        for event in self.events.drain() {
            match event {
                Event::Bulkhead(event) => {
                    let counter = match event.kind {
                        BulkheadEventKind::Rejected { .. } | BulkheadEventKind::Shed { .. } => {
                            &mut counts.bulkhead_rejected
                        }
                        BulkheadEventKind::KeyRejected { .. } => &mut counts.keyed_rejected,
                        _ => continue,
                    };
                    *counter.entry(event.instance).or_default() += 1;
                }
                Event::RateLimiter(event) => {
                    *counts.rate_limited.entry(event.instance).or_default() += 1;
                }
                _ => {}
            }
        }
        // The clock is read after the events are drained and before the
        // snapshot: an event counted here happened before `now`.
        let now = self.registry.clock().now();
        let snapshot = self.registry.snapshot();
        let elapsed = self
            .previous
            .at
            .map(|at| now.saturating_duration_since(at).as_secs_f64())
            .filter(|secs| *secs > 0.0);
        let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        let mut next = Counters {
            at: Some(now),
            calls: call_durations(&self.registry),
            ..Counters::default()
        };
        let value = build(
            &snapshot,
            &counts,
            &self.previous,
            &mut next,
            elapsed,
            Meta {
                seq,
                interval: self.interval,
                missed: self.events.missed(),
            },
        );
        self.previous = next;
        value
    }
}

/// Each instance's call durations, all outcomes merged.
fn call_durations(registry: &Registry) -> HashMap<String, HistogramSnapshot> {
    let mut calls: HashMap<String, HistogramSnapshot> = HashMap::new();
    for reading in registry.telemetry().histograms() {
        if reading.kind() == HistogramKind::CallDuration {
            calls
                .entry(reading.instance().to_owned())
                .or_default()
                .merge(reading.histogram());
        }
    }
    calls
}

/// The latency of an instance's calls since the previous sample:
/// `{"p50_ms", "p99_ms", "calls_per_sec"}`, `null` without a previous
/// sample or without calls since.
fn latency(id: &str, previous: &Counters, next: &Counters, elapsed: Option<f64>) -> Value {
    let (Some(now), Some(_)) = (next.calls.get(id), elapsed) else {
        return Value::Null;
    };
    match previous.calls.get(id) {
        Some(before) => summary(&now.since(before), elapsed),
        // The instance's first calls ended since the previous sample.
        None => summary(now, elapsed),
    }
}

fn summary(calls: &HistogramSnapshot, elapsed: Option<f64>) -> Value {
    if calls.count() == 0 {
        return Value::Null;
    }
    json!({
        "p50_ms": optional_millis(calls.quantile(0.5)),
        "p99_ms": optional_millis(calls.quantile(0.99)),
        "calls_per_sec": rate(calls.count(), elapsed),
    })
}

struct Meta {
    seq: u64,
    interval: Duration,
    missed: u64,
}

/// A count over the interval as a rate, `null` when there is no interval
/// (the first sample of a stream, or a clock that did not move).
fn rate(count: u64, elapsed: Option<f64>) -> Value {
    match elapsed {
        Some(secs) => json!(count as f64 / secs),
        None => Value::Null,
    }
}

/// A count over the interval as a rate, `null` when the count is unknown
/// too (a counter's first reading).
fn optional_rate(count: Option<u64>, elapsed: Option<f64>) -> Value {
    count.map_or(Value::Null, |count| rate(count, elapsed))
}

/// How much an instance's counter grew since the previous sample, `None`
/// on its first reading.
fn increase(previous: &HashMap<String, u64>, id: &str, now: u64) -> Option<u64> {
    previous.get(id).map(|before| now.saturating_sub(*before))
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn optional_millis(duration: Option<Duration>) -> Value {
    duration.map_or(Value::Null, |duration| json!(millis(duration)))
}

fn build(
    snapshot: &RegistrySnapshot,
    counts: &EventCounts,
    previous: &Counters,
    next: &mut Counters,
    elapsed: Option<f64>,
    meta: Meta,
) -> Value {
    let time = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
        });

    let bulkheads: Vec<Value> = snapshot
        .bulkheads()
        .iter()
        .map(|b| {
            let id = b.instance.as_str();
            // Exact when the registry tracks sizing; else the events', which
            // undercount if this client fell behind (`events_missed`).
            let rejected = match &b.traffic {
                Some(traffic) => {
                    next.rejected.insert(id.to_owned(), traffic.rejected);
                    increase(&previous.rejected, id, traffic.rejected)
                }
                None => Some(counted(&counts.bulkhead_rejected, id)),
            };
            let shed_before = previous.shed.get(id);
            let classes: Vec<Value> = b
                .classes
                .iter()
                .enumerate()
                .map(|(i, class)| {
                    let shed = shed_before.map(|before| class.shed.saturating_sub(before[i]));
                    json!({
                        "class": class.class.name(),
                        "threshold": class.threshold,
                        "held": class.held,
                        "beyond_share": class.beyond_share,
                        "shed_total": class.shed,
                        "shed_per_sec": optional_rate(shed, elapsed),
                    })
                })
                .collect();
            next.shed
                .insert(id.to_owned(), std::array::from_fn(|i| b.classes[i].shed));
            let adaptive = b.adaptive.as_ref().map_or(Value::Null, |a| {
                json!({
                    "algorithm": a.algorithm.name(),
                    "floor": a.floor,
                    "ceiling": a.ceiling,
                    "limit": a.limit,
                    "no_load_ms": optional_millis(a.no_load),
                    "recent_ms": optional_millis(a.recent),
                    "probing": a.probing,
                })
            });
            let traffic = b.traffic.as_ref().map_or(Value::Null, |t| {
                json!({
                    "admitted": t.admitted,
                    "rejected": t.rejected,
                    "abandoned": t.abandoned,
                    "completed": t.completed,
                    "mean_hold_ms": optional_millis(t.mean_hold()),
                })
            });
            json!({
                "instance": id,
                "in_flight": b.concurrent_calls,
                "limit": b.max_concurrent,
                "waiting": b.waiting_calls,
                "available": b.available,
                "reserved": b.reserved,
                "borrowed": b.borrowed,
                "max_wait_ms": millis(b.max_wait),
                "enabled": b.enabled,
                "rejected_per_sec": optional_rate(rejected, elapsed),
                "traffic": traffic,
                "adaptive": adaptive,
                "classes": classes,
                "latency": latency(id, previous, next, elapsed),
            })
        })
        .collect();

    let keyed: Vec<Value> = snapshot
        .keyed_bulkheads()
        .iter()
        .map(|k| {
            let rejected = counted(&counts.keyed_rejected, &k.instance);
            let top: Vec<Value> = k
                .top
                .iter()
                .map(|key| {
                    json!({
                        "key": key.key,
                        "in_flight": key.in_flight,
                        "waiting": key.waiting,
                        "limit": key.per_key,
                    })
                })
                .collect();
            json!({
                "instance": k.instance,
                "in_flight": k.in_flight,
                "limit": k.max_concurrent,
                "waiting": k.waiting,
                "per_key": k.per_key,
                "keys": k.keys,
                "busy_keys": k.busy_keys,
                "max_keys": k.max_keys,
                "refused_keys": k.refused_keys,
                "rejected_per_sec": rate(rejected, elapsed),
                "top": top,
            })
        })
        .collect();

    let breakers: Vec<Value> = snapshot
        .circuit_breakers()
        .iter()
        .map(|c| {
            let id = c.instance.as_str();
            next.not_permitted
                .insert(id.to_owned(), c.not_permitted_calls);
            let refused = increase(&previous.not_permitted, id, c.not_permitted_calls);
            json!({
                "instance": id,
                "state": circuit_state(c.state),
                "failure_rate": c.failure_rate,
                "slow_call_rate": c.slow_call_rate,
                "failure_rate_threshold": c.failure_rate_threshold,
                "buffered_calls": c.buffered_calls,
                "failed_calls": c.failed_calls,
                "not_permitted_total": c.not_permitted_calls,
                "rejected_per_sec": optional_rate(refused, elapsed),
            })
        })
        .collect();

    let limiters: Vec<Value> = snapshot
        .rate_limiters()
        .iter()
        .map(|r| {
            let rejected = counted(&counts.rate_limited, &r.instance);
            json!({
                "instance": r.instance,
                "available_permits": r.available_permits,
                "limit_for_period": r.limit_for_period,
                "refresh_period_ms": millis(r.refresh_period),
                "waiting": r.waiting_calls,
                "rejected_per_sec": rate(rejected, elapsed),
            })
        })
        .collect();

    let fleets: Vec<Value> = snapshot
        .fleets()
        .iter()
        .map(|f| {
            json!({
                "resource": f.resource,
                "state": f.state.as_str(),
                "share": f.share,
                "target": f.target,
                "budget": f.budget,
                "processes": f.processes,
                "limits": f.limits,
                "in_flight": f.in_flight,
            })
        })
        .collect();

    json!({
        "seq": meta.seq,
        "time": time,
        "interval_ms": millis(meta.interval),
        "events_missed": meta.missed,
        "bulkheads": bulkheads,
        "keyed_bulkheads": keyed,
        "circuit_breakers": breakers,
        "rate_limiters": limiters,
        "fleets": fleets,
    })
}
