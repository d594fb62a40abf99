//! The name, type, unit, attributes, `metrics` twin and description of
//! every OpenTelemetry instrument, in the order of the module docs' table.

/// `resilience.instance`: the policy instance's id.
pub(super) const INSTANCE: &str = "resilience.instance";
/// `resilience.priority`: a bulkhead's priority class.
pub(super) const PRIORITY: &str = "resilience.priority";
/// `resilience.keyed_bulkhead.key`: one of a keyed bulkhead's busiest keys.
pub(super) const KEY: &str = "resilience.keyed_bulkhead.key";
/// `resilience.keyed_bulkhead.reason`: why a keyed bulkhead refused a call.
pub(super) const KEYED_REASON: &str = "resilience.keyed_bulkhead.reason";
/// `resilience.outcome`: how a failed attempt or call ended (`error`, or
/// the rejection kind in snake case).
pub(super) const OUTCOME: &str = "resilience.outcome";
/// `resilience.retry.result`: how a call that retried ended.
pub(super) const RETRY_RESULT: &str = "resilience.retry.result";
/// `resilience.circuit_breaker.state`: a circuit breaker's state (the new
/// one, for a transition).
pub(super) const STATE: &str = "resilience.circuit_breaker.state";
/// `resilience.circuit_breaker.previous_state`: the state a transition left.
pub(super) const PREVIOUS_STATE: &str = "resilience.circuit_breaker.previous_state";
/// `resilience.hedge.result`: what became of a hedge due.
pub(super) const HEDGE_RESULT: &str = "resilience.hedge.result";
/// `resilience.chaos.injection`: what a chaos policy injected.
pub(super) const INJECTION: &str = "resilience.chaos.injection";
/// `resilience.fleet.resource`: a fleet resource's name.
pub(super) const RESOURCE: &str = "resilience.fleet.resource";
/// `resilience.fleet.state`: this process's state on a fleet resource.
pub(super) const FLEET_STATE_ATTR: &str = "resilience.fleet.state";
/// `resilience.fleet.reason`: why a fleet share changed.
pub(super) const FLEET_REASON: &str = "resilience.fleet.reason";

/// The kind of an instrument, which says how its values are observed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// A monotonic count: an observable `Counter<u64>`.
    Counter,
    /// A monotonic total of durations, in seconds: an observable
    /// `Counter<f64>`.
    SecondsCounter,
    /// A count that goes up and down (additive across instances): an
    /// observable `UpDownCounter<i64>`.
    UpDownCounter,
    /// A value that does not add up across instances: an observable
    /// `Gauge<f64>`.
    Gauge,
}

impl Kind {
    /// As the module docs' table names it.
    #[cfg(test)]
    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::Counter | Kind::SecondsCounter => "Counter",
            Kind::UpDownCounter => "UpDownCounter",
            Kind::Gauge => "Gauge",
        }
    }
}

/// An instrument.
#[derive(Debug)]
pub(super) struct Instrument {
    pub(super) name: &'static str,
    pub(super) kind: Kind,
    pub(super) unit: &'static str,
    pub(super) attributes: &'static [&'static str],
    /// The `metrics` exporter's metric for the same thing.
    #[cfg_attr(not(test), allow(dead_code))] // the docs' table and its test
    pub(super) twin: &'static str,
    pub(super) help: &'static str,
}

macro_rules! instruments {
    ($list:ident; $($konst:ident = $name:literal, $kind:ident, $unit:literal, [$($attr:ident),*],
        $twin:literal, $help:literal;)*) => {
        /// The instruments' positions in the list.
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        enum Position { $($konst),* }
        $(pub(super) const $konst: usize = Position::$konst as usize;)*
        /// Every observable instrument, as the module docs' table lists them.
        pub(super) const $list: &[Instrument] = &[$(Instrument {
            name: $name,
            kind: Kind::$kind,
            unit: $unit,
            attributes: &[$($attr),*],
            twin: $twin,
            help: $help,
        }),*];
    };
}

