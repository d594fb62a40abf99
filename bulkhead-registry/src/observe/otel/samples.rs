//! What a snapshot of the registry shows, taken once per collection.
//! Counters that follow events are registered here too, so that they read 0
//! before the first event.

use std::borrow::Cow::{self, Borrowed, Owned};

use bulkhead_core::KeyRefusal;
use bulkhead_core::keys::PolicyKind;

use super::State;
use super::names::{
    ABANDONED, ADAPTIVE_CEILING, ADAPTIVE_DROPS, ADAPTIVE_ERRORS, ADAPTIVE_NO_LOAD,
    ADAPTIVE_RECENT, ADMITTED, BREAKER_REJECTIONS, BREAKER_STATE, CHAOS_ENABLED, CHAOS_LATENCY,
    COMPLETED, FLEET_BUDGET, FLEET_FAILURES, FLEET_PROCESSES, FLEET_RENEWALS, FLEET_SHARE,
    FLEET_STATE, FLEET_TARGET, HOLD_TIME, IN_FLIGHT, KEYED_IN_FLIGHT, KEYED_KEY_IN_FLIGHT,
    KEYED_KEYS, KEYED_LIMIT, KEYED_REJECTIONS, KEYED_WAITING, LIMIT, LIMIT_CHANGES,
    LIMITER_AVAILABLE, LIMITER_REJECTIONS, LIMITER_WAITING, OVERRUNS, PRIORITY_IN_FLIGHT,
    REJECTIONS, RETRY_BUDGET, SHED, TIMEOUTS, WAITING,
};
use crate::observe::names::{CIRCUIT_STATES, circuit_state};
use crate::{
    BulkheadSnapshot, ChaosSnapshot, CircuitBreakerSnapshot, KeyedBulkheadSnapshot,
    RateLimiterSnapshot, RetrySnapshot, TimeoutSnapshot,
};

/// The label of the keys of a keyed bulkhead beyond its top list.
pub(super) const OTHER_KEYS: &str = "_other";

/// The most distinct keys a keyed bulkhead's series ever label, over the
/// process's life (as the `metrics` exporter's): a busy key first seen once
/// this many were labelled is summed into [`OTHER_KEYS`].
pub(super) const MAX_KEY_LABELS: usize = 100;

/// Replaces what the state shows with a new snapshot of its registry.
pub(super) fn sample(state: &mut State) {
    state.sampled.iter_mut().for_each(Vec::clear);
    let snapshot = state.registry.snapshot();
    // A match, so that a new policy kind is a compile error here.
    for kind in PolicyKind::ALL {
        match kind {
            PolicyKind::Bulkhead => snapshot.bulkheads().iter().for_each(|b| bulkhead(state, b)),
            PolicyKind::Retry => snapshot.retries().iter().for_each(|r| retry(state, r)),
            PolicyKind::CircuitBreaker => snapshot
                .circuit_breakers()
                .iter()
                .for_each(|c| circuit_breaker(state, c)),
            PolicyKind::Timeout => snapshot.timeouts().iter().for_each(|t| timeout(state, t)),
            PolicyKind::RateLimiter => snapshot
                .rate_limiters()
                .iter()
                .for_each(|r| rate_limiter(state, r)),
            PolicyKind::Chaos => snapshot.chaos().iter().for_each(|c| chaos(state, c)),
            // Their counters all come from events.
            PolicyKind::Hedge | PolicyKind::Fallback => {}
        }
    }
    for keyed_bulkhead in snapshot.keyed_bulkheads() {
        keyed(state, keyed_bulkhead);
    }
    snapshot.fleets().iter().for_each(|f| fleet(state, f));
    let readings = state.registry.telemetry().histograms();
    state.histograms.record_all(&readings);
}

fn instance(name: &str) -> Cow<'static, str> {
    Owned(name.to_owned())
}

fn bulkhead(state: &mut State, bulkhead: &BulkheadSnapshot) {
    let id = [instance(&bulkhead.instance)];
    state.set(IN_FLIGHT, &id, bulkhead.concurrent_calls);
    state.set(LIMIT, &id, bulkhead.max_concurrent);
    state.set(WAITING, &id, bulkhead.waiting_calls);
    state.register(REJECTIONS, &id);
    state.register(LIMIT_CHANGES, &id);
    for class in &bulkhead.classes {
        let labels = [id[0].clone(), Borrowed(class.class.name())];
        state.set(PRIORITY_IN_FLIGHT, &labels, class.held);
        state.register(SHED, &labels);
    }
    if let Some(traffic) = &bulkhead.traffic {
        state.set(ADMITTED, &id, traffic.admitted);
        state.set(ABANDONED, &id, traffic.abandoned);
        state.set(COMPLETED, &id, traffic.completed);
        state.set(HOLD_TIME, &id, traffic.total_hold.as_secs_f64());
    }
    if let Some(adaptive) = &bulkhead.adaptive {
        state.set(ADAPTIVE_CEILING, &id, adaptive.ceiling);
        if let Some(no_load) = adaptive.no_load {
            state.set(ADAPTIVE_NO_LOAD, &id, no_load.as_secs_f64());
        }
        if let Some(recent) = adaptive.recent {
            state.set(ADAPTIVE_RECENT, &id, recent.as_secs_f64());
        }
        state.set(ADAPTIVE_ERRORS, &id, adaptive.errors);
        state.set(ADAPTIVE_DROPS, &id, adaptive.drops);
    }
}

