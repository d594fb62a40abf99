//! Event counts, as the observer thread reads the registry's events.

use std::borrow::Cow::Borrowed;

use bulkhead_core::{
    BulkheadEvent, BulkheadEventKind, ChaosEvent, ChaosEventKind, CircuitBreakerEvent,
    CircuitBreakerEventKind, EventVisitor, FallbackEvent, FallbackEventKind, FleetShareChanged,
    HedgeEvent, HedgeEventKind, RateLimiterEvent, RateLimiterEventKind, RetryEvent, RetryEventKind,
    TimeoutEvent, TimeoutEventKind,
};

use super::State;
use super::names::{
    BREAKER_TRANSITIONS, CHAOS_INJECTIONS, CHAOS_LATENCY, FALLBACKS, FLEET_SHARE_CHANGES, HEDGES,
    KEYED_REJECTIONS, LIMIT_CHANGES, LIMITER_REJECTIONS, OVERRUNS, REJECTIONS, RETRIES,
    RETRY_CALLS, SHED, TIMEOUTS,
};
use crate::observe::names::{circuit_state, outcome};

/// Counts events into the state.
pub(super) struct Counter<'a>(pub(super) &'a mut State);

impl EventVisitor for Counter<'_> {
    type Output = ();

    fn bulkhead(&mut self, event: BulkheadEvent) {
        let instance = Borrowed(event.instance);
        match event.kind {
            BulkheadEventKind::Rejected { .. } => self.0.add(REJECTIONS, &[instance], 1),
            BulkheadEventKind::Shed { priority, .. } => {
                self.0.add(REJECTIONS, std::slice::from_ref(&instance), 1);
                self.0.add(SHED, &[instance, Borrowed(priority.name())], 1);
            }
            BulkheadEventKind::KeyRejected { reason, .. } => {
                self.0
                    .add(KEYED_REJECTIONS, &[instance, Borrowed(reason.name())], 1);
            }
            BulkheadEventKind::LimitChanged { .. } => self.0.add(LIMIT_CHANGES, &[instance], 1),
            _ => {}
        }
    }

    fn retry(&mut self, event: RetryEvent) {
        let instance = Borrowed(event.instance);
        let result = match event.kind {
            RetryEventKind::Retrying { rejection, .. } => {
                self.0
                    .add(RETRIES, &[instance, Borrowed(outcome(rejection))], 1);
                return;
            }
            RetryEventKind::Succeeded { .. } => "succeeded_after_retry",
            RetryEventKind::Exhausted { .. } => "exhausted",
            RetryEventKind::Aborted { .. } => "aborted",
            RetryEventKind::BudgetExhausted { .. } => "budget_exhausted",
            RetryEventKind::GaveUp { .. } => "gave_up",
            _ => return,
        };
        self.0.add(RETRY_CALLS, &[instance, Borrowed(result)], 1);
    }

    fn circuit_breaker(&mut self, event: CircuitBreakerEvent) {
        if let CircuitBreakerEventKind::StateTransition { from, to } = event.kind {
            let labels = [
                Borrowed(event.instance),
                Borrowed(circuit_state(from)),
                Borrowed(circuit_state(to)),
            ];
            self.0.add(BREAKER_TRANSITIONS, &labels, 1);
        }
    }

    fn timeout(&mut self, event: TimeoutEvent) {
        let instance = Borrowed(event.instance);
        match event.kind {
            TimeoutEventKind::TimedOut { .. } => self.0.add(TIMEOUTS, &[instance], 1),
            TimeoutEventKind::Overrun { .. } => self.0.add(OVERRUNS, &[instance], 1),
            _ => {}
        }
    }

    fn rate_limiter(&mut self, event: RateLimiterEvent) {
        if let RateLimiterEventKind::Rejected { .. } = event.kind {
            self.0
                .add(LIMITER_REJECTIONS, &[Borrowed(event.instance)], 1);
        }
    }

    fn hedge(&mut self, event: HedgeEvent) {
        let result = match event.kind {
            HedgeEventKind::Started { .. } => "started",
            HedgeEventKind::Skipped { .. } => "skipped",
            HedgeEventKind::BudgetExhausted { .. } => "budget_exhausted",
            HedgeEventKind::Won { .. } => "won",
            _ => return,
        };
        self.0
            .add(HEDGES, &[Borrowed(event.instance), Borrowed(result)], 1);
    }

    fn fallback(&mut self, event: FallbackEvent) {
        if let FallbackEventKind::Used { rejection } = event.kind {
            let labels = [Borrowed(event.instance), Borrowed(outcome(rejection))];
            self.0.add(FALLBACKS, &labels, 1);
        }
    }

    fn chaos(&mut self, event: ChaosEvent) {
        let instance = Borrowed(event.instance);
        let injection = match event.kind {
            ChaosEventKind::FaultInjected => "fault",
            ChaosEventKind::PanicInjected => "panic",
            ChaosEventKind::LatencyInjected { latency } => {
                let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
                self.0
                    .add(CHAOS_LATENCY, std::slice::from_ref(&instance), micros);
                "latency"
            }
            _ => return,
        };
        self.0
            .add(CHAOS_INJECTIONS, &[instance, Borrowed(injection)], 1);
    }

    fn fleet_share_changed(&mut self, event: FleetShareChanged) {
        let labels = [Borrowed(event.resource), Borrowed(event.reason.as_str())];
        self.0.add(FLEET_SHARE_CHANGES, &labels, 1);
    }
}