instruments! {
    INSTRUMENTS;
    IN_FLIGHT = "resilience.bulkhead.in_flight", UpDownCounter, "{call}", [INSTANCE],
        "bulkhead_in_flight", "Calls holding a slot of the bulkhead.";
    LIMIT = "resilience.bulkhead.limit", UpDownCounter, "{slot}", [INSTANCE],
        "bulkhead_max_concurrent",
        "The bulkhead's limit in force (an adaptive bulkhead's, set by its algorithm).";
    WAITING = "resilience.bulkhead.waiting", UpDownCounter, "{call}", [INSTANCE],
        "bulkhead_waiting", "Calls waiting for a slot of the bulkhead.";
    PRIORITY_IN_FLIGHT = "resilience.bulkhead.priority.in_flight", UpDownCounter, "{call}",
        [INSTANCE, PRIORITY], "bulkhead_held",
        "Calls holding a slot of the bulkhead, by priority class.";
    REJECTIONS = "resilience.bulkhead.rejections", Counter, "{call}", [INSTANCE],
        "bulkhead_rejections_total", "Calls the bulkhead rejected.";
    SHED = "resilience.bulkhead.shed", Counter, "{call}", [INSTANCE, PRIORITY],
        "bulkhead_shed_total",
        "Calls the bulkhead refused by their class's share of the limit, by priority class.";
    LIMIT_CHANGES = "resilience.bulkhead.limit.changes", Counter, "{change}", [INSTANCE],
        "bulkhead_limit_changes_total", "Changes of the bulkhead's limit.";
    ADMITTED = "resilience.bulkhead.admitted", Counter, "{call}", [INSTANCE],
        "bulkhead_admitted_total", "Calls that got a slot (when the registry tracks sizing).";
    ABANDONED = "resilience.bulkhead.abandoned", Counter, "{call}", [INSTANCE],
        "bulkhead_abandoned_total",
        "Calls that stopped waiting for a slot before they got one (when the registry tracks sizing).";
    COMPLETED = "resilience.bulkhead.completed", Counter, "{call}", [INSTANCE],
        "bulkhead_completed_total",
        "Admitted calls that gave their slot back (when the registry tracks sizing).";
    HOLD_TIME = "resilience.bulkhead.hold_time", SecondsCounter, "s", [INSTANCE],
        "bulkhead_hold_microseconds_total",
        "Time completed calls held their slot, in total (when the registry tracks sizing).";
    ADAPTIVE_CEILING = "resilience.bulkhead.adaptive.ceiling", UpDownCounter, "{slot}",
        [INSTANCE], "bulkhead_adaptive_ceiling",
        "The most an adaptive bulkhead's algorithm may allow (its max_concurrent).";
    ADAPTIVE_NO_LOAD = "resilience.bulkhead.adaptive.no_load_latency", Gauge, "s", [INSTANCE],
        "bulkhead_adaptive_no_load_seconds",
        "An adaptive bulkhead's estimate of a call's latency at low concurrency.";
    ADAPTIVE_RECENT = "resilience.bulkhead.adaptive.recent_latency", Gauge, "s", [INSTANCE],
        "bulkhead_adaptive_recent_latency_seconds",
        "The mean latency of an adaptive bulkhead's successful calls in its last window.";
    ADAPTIVE_ERRORS = "resilience.bulkhead.adaptive.errors", Counter, "{call}", [INSTANCE],
        "bulkhead_adaptive_errors_total", "Calls of an adaptive bulkhead that returned an error.";
    ADAPTIVE_DROPS = "resilience.bulkhead.adaptive.drops", Counter, "{call}", [INSTANCE],
        "bulkhead_adaptive_drops_total",
        "Calls of an adaptive bulkhead dropped before they ended (timed out, cancelled).";
    KEYED_IN_FLIGHT = "resilience.keyed_bulkhead.in_flight", UpDownCounter, "{call}",
        [INSTANCE], "bulkhead_keyed_in_flight",
        "Calls holding a slot of the keyed bulkhead, all keys together.";
    KEYED_WAITING = "resilience.keyed_bulkhead.waiting", UpDownCounter, "{call}", [INSTANCE],
        "bulkhead_keyed_waiting", "Calls waiting for a slot of the keyed bulkhead.";
    KEYED_LIMIT = "resilience.keyed_bulkhead.limit", UpDownCounter, "{slot}", [INSTANCE],
        "bulkhead_keyed_max_concurrent", "The keyed bulkhead's limit of all keys together.";
    KEYED_KEYS = "resilience.keyed_bulkhead.keys", UpDownCounter, "{key}", [INSTANCE],
        "bulkhead_keyed_keys", "The keyed bulkhead's live keys.";
    KEYED_KEY_IN_FLIGHT = "resilience.keyed_bulkhead.key.in_flight", UpDownCounter, "{call}",
        [INSTANCE, KEY], "bulkhead_keyed_key_in_flight",
        "Calls holding a slot of the keyed bulkhead, for its busiest keys, the others as _other.";
    KEYED_REJECTIONS = "resilience.keyed_bulkhead.rejections", Counter, "{call}",
        [INSTANCE, KEYED_REASON], "bulkhead_keyed_rejections_total",
        "Calls the keyed bulkhead rejected, by reason: key_full, global_full, too_many_keys.";
    RETRIES = "resilience.retry.retries", Counter, "{retry}", [INSTANCE, OUTCOME],
        "bulkhead_retries_total", "Failed attempts followed by another, by how they failed.";
    RETRY_CALLS = "resilience.retry.calls", Counter, "{call}", [INSTANCE, RETRY_RESULT],
        "bulkhead_retry_calls_total",
        "Calls that succeeded after retrying, exhausted their attempts or retry budget, were aborted, or gave up.";
    RETRY_BUDGET = "resilience.retry.budget.available", UpDownCounter, "{retry}", [INSTANCE],
        "bulkhead_retry_budget_available", "Retries and hedges the retry budget allows now.";
    BREAKER_STATE = "resilience.circuit_breaker.state", UpDownCounter, "1", [INSTANCE, STATE],
        "bulkhead_circuit_breaker_state",
        "1 for the circuit breaker's current state, 0 for the others.";
    BREAKER_TRANSITIONS = "resilience.circuit_breaker.transitions", Counter, "{transition}",
        [INSTANCE, PREVIOUS_STATE, STATE], "bulkhead_circuit_breaker_transitions_total",
        "State transitions of the circuit breaker.";
    BREAKER_REJECTIONS = "resilience.circuit_breaker.rejections", Counter, "{call}",
        [INSTANCE], "bulkhead_circuit_breaker_rejections_total",
        "Calls the circuit breaker did not permit.";
    TIMEOUTS = "resilience.timeout.timeouts", Counter, "{call}", [INSTANCE],
        "bulkhead_timeouts_total", "Calls that timed out.";
    OVERRUNS = "resilience.timeout.overruns", Counter, "{call}", [INSTANCE],
        "bulkhead_timeout_overruns_total",
        "Sync calls that ran past their timeout (and kept their result).";
    LIMITER_REJECTIONS = "resilience.rate_limiter.rejections", Counter, "{call}", [INSTANCE],
        "bulkhead_rate_limiter_rejections_total", "Calls the rate limiter rejected.";
    LIMITER_AVAILABLE = "resilience.rate_limiter.available_permits", UpDownCounter, "{permit}",
        [INSTANCE], "bulkhead_rate_limiter_available_permits",
        "Permits left in the current period (negative while reserved ahead).";
    LIMITER_WAITING = "resilience.rate_limiter.waiting", UpDownCounter, "{call}", [INSTANCE],
        "bulkhead_rate_limiter_waiting", "Calls waiting for a reserved permit.";
    HEDGES = "resilience.hedge.hedges", Counter, "{hedge}", [INSTANCE, HEDGE_RESULT],
        "bulkhead_hedges_total",
        "Hedges due, by result: started, skipped, budget_exhausted; and those that won.";
    FALLBACKS = "resilience.fallback.calls", Counter, "{call}", [INSTANCE, OUTCOME],
        "bulkhead_fallbacks_total", "Calls the fallback answered, by how they failed.";
    CHAOS_ENABLED = "resilience.chaos.enabled", Gauge, "1", [INSTANCE], "bulkhead_chaos_enabled",
        "1 while the chaos policy injects faults and latency, 0 while it is disabled.";
    CHAOS_INJECTIONS = "resilience.chaos.injections", Counter, "{injection}",
        [INSTANCE, INJECTION], "bulkhead_chaos_injections_total",
        "What the chaos policy injected, by kind: fault, panic, latency.";
    CHAOS_LATENCY = "resilience.chaos.injected_latency", SecondsCounter, "s", [INSTANCE],
        "bulkhead_chaos_latency_microseconds_total",
        "The latency the chaos policy injected, in total.";
    EVENTS_LOST = "resilience.observer.lost_events", Counter, "{event}", [],
        "bulkhead_observer_events_lost_total",
        "Events the exporter lost by falling behind; event counters undercount by as much.";
    FLEET_SHARE = "resilience.fleet.share", UpDownCounter, "{slot}", [RESOURCE],
        "bulkhead_fleet_share",
        "The slots this process's bulkheads on the fleet resource may hold together.";
    FLEET_TARGET = "resilience.fleet.target", UpDownCounter, "{slot}", [RESOURCE],
        "bulkhead_fleet_target", "The share the fleet's allocation aims at for this process.";
    FLEET_BUDGET = "resilience.fleet.budget", UpDownCounter, "{slot}", [RESOURCE],
        "bulkhead_fleet_budget", "The fleet's budget for the resource.";
    FLEET_PROCESSES = "resilience.fleet.processes", UpDownCounter, "{process}", [RESOURCE],
        "bulkhead_fleet_processes", "The processes sharing the fleet resource.";
    FLEET_STATE = "resilience.fleet.state", UpDownCounter, "1", [RESOURCE, FLEET_STATE_ATTR],
        "bulkhead_fleet_state", "1 for this process's state on the fleet resource, 0 for the others.";
    FLEET_RENEWALS = "resilience.fleet.renewals", Counter, "{renewal}", [RESOURCE],
        "bulkhead_fleet_renewals_total", "Leases renewed.";
    FLEET_FAILURES = "resilience.fleet.failures", Counter, "{request}", [RESOURCE],
        "bulkhead_fleet_failures_total", "Requests to Redis that failed or timed out.";
    FLEET_SHARE_CHANGES = "resilience.fleet.share.changes", Counter, "{change}",
        [RESOURCE, FLEET_REASON], "bulkhead_fleet_share_changes_total",
        "Changes of the share, by reason.";
}

