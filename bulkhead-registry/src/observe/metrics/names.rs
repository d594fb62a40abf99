//! The name, kind, unit, labels and description of every metric exported,
//! in the order of the module docs' table.

use ::metrics::{Unit, describe_counter, describe_gauge, describe_histogram};

/// What a metric is to the recorder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// A monotonic count (`counter!`).
    Counter,
    /// A value that goes up and down (`gauge!`).
    Gauge,
    /// A distribution of samples (`histogram!`).
    Histogram,
}

impl Kind {
    /// As the module docs' table names it.
    #[cfg(test)]
    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// The labels of the metrics, as the call sites write them.
mod label {
    pub(super) const INSTANCE: &str = "instance";
    pub(super) const PRIORITY: &str = "priority";
    pub(super) const KEY: &str = "key";
    pub(super) const REASON: &str = "reason";
    pub(super) const CAUSE: &str = "cause";
    pub(super) const OUTCOME: &str = "outcome";
    pub(super) const STATE: &str = "state";
    pub(super) const FROM: &str = "from";
    pub(super) const TO: &str = "to";
    pub(super) const KIND: &str = "kind";
    pub(super) const RESOURCE: &str = "resource";
}

/// A metric exported.
#[derive(Debug)]
pub(in crate::observe) struct Metric {
    pub(in crate::observe) name: &'static str,
    pub(super) kind: Kind,
    pub(super) unit: Unit,
    /// Every label of each of its series, in the docs' order.
    #[cfg_attr(not(test), allow(dead_code))] // the docs' table and the tests
    pub(super) labels: &'static [&'static str],
    pub(super) help: &'static str,
}

macro_rules! metrics {
    ($list:ident; $($konst:ident = $name:literal, $kind:ident, $unit:ident, [$($label:ident),*],
        $help:literal;)*) => {
        $(pub(super) const $konst: &str = $name;)*
        /// Metrics exported, as the module docs' tables list them.
        const $list: &[Metric] = &[$(Metric {
            name: $name,
            kind: Kind::$kind,
            unit: Unit::$unit,
            labels: &[$(label::$label),*],
            help: $help,
        }),*];
    };
}

