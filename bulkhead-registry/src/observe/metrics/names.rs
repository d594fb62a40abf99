//! The name, type, unit and description of every metric exported, in the
//! order of the module docs' table.

use ::metrics::{Unit, describe_counter, describe_gauge, describe_histogram};

/// A metric: name, whether it is a counter (else a gauge), unit, what it
/// measures.
type Metric = (&'static str, bool, Unit, &'static str);

macro_rules! metrics {
    ($list:ident; $($konst:ident = $name:literal, $counter:literal, $unit:ident, $help:literal;)*) => {
        $(pub(super) const $konst: &str = $name;)*
        /// Metrics exported, as the module docs' tables list them.
        const $list: &[Metric] = &[$(($name, $counter, Unit::$unit, $help)),*];
    };
}

metrics! {
    METRICS;
    IN_FLIGHT = "bulkhead_in_flight", false, Count, "Calls holding a slot of the bulkhead.";
    MAX_CONCURRENT = "bulkhead_max_concurrent", false, Count,
        "The bulkhead's limit in force (an adaptive bulkhead's, set by its algorithm).";
    WAITING = "bulkhead_waiting", false, Count, "Calls waiting for a slot of the bulkhead.";
    HELD = "bulkhead_held", false, Count, "Calls holding a slot of the bulkhead, by priority class.";
    REJECTIONS = "bulkhead_rejections_total", true, Count, "Calls the bulkhead rejected.";
    SHED = "bulkhead_shed_total", true, Count,
        "Calls the bulkhead refused by their class's share of the limit, by priority class.";
    LIMIT_CHANGES = "bulkhead_limit_changes_total", true, Count, "Changes of the bulkhead's limit.";
    ADMITTED = "bulkhead_admitted_total", true, Count,
        "Calls that got a slot (when the registry tracks sizing).";
    ABANDONED = "bulkhead_abandoned_total", true, Count,
        "Calls that stopped waiting for a slot before they got one: a timeout, or a dropped future (when the registry tracks sizing).";
    COMPLETED = "bulkhead_completed_total", true, Count,
        "Admitted calls that gave their slot back (when the registry tracks sizing).";
    HOLD = "bulkhead_hold_microseconds_total", true, Microseconds,
        "Time completed calls held their slot, in total (when the registry tracks sizing).";
    ADAPTIVE_CEILING = "bulkhead_adaptive_ceiling", false, Count,
        "The most an adaptive bulkhead's algorithm may allow (its max_concurrent).";
    ADAPTIVE_NO_LOAD = "bulkhead_adaptive_no_load_seconds", false, Seconds,
        "An adaptive bulkhead's estimate of a call's latency at low concurrency.";
    ADAPTIVE_RECENT = "bulkhead_adaptive_recent_latency_seconds", false, Seconds,
        "The mean latency of an adaptive bulkhead's successful calls in its last window.";
    ADAPTIVE_ERRORS = "bulkhead_adaptive_errors_total", true, Count,
        "Calls of an adaptive bulkhead that returned an error.";
    ADAPTIVE_DROPS = "bulkhead_adaptive_drops_total", true, Count,
        "Calls of an adaptive bulkhead dropped before they ended (timed out, cancelled).";
    KEYED_IN_FLIGHT = "bulkhead_keyed_in_flight", false, Count,
        "Calls holding a slot of the keyed bulkhead, all keys together.";
    KEYED_WAITING = "bulkhead_keyed_waiting", false, Count,
        "Calls waiting for a slot of the keyed bulkhead.";
    KEYED_MAX_CONCURRENT = "bulkhead_keyed_max_concurrent", false, Count,
        "The keyed bulkhead's limit of all keys together.";
    KEYED_KEYS = "bulkhead_keyed_keys", false, Count, "The keyed bulkhead's live keys.";
    KEYED_KEY_IN_FLIGHT = "bulkhead_keyed_key_in_flight", false, Count,
        "Calls holding a slot of the keyed bulkhead, for its busiest keys, the others as key=_other.";
    KEYED_REJECTIONS = "bulkhead_keyed_rejections_total", true, Count,
        "Calls the keyed bulkhead rejected, by reason: key_full, global_full, too_many_keys.";
    RETRIES = "bulkhead_retries_total", true, Count,
        "Failed attempts followed by another, by cause.";
    RETRY_CALLS = "bulkhead_retry_calls_total", true, Count,
        "Calls that succeeded after retrying, exhausted their attempts or retry budget, were aborted, or gave up (a deadline or a pushback).";
    RETRY_BUDGET = "bulkhead_retry_budget_available", false, Count,
        "Retries and hedges the retry budget allows now.";
    BREAKER_STATE = "bulkhead_circuit_breaker_state", false, Count,
        "1 for the circuit breaker's current state, 0 for the others.";
    BREAKER_TRANSITIONS = "bulkhead_circuit_breaker_transitions_total", true, Count,
        "State transitions of the circuit breaker.";
    BREAKER_REJECTIONS = "bulkhead_circuit_breaker_rejections_total", true, Count,
        "Calls the circuit breaker did not permit.";
    TIMEOUTS = "bulkhead_timeouts_total", true, Count, "Calls that timed out.";
    OVERRUNS = "bulkhead_timeout_overruns_total", true, Count,
        "Sync calls that ran past their timeout (and kept their result).";
    LIMITER_REJECTIONS = "bulkhead_rate_limiter_rejections_total", true, Count,
        "Calls the rate limiter rejected.";
    LIMITER_AVAILABLE = "bulkhead_rate_limiter_available_permits", false, Count,
        "Permits left in the current period (negative while reserved ahead).";
    LIMITER_WAITING = "bulkhead_rate_limiter_waiting", false, Count,
        "Calls waiting for a reserved permit.";
    HEDGES = "bulkhead_hedges_total", true, Count,
        "Hedges due, by outcome: started, skipped, budget_exhausted; and those that won.";
    FALLBACKS = "bulkhead_fallbacks_total", true, Count,
        "Calls the fallback answered, by cause.";
    CHAOS_ENABLED = "bulkhead_chaos_enabled", false, Count,
        "1 while the chaos policy injects faults and latency, 0 while it is disabled.";
    CHAOS_INJECTIONS = "bulkhead_chaos_injections_total", true, Count,
        "What the chaos policy injected, by kind: fault, panic, latency.";
    CHAOS_LATENCY = "bulkhead_chaos_latency_microseconds_total", true, Microseconds,
        "The latency the chaos policy injected, in total.";
    EVENTS_LOST = "bulkhead_observer_events_lost_total", true, Count,
        "Events the exporter lost by falling behind; event counters undercount by as much.";
}