/// A histogram (a synchronous `Histogram<f64>`, fed at each collection).
#[derive(Debug)]
pub(super) struct HistogramInstrument {
    pub(super) name: &'static str,
    #[cfg_attr(not(test), allow(dead_code))] // the docs' table and its test
    pub(super) attributes: &'static [&'static str],
    #[cfg_attr(not(test), allow(dead_code))] // the docs' table and its test
    pub(super) twin: &'static str,
    pub(super) help: &'static str,
}

/// The histograms, in the module docs' table after the instruments above,
/// in the order of [`histogram_position`].
pub(super) const HISTOGRAMS: &[HistogramInstrument] = &[
    HistogramInstrument::new(
        "resilience.call.duration",
        "bulkhead_call_duration_seconds",
        "Duration of whole calls through a pipeline or generated wrapper, retries included.",
    ),
    HistogramInstrument::new(
        "resilience.attempt.duration",
        "bulkhead_attempt_duration_seconds",
        "Duration of each attempt of a call.",
    ),
    HistogramInstrument::new(
        "resilience.bulkhead.slot.wait",
        "bulkhead_slot_wait_seconds",
        "Time from a call's arrival at a bulkhead to its admission or refusal.",
    ),
];

impl HistogramInstrument {
    /// A histogram by instance and outcome, as every one is.
    const fn new(name: &'static str, twin: &'static str, help: &'static str) -> Self {
        HistogramInstrument {
            name,
            attributes: &[INSTANCE, OUTCOME],
            twin,
            help,
        }
    }
}