metrics! {
    METRICS;
    IN_FLIGHT = "bulkhead_in_flight", Gauge, Count, [INSTANCE],
        "Calls holding a slot of the bulkhead.";
    MAX_CONCURRENT = "bulkhead_max_concurrent", Gauge, Count, [INSTANCE],
        "The bulkhead's limit in force (an adaptive bulkhead's, set by its algorithm).";
    WAITING = "bulkhead_waiting", Gauge, Count, [INSTANCE],
        "Calls waiting for a slot of the bulkhead.";
    HELD = "bulkhead_held", Gauge, Count, [INSTANCE, PRIORITY],
        "Calls holding a slot of the bulkhead, by priority class.";
    REJECTIONS = "bulkhead_rejections_total", Counter, Count, [INSTANCE],
        "Calls the bulkhead rejected.";
    SHED = "bulkhead_shed_total", Counter, Count, [INSTANCE, PRIORITY],
        "Calls the bulkhead refused by their class's share of the limit, by priority class.";
    LIMIT_CHANGES = "bulkhead_limit_changes_total", Counter, Count, [INSTANCE],
        "Changes of the bulkhead's limit.";
    ADMITTED = "bulkhead_admitted_total", Counter, Count, [INSTANCE],
        "Calls that got a slot (when the registry tracks sizing).";
    ABANDONED = "bulkhead_abandoned_total", Counter, Count, [INSTANCE],
        "Calls that stopped waiting for a slot before they got one: a timeout, or a dropped future (when the registry tracks sizing).";
    COMPLETED = "bulkhead_completed_total", Counter, Count, [INSTANCE],
        "Admitted calls that gave their slot back (when the registry tracks sizing).";
    HOLD = "bulkhead_hold_microseconds_total", Counter, Microseconds, [INSTANCE],
        "Time completed calls held their slot, in total (when the registry tracks sizing).";
    ADAPTIVE_CEILING = "bulkhead_adaptive_ceiling", Gauge, Count, [INSTANCE],
        "The most an adaptive bulkhead's algorithm may allow (its max_concurrent).";
    ADAPTIVE_NO_LOAD = "bulkhead_adaptive_no_load_seconds", Gauge, Seconds, [INSTANCE],
        "An adaptive bulkhead's estimate of a call's latency at low concurrency.";
    ADAPTIVE_RECENT = "bulkhead_adaptive_recent_latency_seconds", Gauge, Seconds, [INSTANCE],
        "The mean latency of an adaptive bulkhead's successful calls in its last window.";
    ADAPTIVE_ERRORS = "bulkhead_adaptive_errors_total", Counter, Count, [INSTANCE],
        "Calls of an adaptive bulkhead that returned an error.";
    ADAPTIVE_DROPS = "bulkhead_adaptive_drops_total", Counter, Count, [INSTANCE],
        "Calls of an adaptive bulkhead dropped before they ended (timed out, cancelled).";
    KEYED_IN_FLIGHT = "bulkhead_keyed_in_flight", Gauge, Count, [INSTANCE],
        "Calls holding a slot of the keyed bulkhead, all keys together.";
    KEYED_WAITING = "bulkhead_keyed_waiting", Gauge, Count, [INSTANCE],
        "Calls waiting for a slot of the keyed bulkhead.";
    KEYED_MAX_CONCURRENT = "bulkhead_keyed_max_concurrent", Gauge, Count, [INSTANCE],
        "The keyed bulkhead's limit of all keys together.";
    KEYED_KEYS = "bulkhead_keyed_keys", Gauge, Count, [INSTANCE], "The keyed bulkhead's live keys.";
    KEYED_KEY_IN_FLIGHT = "bulkhead_keyed_key_in_flight", Gauge, Count, [INSTANCE, KEY],
        "Calls holding a slot of the keyed bulkhead, for its busiest keys, the others as key=_other.";
    KEYED_REJECTIONS = "bulkhead_keyed_rejections_total", Counter, Count, [INSTANCE, REASON],
        "Calls the keyed bulkhead rejected, by reason: key_full, global_full, too_many_keys.";
    RETRIES = "bulkhead_retries_total", Counter, Count, [INSTANCE, CAUSE],
        "Failed attempts followed by another, by cause.";
    RETRY_CALLS = "bulkhead_retry_calls_total", Counter, Count, [INSTANCE, OUTCOME],
        "Calls that succeeded after retrying, exhausted their attempts or retry budget, were aborted, or gave up (a deadline or a pushback).";
    RETRY_BUDGET = "bulkhead_retry_budget_available", Gauge, Count, [INSTANCE],
        "Retries and hedges the retry budget allows now.";
    BREAKER_STATE = "bulkhead_circuit_breaker_state", Gauge, Count, [INSTANCE, STATE],
        "1 for the circuit breaker's current state, 0 for the others.";
    BREAKER_TRANSITIONS = "bulkhead_circuit_breaker_transitions_total", Counter, Count,
        [INSTANCE, FROM, TO], "State transitions of the circuit breaker.";
    BREAKER_REJECTIONS = "bulkhead_circuit_breaker_rejections_total", Counter, Count, [INSTANCE],
        "Calls the circuit breaker did not permit.";
    TIMEOUTS = "bulkhead_timeouts_total", Counter, Count, [INSTANCE], "Calls that timed out.";
    OVERRUNS = "bulkhead_timeout_overruns_total", Counter, Count, [INSTANCE],
        "Sync calls that ran past their timeout (and kept their result).";
    LIMITER_REJECTIONS = "bulkhead_rate_limiter_rejections_total", Counter, Count, [INSTANCE],
        "Calls the rate limiter rejected.";
    LIMITER_AVAILABLE = "bulkhead_rate_limiter_available_permits", Gauge, Count, [INSTANCE],
        "Permits left in the current period (negative while reserved ahead).";
    LIMITER_WAITING = "bulkhead_rate_limiter_waiting", Gauge, Count, [INSTANCE],
        "Calls waiting for a reserved permit.";
    HEDGES = "bulkhead_hedges_total", Counter, Count, [INSTANCE, OUTCOME],
        "Hedges due, by outcome: started, skipped, budget_exhausted; and those that won.";
    FALLBACKS = "bulkhead_fallbacks_total", Counter, Count, [INSTANCE, CAUSE],
        "Calls the fallback answered, by cause.";
    CHAOS_ENABLED = "bulkhead_chaos_enabled", Gauge, Count, [INSTANCE],
        "1 while the chaos policy injects faults and latency, 0 while it is disabled.";
    CHAOS_INJECTIONS = "bulkhead_chaos_injections_total", Counter, Count, [INSTANCE, KIND],
        "What the chaos policy injected, by kind: fault, panic, latency.";
    CHAOS_LATENCY = "bulkhead_chaos_latency_microseconds_total", Counter, Microseconds, [INSTANCE],
        "The latency the chaos policy injected, in total.";
    EVENTS_LOST = "bulkhead_observer_events_lost_total", Counter, Count, [],
        "Events the exporter lost by falling behind; event counters undercount by as much.";
}

metrics! {
    HISTOGRAMS;
    CALL_DURATION = "bulkhead_call_duration_seconds", Histogram, Seconds, [INSTANCE, OUTCOME],
        "Calls through the instance's policies, from start to result (every attempt and retry delay), by outcome.";
    ATTEMPT_DURATION = "bulkhead_attempt_duration_seconds", Histogram, Seconds, [INSTANCE, OUTCOME],
        "Attempts of calls through the instance's policies, by outcome.";
    SLOT_WAIT = "bulkhead_slot_wait_seconds", Histogram, Seconds, [INSTANCE, OUTCOME],
        "Waits for a slot of the instance's bulkhead (1.024 µs, the first bucket, for a call admitted or refused at once), by outcome: admitted, rejected, abandoned.";
}

