//! Policy events as `tracing` events: [`trace_events`].

use std::io;

use ::tracing::subscriber::NoSubscriber;
use ::tracing::{Dispatch, Level, dispatcher, event};
use bulkhead_core::{
    BulkheadEvent, BulkheadEventKind, ChaosEvent, ChaosEventKind, CircuitBreakerEvent,
    CircuitBreakerEventKind, CircuitState, Event, EventVisitor, FallbackEvent, FallbackEventKind,
    FleetShareChanged, FleetShareReason, HedgeEvent, HedgeEventKind, KeyRefusal, RateLimiterEvent,
    RateLimiterEventKind, RetryEvent, RetryEventKind, TimeoutEvent, TimeoutEventKind,
};

use super::names::{cause, circuit_state};
use super::observer::{self, ObserverHandle, Sink};
use crate::registry::Registry;
use bulkhead_core::keys::PolicyKind;

/// The target of every event: filter with `bulkhead=debug`.
const TARGET: &str = "bulkhead";

/// Emits a `tracing` event for every event of `registry`'s policies, from a
/// thread of its own, until the returned handle is dropped or the registry
/// is gone.
///
/// Events go to the subscriber that is the default where this is called
/// (a scoped default from `tracing::subscriber::with_default`, or else the
/// global one when each event is emitted). Their target is `bulkhead`; the
/// fields and levels are in the [module docs](super#tracing).
///
/// Callers never wait for `tracing`: the thread reads the registry's events
/// from a bounded buffer, and if a slow subscriber makes it fall behind it
/// loses the oldest ones, counts them ([`ObserverHandle::lost`]) and says so
/// in a `warn` event.
///
/// The thread holds no reference to the registry: it ends by itself once
/// the registry and every policy it made are dropped.
///
/// # Errors
///
/// If the thread cannot be started.
///
/// # Examples
///
/// ```
/// use bulkhead_registry::{observe, Registry};
///
/// let registry = Registry::new();
/// let tracing = observe::trace_events(&registry)?; // keep it alive
/// # drop(tracing);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn trace_events(registry: &Registry) -> io::Result<ObserverHandle> {
    let dispatch = dispatcher::get_default(Dispatch::clone);
    // No subscriber yet: use whatever is the global one at each event.
    let dispatch = (!dispatch.is::<NoSubscriber>()).then_some(dispatch);
    observer::spawn(
        "bulkhead-tracing",
        registry.subscribe(),
        None,
        move |observer| match dispatch {
            Some(dispatch) => dispatcher::with_default(&dispatch, || observer.run(&mut Tracer)),
            None => observer.run(&mut Tracer),
        },
    )
}

/// Emits each event.
struct Tracer;

impl Sink for Tracer {
    fn event(&mut self, event: Event) {
        event.visit(self);
    }

    fn lost(&mut self, count: u64) {
        event!(
            target: TARGET,
            Level::WARN,
            kind = "events_lost",
            lost = count,
            "bulkhead events lost: the tracing observer fell behind"
        );
    }
}

/// `event!` with the fields every event has: `instance`, `policy`, `kind`.
macro_rules! emit {
    ($level:ident, $event:expr, $policy:ident, $kind:literal; $($rest:tt)+) => {
        event!(
            target: TARGET,
            Level::$level,
            instance = $event.instance,
            policy = PolicyKind::$policy.name(),
            kind = $kind,
            $($rest)+
        )
    };
}

/// Each kind of event as a `tracing` event.
impl EventVisitor for Tracer {
    type Output = ();

    fn bulkhead(&mut self, event: BulkheadEvent) {
        match event.kind {
            BulkheadEventKind::Rejected {
                max_concurrent,
                waited,
            } => emit!(DEBUG, event, Bulkhead, "rejected";
                max_concurrent, waited, "bulkhead full: call rejected"),
            BulkheadEventKind::Shed {
                priority,
                threshold,
                max_concurrent,
            } => emit!(DEBUG, event, Bulkhead, "shed";
                priority = priority.name(), threshold, max_concurrent,
                "class past its share of the limit: call shed"),
            BulkheadEventKind::KeyRejected {
                reason: reason @ KeyRefusal::TooManyKeys,
                limit,
                waited,
            } => emit!(DEBUG, event, Bulkhead, "key_rejected";
                reason = reason.name(), limit, waited,
                "REG-017: new key refused, max_keys keys are live: call rejected"),
            BulkheadEventKind::KeyRejected {
                reason,
                limit,
                waited,
            } => emit!(DEBUG, event, Bulkhead, "key_rejected";
                reason = reason.name(), limit, waited,
                "keyed bulkhead full: call rejected"),
            BulkheadEventKind::LimitChanged { from, to } => {
                emit!(INFO, event, Bulkhead, "limit_changed";
                    from, to, "bulkhead limit changed")
            }
            kind => emit!(DEBUG, event, Bulkhead, "other"; detail = ?kind, "bulkhead event"),
        }
    }

