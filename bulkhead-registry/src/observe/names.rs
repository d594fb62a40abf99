//! How observers name states and causes, the same in `tracing` fields and
//! metric labels.

use bulkhead_core::{CircuitState, RejectionKind};

/// Every circuit state, for the state gauge.
#[cfg(any(feature = "metrics", feature = "opentelemetry"))]
pub(crate) const CIRCUIT_STATES: [CircuitState; 5] = [
    CircuitState::Closed,
    CircuitState::Open,
    CircuitState::HalfOpen,
    CircuitState::ForcedOpen,
    CircuitState::Disabled,
];

/// `closed`, `open`, `half_open`, `forced_open` or `disabled`.
pub(crate) fn circuit_state(state: CircuitState) -> &'static str {
    match state {
        CircuitState::Closed => "closed",
        CircuitState::Open => "open",
        CircuitState::HalfOpen => "half_open",
        CircuitState::ForcedOpen => "forced_open",
        CircuitState::Disabled => "disabled",
        _ => "unknown",
    }
}

/// What failed an attempt: `error` for the call's own error, else the
/// rejection kind as `abort_on` lists name it (`BulkheadFull`,
/// `CircuitOpen`, `Timeout`, `RateLimited`).
#[cfg_attr(not(any(feature = "metrics", feature = "tracing")), allow(dead_code))]
pub(crate) fn cause(rejection: Option<RejectionKind>) -> &'static str {
    rejection.map_or("error", RejectionKind::name)
}

/// How a failed attempt or call ended, as OpenTelemetry attributes say it
/// (`resilience.outcome`) and the histograms label it: `error` for the
/// call's own error, else the rejection kind in snake case
/// (`bulkhead_full`, `circuit_open`, `timeout`, `rate_limited`, `injected`,
/// `deadline_exceeded`; `rejected` for a kind added after these).
#[cfg(feature = "opentelemetry")]
pub(crate) fn outcome(rejection: Option<RejectionKind>) -> &'static str {
    rejection
        .map_or(
            bulkhead_core::Outcome::Error,
            bulkhead_core::Outcome::Rejected,
        )
        .label()
}
