//! Gauges (and exact counters) from a snapshot of the registry. Counters
//! that follow events are registered here too, so that they read 0 before
//! the first event.

use ::metrics::{counter, gauge, histogram};

use super::names::{
    ABANDONED, ADAPTIVE_CEILING, ADAPTIVE_DROPS, ADAPTIVE_ERRORS, ADAPTIVE_NO_LOAD,
    ADAPTIVE_RECENT, ADMITTED, BREAKER_REJECTIONS, BREAKER_STATE, CHAOS_ENABLED, CHAOS_LATENCY,
    COMPLETED, HELD, HOLD, IN_FLIGHT, LIMIT_CHANGES, LIMITER_AVAILABLE, LIMITER_REJECTIONS,
    LIMITER_WAITING, MAX_CONCURRENT, OVERRUNS, REJECTIONS, RETRY_BUDGET, SHED, TIMEOUTS, WAITING,
};
use crate::observe::names::{CIRCUIT_STATES, circuit_state};
use bulkhead_core::KeyRefusal;

use crate::{
    BulkheadSnapshot, ChaosSnapshot, CircuitBreakerSnapshot, KeyedBulkheadSnapshot,
    RateLimiterSnapshot, RetrySnapshot, TimeoutSnapshot,
};

pub(super) fn bulkhead(bulkhead: &BulkheadSnapshot) {
    let instance = &bulkhead.instance;
    gauge!(IN_FLIGHT, "instance" => instance.clone()).set(bulkhead.concurrent_calls);
    gauge!(MAX_CONCURRENT, "instance" => instance.clone()).set(bulkhead.max_concurrent);
    gauge!(WAITING, "instance" => instance.clone()).set(bulkhead.waiting_calls);
    let _ = counter!(REJECTIONS, "instance" => instance.clone());
    let _ = counter!(LIMIT_CHANGES, "instance" => instance.clone());
    for class in &bulkhead.classes {
        let priority = class.class.name();
        gauge!(HELD, "instance" => instance.clone(), "priority" => priority).set(class.held);
        let _ = counter!(SHED, "instance" => instance.clone(), "priority" => priority);
    }
    if let Some(traffic) = &bulkhead.traffic {
        let hold = super::micros(traffic.total_hold);
        counter!(ADMITTED, "instance" => instance.clone()).absolute(traffic.admitted);
        counter!(ABANDONED, "instance" => instance.clone()).absolute(traffic.abandoned);
        counter!(COMPLETED, "instance" => instance.clone()).absolute(traffic.completed);
        counter!(HOLD, "instance" => instance.clone()).absolute(hold);
    }
    if let Some(adaptive) = &bulkhead.adaptive {
        gauge!(ADAPTIVE_CEILING, "instance" => instance.clone()).set(adaptive.ceiling);
        if let Some(no_load) = adaptive.no_load {
            gauge!(ADAPTIVE_NO_LOAD, "instance" => instance.clone()).set(no_load.as_secs_f64());
        }
        if let Some(recent) = adaptive.recent {
            gauge!(ADAPTIVE_RECENT, "instance" => instance.clone()).set(recent.as_secs_f64());
        }
        counter!(ADAPTIVE_ERRORS, "instance" => instance.clone()).absolute(adaptive.errors);
        counter!(ADAPTIVE_DROPS, "instance" => instance.clone()).absolute(adaptive.drops);
    }
}

/// The label of the keys of a keyed bulkhead beyond its top list.
pub(super) const OTHER_KEYS: &str = "_other";

/// The most distinct keys a keyed bulkhead's gauges ever label, over the
/// process's life: a busy key first seen once this many were labelled is
/// summed into [`OTHER_KEYS`], so that tenants coming and going never grow
/// the number of series without bound.
pub(super) const MAX_KEY_LABELS: usize = 100;

/// The keys a keyed bulkhead's gauges label: those of its previous sample,
/// and every one ever labelled (at most [`MAX_KEY_LABELS`]).
#[derive(Debug, Default)]
pub(super) struct KeyLabels {
    shown: Vec<String>,
    ever: std::collections::HashSet<String>,
}

/// A keyed bulkhead's gauges. A key that left the top list since the
/// previous sample is set to 0, so that its series does not keep its last
/// value; a busy key that would be a label past [`MAX_KEY_LABELS`] is
/// counted in [`OTHER_KEYS`].
pub(super) fn keyed(keyed: &KeyedBulkheadSnapshot, labels: &mut KeyLabels) {
    use super::names::{
        KEYED_IN_FLIGHT, KEYED_KEY_IN_FLIGHT, KEYED_KEYS, KEYED_MAX_CONCURRENT, KEYED_REJECTIONS,
        KEYED_WAITING,
    };
    let instance = &keyed.instance;
    gauge!(KEYED_IN_FLIGHT, "instance" => instance.clone()).set(keyed.in_flight);
    gauge!(KEYED_WAITING, "instance" => instance.clone()).set(keyed.waiting);
    gauge!(KEYED_MAX_CONCURRENT, "instance" => instance.clone()).set(keyed.max_concurrent);
    #[allow(clippy::cast_precision_loss)] // live keys are far below 2^53
    let keys = keyed.keys as f64;
    gauge!(KEYED_KEYS, "instance" => instance.clone()).set(keys);
    for reason in [
        KeyRefusal::KeyFull,
        KeyRefusal::GlobalFull,
        KeyRefusal::TooManyKeys,
    ] {
        let _ =
            counter!(KEYED_REJECTIONS, "instance" => instance.clone(), "reason" => reason.name());
    }
    let mut labelled_in_flight = 0u32;
    let mut now: Vec<String> = Vec::with_capacity(keyed.top.len());
    for top in &keyed.top {
        if !labels.ever.contains(&top.key) {
            if labels.ever.len() >= MAX_KEY_LABELS {
                continue;
            }
            labels.ever.insert(top.key.clone());
        }
        labelled_in_flight = labelled_in_flight.saturating_add(top.in_flight);
        gauge!(KEYED_KEY_IN_FLIGHT, "instance" => instance.clone(), "key" => top.key.clone())
            .set(top.in_flight);
        now.push(top.key.clone());
    }
    for gone in labels.shown.iter().filter(|key| !now.contains(key)) {
        gauge!(KEYED_KEY_IN_FLIGHT, "instance" => instance.clone(), "key" => gone.clone()).set(0);
    }
    let other = keyed.in_flight.saturating_sub(labelled_in_flight);
    gauge!(KEYED_KEY_IN_FLIGHT, "instance" => instance.clone(), "key" => OTHER_KEYS).set(other);
    labels.shown = now;
}