    fn retry(&mut self, event: RetryEvent) {
        match event.kind {
            RetryEventKind::Retrying {
                attempt,
                delay,
                rejection,
            } => emit!(DEBUG, event, Retry, "retrying";
                attempt, ?delay, cause = cause(rejection), "attempt failed, retrying"),
            RetryEventKind::Succeeded { attempts } => emit!(DEBUG, event, Retry, "succeeded";
                attempts, "call succeeded after retrying"),
            RetryEventKind::Exhausted {
                attempts,
                rejection,
            } => emit!(DEBUG, event, Retry, "exhausted";
                attempts, cause = cause(rejection), "last attempt failed, retries exhausted"),
            RetryEventKind::Aborted {
                attempts,
                rejection,
            } => emit!(DEBUG, event, Retry, "aborted";
                attempts, cause = cause(rejection), "attempt failed in a way that is not retried"),
            RetryEventKind::BudgetExhausted {
                attempts,
                rejection,
            } => emit!(DEBUG, event, Retry, "budget_exhausted";
                attempts, cause = cause(rejection), "attempt failed, retry budget exhausted"),
            RetryEventKind::GaveUp {
                attempts,
                rejection,
                reason,
            } => emit!(DEBUG, event, Retry, "gave_up";
                attempts, cause = cause(rejection), ?reason,
                "attempt failed, a retry would come too late"),
            kind => emit!(DEBUG, event, Retry, "other"; detail = ?kind, "retry event"),
        }
    }

    fn circuit_breaker(&mut self, event: CircuitBreakerEvent) {
        match event.kind {
            CircuitBreakerEventKind::StateTransition {
                from,
                to: to @ (CircuitState::Open | CircuitState::ForcedOpen),
            } => emit!(WARN, event, CircuitBreaker, "state_transition";
                from = circuit_state(from), to = circuit_state(to), "circuit breaker opened"),
            CircuitBreakerEventKind::StateTransition { from, to } => {
                emit!(INFO, event, CircuitBreaker, "state_transition";
                    from = circuit_state(from), to = circuit_state(to), "circuit breaker changed state")
            }
            CircuitBreakerEventKind::Rejected { state } => {
                emit!(DEBUG, event, CircuitBreaker, "rejected";
                    state = circuit_state(state), "circuit breaker open: call rejected")
            }
            kind => {
                emit!(DEBUG, event, CircuitBreaker, "other"; detail = ?kind, "circuit breaker event")
            }
        }
    }

    fn timeout(&mut self, event: TimeoutEvent) {
        match event.kind {
            TimeoutEventKind::TimedOut { timeout } => emit!(DEBUG, event, Timeout, "timed_out";
                ?timeout, "call timed out"),
            TimeoutEventKind::Overrun { timeout, took } => emit!(DEBUG, event, Timeout, "overrun";
                ?timeout, ?took, "sync call overran its timeout"),
            kind => emit!(DEBUG, event, Timeout, "other"; detail = ?kind, "timeout event"),
        }
    }

    fn rate_limiter(&mut self, event: RateLimiterEvent) {
        match event.kind {
            RateLimiterEventKind::Rejected { limit_for_period } => {
                emit!(DEBUG, event, RateLimiter, "rejected";
                limit_for_period, "rate limiter: no permit, call rejected")
            }
            kind => emit!(DEBUG, event, RateLimiter, "other"; detail = ?kind, "rate limiter event"),
        }
    }

    fn hedge(&mut self, event: HedgeEvent) {
        match event.kind {
            HedgeEventKind::Started { hedge } => emit!(DEBUG, event, Hedge, "started";
                hedge, "attempt still running after the delay: hedge started"),
            HedgeEventKind::Skipped { hedge, rejection } => emit!(DEBUG, event, Hedge, "skipped";
                hedge, cause = rejection.name(), "hedge refused by a policy: skipped"),
            HedgeEventKind::BudgetExhausted { hedge } => {
                emit!(DEBUG, event, Hedge, "budget_exhausted";
                hedge, "retry budget exhausted: hedge not made")
            }
            HedgeEventKind::Won { hedge } => emit!(DEBUG, event, Hedge, "won";
                hedge, "a hedge answered first"),
            kind => emit!(DEBUG, event, Hedge, "other"; detail = ?kind, "hedge event"),
        }
    }

    fn fallback(&mut self, event: FallbackEvent) {
        match event.kind {
            FallbackEventKind::Used { rejection } => emit!(DEBUG, event, Fallback, "used";
                cause = cause(rejection), "call failed: the fallback answered"),
            kind => emit!(DEBUG, event, Fallback, "other"; detail = ?kind, "fallback event"),
        }
    }

    fn chaos(&mut self, event: ChaosEvent) {
        match event.kind {
            ChaosEventKind::FaultInjected => emit!(DEBUG, event, Chaos, "fault_injected";
                "chaos: a fault took the call's place"),
            ChaosEventKind::PanicInjected => emit!(DEBUG, event, Chaos, "panic_injected";
                "chaos: a panic took the call's place"),
            ChaosEventKind::LatencyInjected { latency } => {
                emit!(DEBUG, event, Chaos, "latency_injected";
                    ?latency, "chaos: latency injected before the call")
            }
            kind => emit!(DEBUG, event, Chaos, "other"; detail = ?kind, "chaos event"),
        }
    }

    fn fleet_share_changed(&mut self, event: FleetShareChanged) {
        let FleetShareChanged {
            resource,
            reason,
            from,
            to,
            target,
            budget,
            processes,
            ..
        } = event;
        let reason = reason.as_str();
        if event.reason == FleetShareReason::Unreachable {
            event!(target: TARGET, Level::WARN, resource, kind = "fleet_share_changed",
                reason, from, to, target, budget, processes,
                "fleet lease ran out without a renewal: share fell back");
        } else {
            event!(target: TARGET, Level::INFO, resource, kind = "fleet_share_changed",
                reason, from, to, target, budget, processes, "fleet share changed");
        }
    }
}