metrics! {
    HISTOGRAMS;
    CALL_DURATION = "bulkhead_call_duration_seconds", false, Seconds,
        "Calls through the instance's policies, from start to result (every attempt and retry delay), by outcome.";
    ATTEMPT_DURATION = "bulkhead_attempt_duration_seconds", false, Seconds,
        "Attempts of calls through the instance's policies, by outcome.";
    SLOT_WAIT = "bulkhead_slot_wait_seconds", false, Seconds,
        "Waits for a slot of the instance's bulkhead (1.024 µs, the first bucket, for a call admitted or refused at once), by outcome: admitted, rejected, abandoned.";
}

metrics! {
    FLEET_METRICS;
    FLEET_SHARE = "bulkhead_fleet_share", false, Count,
        "The slots this process's bulkheads on the fleet resource may hold together.";
    FLEET_TARGET = "bulkhead_fleet_target", false, Count,
        "The share the fleet's allocation aims at for this process.";
    FLEET_BUDGET = "bulkhead_fleet_budget", false, Count, "The fleet's budget for the resource.";
    FLEET_PROCESSES = "bulkhead_fleet_processes", false, Count,
        "The processes sharing the fleet resource.";
    FLEET_STATE = "bulkhead_fleet_state", false, Count,
        "1 for this process's state on the fleet resource, 0 for the others.";
    FLEET_RENEWALS = "bulkhead_fleet_renewals_total", true, Count, "Leases renewed.";
    FLEET_FAILURES = "bulkhead_fleet_failures_total", true, Count,
        "Requests to Redis that failed or timed out.";
    FLEET_CHANGES = "bulkhead_fleet_share_changes_total", true, Count,
        "Changes of the share, by reason.";
}

/// Every metric, the fleets' too (for the OpenTelemetry exporter's test
/// that each has a twin there).
#[cfg(all(test, feature = "opentelemetry"))]
pub(in crate::observe) fn all() -> impl Iterator<Item = &'static Metric> {
    METRICS.iter().chain(HISTOGRAMS).chain(FLEET_METRICS)
}

/// Describes every metric to the recorder: the fleets' too when a fleet
/// crate is linked (see `crate::fleet`).
pub(super) fn describe() {
    let fleets = if crate::fleet::linked_kinds().is_empty() {
        &[]
    } else {
        FLEET_METRICS
    };
    for &(name, is_counter, unit, help) in METRICS.iter().chain(fleets) {
        if is_counter {
            describe_counter!(name, unit, help);
        } else {
            describe_gauge!(name, unit, help);
        }
    }
    for &(name, _, unit, help) in HISTOGRAMS {
        describe_histogram!(name, unit, help);
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
    use super::{FLEET_METRICS, HISTOGRAMS, METRICS};

    #[test]
    fn every_metric_is_in_the_module_docs_table_and_no_other() {
        let docs = include_str!("../mod.rs");
        let rows: Vec<&str> = docs
            .lines()
            .filter_map(|line| line.strip_prefix("//! | `bulkhead_"))
            .filter_map(|row| row.split('`').next())
            .collect();
        let names: Vec<String> = METRICS
            .iter()
            .chain(HISTOGRAMS)
            .chain(FLEET_METRICS)
            .map(|(name, ..)| name["bulkhead_".len()..].to_owned())
            .collect();
        assert_eq!(rows, names);
        for kind in bulkhead_core::HistogramKind::ALL {
            assert!(
                HISTOGRAMS
                    .iter()
                    .any(|(name, ..)| *name == super::histogram_name(kind))
            );
        }
    }
}
