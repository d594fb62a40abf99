//! Counters (and the gauges a change of state moves at once) from the
//! policies' events.

use ::metrics::{counter, gauge};
use bulkhead_core::{
    BulkheadEvent, BulkheadEventKind, ChaosEvent, ChaosEventKind, CircuitBreakerEvent,
    CircuitBreakerEventKind, EventVisitor, FallbackEvent, FallbackEventKind, FleetShareChanged,
    HedgeEvent, HedgeEventKind, RateLimiterEvent, RateLimiterEventKind, RetryEvent, RetryEventKind,
    TimeoutEvent, TimeoutEventKind,
};

use super::names::{
    BREAKER_STATE, BREAKER_TRANSITIONS, CHAOS_INJECTIONS, CHAOS_LATENCY, FALLBACKS, HEDGES,
    KEYED_REJECTIONS, LIMIT_CHANGES, LIMITER_REJECTIONS, MAX_CONCURRENT, OVERRUNS, REJECTIONS,
    RETRIES, RETRY_CALLS, SHED, TIMEOUTS,
};
use crate::observe::names::{cause, circuit_state};

/// Counts events.
pub(super) struct Counter;

impl EventVisitor for Counter {
    type Output = ();

    fn bulkhead(&mut self, event: BulkheadEvent) {
        let instance = event.instance;
        match event.kind {
            BulkheadEventKind::Rejected { .. } => {
                counter!(REJECTIONS, "instance" => instance).increment(1);
            }
            BulkheadEventKind::Shed { priority, .. } => {
                counter!(REJECTIONS, "instance" => instance).increment(1);
                counter!(SHED, "instance" => instance, "priority" => priority.name()).increment(1);
            }
            BulkheadEventKind::KeyRejected { reason, .. } => {
                counter!(KEYED_REJECTIONS, "instance" => instance, "reason" => reason.name())
                    .increment(1);
            }
            BulkheadEventKind::LimitChanged { to, .. } => {
                counter!(LIMIT_CHANGES, "instance" => instance).increment(1);
                gauge!(MAX_CONCURRENT, "instance" => instance).set(to);
            }
            _ => {}
        }
    }

    fn retry(&mut self, event: RetryEvent) {
        let instance = event.instance;
        let outcome = match event.kind {
            RetryEventKind::Retrying { rejection, .. } => {
                counter!(RETRIES, "instance" => instance, "cause" => cause(rejection)).increment(1);
                return;
            }
            RetryEventKind::Succeeded { .. } => "succeeded_after_retry",
            RetryEventKind::Exhausted { .. } => "exhausted",
            RetryEventKind::Aborted { .. } => "aborted",
            RetryEventKind::BudgetExhausted { .. } => "budget_exhausted",
            RetryEventKind::GaveUp { .. } => "gave_up",
            _ => return,
        };
        counter!(RETRY_CALLS, "instance" => instance, "outcome" => outcome).increment(1);
    }

    fn circuit_breaker(&mut self, event: CircuitBreakerEvent) {
        let instance = event.instance;
        if let CircuitBreakerEventKind::StateTransition { from, to } = event.kind {
            let (from, to) = (circuit_state(from), circuit_state(to));
            counter!(BREAKER_TRANSITIONS, "instance" => instance, "from" => from, "to" => to)
                .increment(1);
            gauge!(BREAKER_STATE, "instance" => instance, "state" => from).set(0.0);
            gauge!(BREAKER_STATE, "instance" => instance, "state" => to).set(1.0);
        }
    }

    fn timeout(&mut self, event: TimeoutEvent) {
        let instance = event.instance;
        match event.kind {
            TimeoutEventKind::TimedOut { .. } => {
                counter!(TIMEOUTS, "instance" => instance).increment(1)
            }
            TimeoutEventKind::Overrun { .. } => {
                counter!(OVERRUNS, "instance" => instance).increment(1)
            }
            _ => {}
        }
    }

    fn rate_limiter(&mut self, event: RateLimiterEvent) {
        if let RateLimiterEventKind::Rejected { .. } = event.kind {
            counter!(LIMITER_REJECTIONS, "instance" => event.instance).increment(1);
        }
    }

    fn hedge(&mut self, event: HedgeEvent) {
        let outcome = match event.kind {
            HedgeEventKind::Started { .. } => "started",
            HedgeEventKind::Skipped { .. } => "skipped",
            HedgeEventKind::BudgetExhausted { .. } => "budget_exhausted",
            HedgeEventKind::Won { .. } => "won",
            _ => return,
        };
        counter!(HEDGES, "instance" => event.instance, "outcome" => outcome).increment(1);
    }

    fn fallback(&mut self, event: FallbackEvent) {
        if let FallbackEventKind::Used { rejection } = event.kind {
            counter!(FALLBACKS, "instance" => event.instance, "cause" => cause(rejection))
                .increment(1);
        }
    }

    fn chaos(&mut self, event: ChaosEvent) {
        let instance = event.instance;
        let kind = match event.kind {
            ChaosEventKind::FaultInjected => "fault",
            ChaosEventKind::PanicInjected => "panic",
            ChaosEventKind::LatencyInjected { latency } => {
                counter!(CHAOS_LATENCY, "instance" => instance).increment(super::micros(latency));
                "latency"
            }
            _ => return,
        };
        counter!(CHAOS_INJECTIONS, "instance" => instance, "kind" => kind).increment(1);
    }

    fn fleet_share_changed(&mut self, event: FleetShareChanged) {
        counter!(
            super::names::FLEET_CHANGES,
            "resource" => event.resource,
            "reason" => event.reason.as_str()
        )
        .increment(1);
        gauge!(super::names::FLEET_SHARE, "resource" => event.resource).set(event.to);
    }
}