/// The position in [`HISTOGRAMS`] of the histogram of `kind`.
pub(super) fn histogram_position(kind: bulkhead_core::HistogramKind) -> Option<usize> {
    use bulkhead_core::HistogramKind;
    match kind {
        HistogramKind::CallDuration => Some(0),
        HistogramKind::AttemptDuration => Some(1),
        HistogramKind::SlotWait => Some(2),
        _ => None,
    }
}

/// The name of the span of one attempt.
pub(super) const ATTEMPT_SPAN: &str = "resilience.attempt";
/// `resilience.attempt.number`: an attempt's number in its call, from 1.
pub(super) const ATTEMPT_NUMBER: &str = "resilience.attempt.number";
/// `resilience.rejection.kind`: why a policy refused an attempt.
pub(super) const REJECTION_KIND: &str = "resilience.rejection.kind";
/// `error.type` (OpenTelemetry's): the class of a failed attempt's error.
pub(super) const ERROR_TYPE: &str = "error.type";

#[cfg(test)]
mod tests {
    use super::{HISTOGRAMS, INSTRUMENTS};

    /// The rows of the module docs' table of instruments: name, type, unit,
    /// attributes (as written, backticks and all) and `metrics` twin.
    fn rows() -> Vec<[String; 5]> {
        let docs = include_str!("../mod.rs");
        docs.lines()
            .skip_while(|line| !line.starts_with("//! | instrument | type |"))
            .take_while(|line| line.starts_with("//! |"))
            .filter(|line| line.starts_with("//! | `resilience."))
            .map(|line| {
                let mut cells: Vec<String> = line
                    .trim_start_matches("//! |")
                    .split(" | ")
                    .map(|cell| cell.trim().to_owned())
                    .collect();
                assert!(cells.len() >= 6, "a row of six cells: {line}");
                cells.truncate(5);
                <[String; 5]>::try_from(cells).expect("five cells")
            })
            .collect()
    }

