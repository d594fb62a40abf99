//! Watching the policies: subscriptions to one instance's events
//! (`observe_events`), the histograms of call, attempt and wait
//! durations (`histograms`), and, with their features, the export of policy
//! state and events as `metrics` (`observe_metrics`, feature `metrics`)
//! and as `tracing` events (`observe_tracing`, feature `tracing`), and as
//! OpenTelemetry instruments (`observe_otel`, feature `opentelemetry`). A module
//! whose feature is off is left out, so the binary builds with any set of
//! features.

mod histograms;
mod observe_events;
#[cfg(feature = "metrics")]
mod observe_metrics;
#[cfg(feature = "opentelemetry")]
mod observe_otel;
#[cfg(feature = "tracing")]
mod observe_tracing;