/// A keyed bulkhead's series: its totals, and the in-flight calls of its
/// busiest keys (the registry's `snapshot_top_keys`), the others summed as
/// [`OTHER_KEYS`]. A key that left the top list is no longer reported (an
/// observable instrument reports only what its callback observed).
fn keyed(state: &mut State, keyed: &KeyedBulkheadSnapshot) {
    let id = [instance(&keyed.instance)];
    state.set(KEYED_IN_FLIGHT, &id, keyed.in_flight);
    state.set(KEYED_WAITING, &id, keyed.waiting);
    state.set(KEYED_LIMIT, &id, keyed.max_concurrent);
    state.set(
        KEYED_KEYS,
        &id,
        u64::try_from(keyed.keys).unwrap_or(u64::MAX),
    );
    for reason in [
        KeyRefusal::KeyFull,
        KeyRefusal::GlobalFull,
        KeyRefusal::TooManyKeys,
    ] {
        state.register(KEYED_REJECTIONS, &[id[0].clone(), Borrowed(reason.name())]);
    }
    let mut labelled_in_flight = 0u32;
    let mut shown = Vec::with_capacity(keyed.top.len());
    {
        let ever = state
            .keys_labelled
            .entry(keyed.instance.clone())
            .or_default();
        for top in &keyed.top {
            if !ever.contains(&top.key) {
                if ever.len() >= MAX_KEY_LABELS {
                    continue;
                }
                ever.insert(top.key.clone());
            }
            labelled_in_flight = labelled_in_flight.saturating_add(top.in_flight);
            shown.push((top.key.clone(), top.in_flight));
        }
    }
    for (key, in_flight) in shown {
        state.set(KEYED_KEY_IN_FLIGHT, &[id[0].clone(), Owned(key)], in_flight);
    }
    let other = keyed.in_flight.saturating_sub(labelled_in_flight);
    state.set(
        KEYED_KEY_IN_FLIGHT,
        &[id[0].clone(), Borrowed(OTHER_KEYS)],
        other,
    );
}

fn circuit_breaker(state: &mut State, breaker: &CircuitBreakerSnapshot) {
    let id = instance(&breaker.instance);
    for circuit in CIRCUIT_STATES {
        let labels = [id.clone(), Borrowed(circuit_state(circuit))];
        state.set(BREAKER_STATE, &labels, circuit == breaker.state);
    }
    state.set(BREAKER_REJECTIONS, &[id], breaker.not_permitted_calls);
}

fn rate_limiter(state: &mut State, limiter: &RateLimiterSnapshot) {
    let id = [instance(&limiter.instance)];
    state.set(LIMITER_AVAILABLE, &id, limiter.available_permits);
    state.set(LIMITER_WAITING, &id, limiter.waiting_calls);
    state.register(LIMITER_REJECTIONS, &id);
}

fn timeout(state: &mut State, timeout: &TimeoutSnapshot) {
    let id = [instance(&timeout.instance)];
    state.register(TIMEOUTS, &id);
    state.register(OVERRUNS, &id);
}

fn chaos(state: &mut State, chaos: &ChaosSnapshot) {
    let id = [instance(&chaos.instance)];
    state.set(CHAOS_ENABLED, &id, if chaos.enabled { 1.0 } else { 0.0 });
    state.register(CHAOS_LATENCY, &id);
}

fn retry(state: &mut State, retry: &RetrySnapshot) {
    if let Some(budget) = &retry.budget {
        state.set(RETRY_BUDGET, &[instance(&retry.instance)], budget.available);
    }
}

fn fleet(state: &mut State, fleet: &crate::fleet::FleetSnapshot) {
    use crate::fleet::FleetState;
    let id = [instance(&fleet.resource)];
    state.set(FLEET_SHARE, &id, fleet.share);
    state.set(FLEET_TARGET, &id, fleet.target);
    state.set(FLEET_BUDGET, &id, fleet.budget);
    state.set(FLEET_PROCESSES, &id, fleet.processes);
    for fleet_state in [
        FleetState::Joining,
        FleetState::Joined,
        FleetState::Unreachable,
        FleetState::Left,
    ] {
        let labels = [id[0].clone(), Borrowed(fleet_state.as_str())];
        state.set(FLEET_STATE, &labels, fleet_state == fleet.state);
    }
    state.set(FLEET_RENEWALS, &id, fleet.renewals);
    state.set(FLEET_FAILURES, &id, fleet.failures);
}