    fn code(cell: &str) -> String {
        format!("`{cell}`")
    }

    fn attributes(attributes: &[&str]) -> String {
        if attributes.is_empty() {
            "none".to_owned()
        } else {
            attributes
                .iter()
                .map(|attribute| code(attribute))
                .collect::<Vec<_>>()
                .join(", ")
        }
    }

    #[test]
    fn every_instrument_is_in_the_module_docs_table_as_the_code_makes_it() {
        let instruments = INSTRUMENTS.iter().map(|instrument| {
            [
                code(instrument.name),
                instrument.kind.name().to_owned(),
                code(instrument.unit),
                attributes(instrument.attributes),
                code(instrument.twin),
            ]
        });
        let histograms = HISTOGRAMS.iter().map(|histogram| {
            [
                code(histogram.name),
                "Histogram".to_owned(),
                code("s"),
                attributes(histogram.attributes),
                code(histogram.twin),
            ]
        });
        let expected: Vec<[String; 5]> = instruments.chain(histograms).collect();
        assert_eq!(rows(), expected);
    }

    #[test]
    fn instrument_names_follow_the_semantic_conventions_style() {
        for name in INSTRUMENTS
            .iter()
            .map(|instrument| instrument.name)
            .chain(HISTOGRAMS.iter().map(|histogram| histogram.name))
        {
            assert!(name.starts_with("resilience."), "{name}");
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_lowercase() || c == '.' || c == '_'),
                "lower case, dots and underscores: {name}"
            );
            assert!(!name.ends_with("_total"), "no Prometheus suffix: {name}");
        }
        assert!(
            INSTRUMENTS.len() <= 128,
            "the callbacks' bit set (`State::read`) holds 128"
        );
    }

    /// Every `metrics` metric has an OpenTelemetry twin, and every twin is
    /// a `metrics` metric.
    #[cfg(feature = "metrics")]
    #[test]
    fn the_two_exporters_export_the_same_things() {
        use std::collections::BTreeSet;
        let metrics: BTreeSet<&str> = crate::observe::metrics::names::all()
            .map(|metric| metric.name)
            .collect();
        let twins: BTreeSet<&str> = INSTRUMENTS
            .iter()
            .map(|i| i.twin)
            .chain(HISTOGRAMS.iter().map(|h| h.twin))
            .collect();
        assert_eq!(
            twins.len(),
            INSTRUMENTS.len() + HISTOGRAMS.len(),
            "one twin each"
        );
        assert_eq!(twins, metrics);
    }

    #[test]
    fn the_span_and_its_attributes_are_in_the_module_docs() {
        let docs = include_str!("../mod.rs");
        for name in [
            super::ATTEMPT_SPAN,
            super::INSTANCE,
            super::ATTEMPT_NUMBER,
            super::OUTCOME,
            super::REJECTION_KIND,
            super::ERROR_TYPE,
        ] {
            assert!(docs.contains(&format!("`{name}`")), "{name}");
        }
    }

    #[test]
    fn every_histogram_kind_has_its_instrument() {
        let positions: Vec<Option<usize>> = bulkhead_core::HistogramKind::ALL
            .into_iter()
            .map(super::histogram_position)
            .collect();
        assert_eq!(positions, [Some(0), Some(1), Some(2)]);
        assert_eq!(HISTOGRAMS.len(), 3);
    }
}