metrics! {
    FLEET_METRICS;
    FLEET_SHARE = "bulkhead_fleet_share", Gauge, Count, [RESOURCE],
        "The slots this process's bulkheads on the fleet resource may hold together.";
    FLEET_TARGET = "bulkhead_fleet_target", Gauge, Count, [RESOURCE],
        "The share the fleet's allocation aims at for this process.";
    FLEET_BUDGET = "bulkhead_fleet_budget", Gauge, Count, [RESOURCE],
        "The fleet's budget for the resource.";
    FLEET_PROCESSES = "bulkhead_fleet_processes", Gauge, Count, [RESOURCE],
        "The processes sharing the fleet resource.";
    FLEET_STATE = "bulkhead_fleet_state", Gauge, Count, [RESOURCE, STATE],
        "1 for this process's state on the fleet resource, 0 for the others.";
    FLEET_RENEWALS = "bulkhead_fleet_renewals_total", Counter, Count, [RESOURCE], "Leases renewed.";
    FLEET_FAILURES = "bulkhead_fleet_failures_total", Counter, Count, [RESOURCE],
        "Requests to Redis that failed or timed out.";
    FLEET_CHANGES = "bulkhead_fleet_share_changes_total", Counter, Count, [RESOURCE, REASON],
        "Changes of the share, by reason.";
}

/// Every metric, the fleets' too (for the OpenTelemetry exporter's test
/// that each has a twin there, and the test of what the exporter emits).
#[cfg(test)]
pub(in crate::observe) fn all() -> impl Iterator<Item = &'static Metric> {
    METRICS.iter().chain(HISTOGRAMS).chain(FLEET_METRICS)
}

/// Describes every metric to the recorder: the fleets' too when a fleet
/// crate is linked (see `crate::fleet`).
pub(super) fn describe() {
    describe_these(!crate::fleet::linked_kinds().is_empty());
}

/// Describes every metric to the recorder, the fleets' only if `fleets`.
pub(super) fn describe_these(fleets: bool) {
    let fleets = if fleets { FLEET_METRICS } else { &[] };
    for metric in METRICS.iter().chain(HISTOGRAMS).chain(fleets) {
        let (name, unit, help) = (metric.name, metric.unit, metric.help);
        match metric.kind {
            Kind::Counter => describe_counter!(name, unit, help),
            Kind::Gauge => describe_gauge!(name, unit, help),
            Kind::Histogram => describe_histogram!(name, unit, help),
        }
    }
}

/// The name of the histogram of `kind`.
pub(super) fn histogram_name(kind: bulkhead_core::HistogramKind) -> &'static str {
    match kind {
        bulkhead_core::HistogramKind::CallDuration => CALL_DURATION,
        bulkhead_core::HistogramKind::AttemptDuration => ATTEMPT_DURATION,
        _ => SLOT_WAIT,
    }
}

#[cfg(test)]
mod tests {
    use super::{HISTOGRAMS, Kind, Metric, all};

    /// The rows of the module docs' tables of metrics: name, type, unit
    /// and labels, as written (backticks and all).
    fn rows() -> Vec<[String; 4]> {
        include_str!("../mod.rs")
            .lines()
            .filter(|line| line.starts_with("//! | `bulkhead_"))
            .map(|line| {
                let cells: Vec<String> = line
                    .trim_start_matches("//! |")
                    .split(" | ")
                    .take(4)
                    .map(|cell| cell.trim().to_owned())
                    .collect();
                <[String; 4]>::try_from(cells).expect("a row of six cells")
            })
            .collect()
    }

    /// A metric as the docs' table writes it.
    fn row(metric: &Metric) -> [String; 4] {
        let labels = if metric.labels.is_empty() {
            "none".to_owned()
        } else {
            metric
                .labels
                .iter()
                .map(|label| format!("`{label}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        [
            format!("`{}`", metric.name),
            metric.kind.name().to_owned(),
            metric.unit.as_str().to_owned(),
            labels,
        ]
    }

    #[test]
    fn every_metric_is_in_the_module_docs_table_as_the_code_makes_it() {
        let (rows, expected): (Vec<_>, Vec<_>) = (rows(), all().map(row).collect());
        let wrong: Vec<String> = rows
            .iter()
            .zip(&expected)
            .filter(|(row, metric)| row != metric)
            .map(|(row, metric)| format!("docs {row:?}, code {metric:?}"))
            .collect();
        assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
        assert_eq!(rows.len(), expected.len(), "one row per metric");
        for kind in bulkhead_core::HistogramKind::ALL {
            assert!(
                HISTOGRAMS
                    .iter()
                    .any(|metric| metric.name == super::histogram_name(kind))
            );
        }
    }

    /// Prometheus's conventions: a counter's name ends in `_total`, and a
    /// name ends in its unit (before `_total`) unless it counts things.
    #[test]
    fn names_say_their_kind_and_unit() {
        for metric in all() {
            let base = metric.name.strip_suffix("_total");
            assert_eq!(
                base.is_some(),
                metric.kind == Kind::Counter,
                "{}",
                metric.name
            );
            let base = base.unwrap_or(metric.name);
            let unit = metric.unit.as_str();
            if metric.unit == ::metrics::Unit::Count {
                assert!(!base.ends_with("seconds"), "{}", metric.name);
            } else {
                assert!(base.ends_with(&format!("_{unit}")), "{}", metric.name);
            }
        }
    }
}