pub(super) fn circuit_breaker(breaker: &CircuitBreakerSnapshot) {
    let instance = &breaker.instance;
    for state in CIRCUIT_STATES {
        let current = f64::from(u8::from(state == breaker.state));
        gauge!(BREAKER_STATE, "instance" => instance.clone(), "state" => circuit_state(state))
            .set(current);
    }
    counter!(BREAKER_REJECTIONS, "instance" => instance.clone())
        .absolute(breaker.not_permitted_calls);
}

pub(super) fn rate_limiter(limiter: &RateLimiterSnapshot) {
    let instance = &limiter.instance;
    #[allow(clippy::cast_precision_loss)] // permits are far below 2^53
    let available = limiter.available_permits as f64;
    gauge!(LIMITER_AVAILABLE, "instance" => instance.clone()).set(available);
    gauge!(LIMITER_WAITING, "instance" => instance.clone()).set(limiter.waiting_calls);
    let _ = counter!(LIMITER_REJECTIONS, "instance" => instance.clone());
}

pub(super) fn timeout(timeout: &TimeoutSnapshot) {
    let _ = counter!(TIMEOUTS, "instance" => timeout.instance.clone());
    let _ = counter!(OVERRUNS, "instance" => timeout.instance.clone());
}

pub(super) fn chaos(chaos: &ChaosSnapshot) {
    let enabled = if chaos.enabled { 1.0 } else { 0.0 };
    gauge!(CHAOS_ENABLED, "instance" => chaos.instance.clone()).set(enabled);
    let _ = counter!(CHAOS_LATENCY, "instance" => chaos.instance.clone());
}

pub(super) fn retry(retry: &RetrySnapshot) {
    if let Some(budget) = &retry.budget {
        #[allow(clippy::cast_precision_loss)] // a budget's units are far below 2^53
        let available = budget.available as f64;
        gauge!(RETRY_BUDGET, "instance" => retry.instance.clone()).set(available);
    }
}

pub(super) fn fleet(fleet: &crate::fleet::FleetSnapshot) {
    use super::names::{
        FLEET_BUDGET, FLEET_FAILURES, FLEET_PROCESSES, FLEET_RENEWALS, FLEET_SHARE, FLEET_STATE,
        FLEET_TARGET,
    };
    use crate::fleet::FleetState;
    let resource = &fleet.resource;
    gauge!(FLEET_SHARE, "resource" => resource.clone()).set(fleet.share);
    gauge!(FLEET_TARGET, "resource" => resource.clone()).set(fleet.target);
    gauge!(FLEET_BUDGET, "resource" => resource.clone()).set(fleet.budget);
    gauge!(FLEET_PROCESSES, "resource" => resource.clone()).set(fleet.processes);
    for state in [
        FleetState::Joining,
        FleetState::Joined,
        FleetState::Unreachable,
        FleetState::Left,
    ] {
        gauge!(FLEET_STATE, "resource" => resource.clone(), "state" => state.as_str())
            .set(f64::from(u8::from(state == fleet.state)));
    }
    counter!(FLEET_RENEWALS, "resource" => resource.clone()).absolute(fleet.renewals);
    counter!(FLEET_FAILURES, "resource" => resource.clone()).absolute(fleet.failures);
}

/// Each histogram (by instance, kind and outcome) as the previous sample
/// read it.
pub(super) type HistogramsSeen = std::collections::HashMap<
    (String, bulkhead_core::HistogramKind, String),
    bulkhead_core::HistogramSnapshot,
>;

/// The samples the registry's histograms took since the previous sample,
/// replayed into the recorder's histograms: each bucket's new samples as
/// that many samples of its representative value (the geometric middle of
/// its bounds, within a factor of 1.23 of each), one `record_many` per
/// bucket that changed.
pub(super) fn histograms(registry: &crate::Registry, seen: &mut HistogramsSeen) {
    for reading in registry.telemetry().histograms() {
        let key = (
            reading.instance().to_owned(),
            reading.kind(),
            reading.outcome().to_owned(),
        );
        let previous = seen.entry(key).or_default();
        let new = reading.histogram().since(previous);
        if new.count() > 0 {
            let handle = histogram!(
                super::names::histogram_name(reading.kind()),
                "instance" => reading.instance().to_owned(),
                "outcome" => reading.outcome().to_owned()
            );
            for (i, (_, count)) in new.buckets().enumerate() {
                if count > 0 {
                    let value = bulkhead_core::HistogramSnapshot::representative(i);
                    handle.record_many(
                        value.as_secs_f64(),
                        usize::try_from(count).unwrap_or(usize::MAX),
                    );
                }
            }
        }
        *previous = reading.histogram().clone();
    }
}
