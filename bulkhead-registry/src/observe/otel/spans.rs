//! A span per attempt: [`export_attempt_spans`].

use std::fmt;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use ::opentelemetry::trace::{Span as _, SpanKind, Status, Tracer};
use ::opentelemetry::{Context, KeyValue};
use bulkhead_core::{AttemptHook, AttemptRecord, Clock, Outcome, TelemetryHub};

use super::names::{ATTEMPT_NUMBER, ATTEMPT_SPAN, ERROR_TYPE, INSTANCE, OUTCOME, REJECTION_KIND};
use crate::registry::Registry;

/// Makes a span `resilience.attempt` of each attempt of every call through
/// `registry`'s compositions (pipelines, the attributes' wrappers), with
/// `tracer`, until the returned handle is dropped.
///
/// Each span is a child of the caller's current OpenTelemetry context (its
/// current span), starts when the attempt started (before the circuit
/// breaker) and ends when it ended, and says how it ended: the attributes
/// `resilience.instance`, `resilience.attempt.number` (from 1) and
/// `resilience.outcome` (`success`, `error`, or the rejection kind in snake
/// case), and for a failed attempt the status `Error`, `error.type` (the
/// rejection kind, or `_OTHER` for the call's own error) and, when a policy
/// refused it, `resilience.rejection.kind` (why). See the [module
/// docs](crate::observe#spans).
///
/// Unlike the metrics, a span is made on the caller's thread, as the
/// attempt ends (so that it has the caller's context): tracing costs each
/// attempt what the tracer costs (its sampler, a span, its processor). It
/// also turns on the registry's histograms, which time the attempts.
///
/// A registry has one attempt hook: a second call replaces the first's, and
/// dropping either handle stops both.
///
/// # Examples
///
/// ```
/// use bulkhead_registry::{observe, Registry};
///
/// let registry = Registry::new();
/// // The program's SDK (opentelemetry_sdk, with an OTLP exporter) makes the
/// // tracer; `global` is a no-op until one is installed.
/// let spans = observe::export_attempt_spans(&registry, opentelemetry::global::tracer("bulkhead"));
/// // ... build pipelines and wrappers on `registry`, serve traffic ...
/// # drop(spans);
/// ```
pub fn export_attempt_spans<T>(registry: &Registry, tracer: T) -> AttemptSpans
where
    T: Tracer + Send + Sync + 'static,
{
    let hub = registry.telemetry().clone();
    hub.set_attempt_hook(Arc::new(Spans {
        tracer,
        clock: Arc::clone(registry.clock()),
    }));
    AttemptSpans { hub }
}

/// Spans of attempts being made ([`export_attempt_spans`]); they stop when
/// this handle is dropped.
#[must_use = "the spans stop when the handle is dropped"]
pub struct AttemptSpans {
    hub: TelemetryHub,
}

impl AttemptSpans {
    /// Stops making spans; the same as dropping the handle.
    pub fn stop(self) {}
}

impl Drop for AttemptSpans {
    fn drop(&mut self) {
        self.hub.clear_attempt_hook();
    }
}

impl fmt::Debug for AttemptSpans {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AttemptSpans").finish_non_exhaustive()
    }
}

/// The hook: a span of each attempt.
struct Spans<T> {
    tracer: T,
    /// The registry's clock, on which attempts are timed.
    clock: Arc<dyn Clock>,
}

impl<T> AttemptHook for Spans<T>
where
    T: Tracer + Send + Sync + 'static,
{
    fn attempt(&self, record: &AttemptRecord<'_>) {
        // The attempt's instants on the wall clock: as far before now.
        let (now, wall) = (self.clock.now(), SystemTime::now());
        let at = |instant: Instant| {
            wall.checked_sub(now.saturating_duration_since(instant))
                .unwrap_or(wall)
        };
        let outcome = record.outcome.label();
        let mut attributes = vec![
            KeyValue::new(INSTANCE, record.instance.to_owned()),
            KeyValue::new(ATTEMPT_NUMBER, i64::from(record.number)),
            KeyValue::new(OUTCOME, outcome),
        ];
        let failed = match record.outcome {
            Outcome::Success => false,
            Outcome::Rejected(_) => {
                attributes.push(KeyValue::new(REJECTION_KIND, outcome));
                attributes.push(KeyValue::new(ERROR_TYPE, outcome));
                true
            }
            _ => {
                attributes.push(KeyValue::new(ERROR_TYPE, "_OTHER"));
                true
            }
        };
        let mut span = self
            .tracer
            .span_builder(ATTEMPT_SPAN)
            .with_kind(SpanKind::Internal)
            .with_start_time(at(record.start))
            .with_attributes(attributes)
            .start_with_context(&self.tracer, &Context::current());
        if failed {
            span.set_status(Status::error(outcome));
        }
        span.end_with_timestamp(at(record.end));
    }
}
