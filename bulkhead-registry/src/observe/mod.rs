//! Watching a registry's policies: their events as
//! [`tracing`](https://docs.rs/tracing) events (feature `tracing`,
//! `trace_events`), their state as [`metrics`](https://docs.rs/metrics)
//! gauges and counters (feature `metrics`, `export_metrics`), and a live
//! page of it all, served by the application (feature `dashboard`,
//! `dashboard`: see the module `dashboard`).
//!
//! ```
//! use std::time::Duration;
//! use bulkhead_registry::{observe, Registry};
//!
//! let registry = Registry::new();
//! # #[cfg(feature = "tracing")]
//! let tracing = observe::trace_events(&registry)?;
//! # #[cfg(feature = "metrics")]
//! let metrics = observe::export_metrics(&registry, Duration::from_secs(5))?;
//! // ... build pipelines and wrappers on `registry`, serve traffic ...
//! // Each observer stops when its handle is dropped.
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! A bulkhead nobody watches fails silently: its rejections look like
//! ordinary errors. Four numbers tell how one is doing: the calls in flight
//! against its limit, the calls waiting, the rejections per interval and the
//! latency of admitted calls. The first three are always exported; the
//! fourth (as a total hold time and a count of completed calls) when the
//! registry tracks sizing (`Registry::builder().track_sizing(true)`), since
//! timing calls costs two clock reads each.
//!
//! # How observers run
//!
//! Each observer is a thread of its own, fed by a subscription to the
//! registry's events ([`Registry::subscribe`](crate::Registry::subscribe));
//! no async runtime is needed. It stops when its [`ObserverHandle`] is
//! dropped.
//!
//! - **Admitted calls cost nothing more.** They publish no event, and no
//!   metric is touched on the call path: gauges are sampled from
//!   [`Registry::snapshot`](crate::Registry::snapshot) every interval.
//! - **Observers never slow callers down.** A call that publishes an event
//!   (a rejection, a retry, ...) puts it in a bounded buffer and returns; it
//!   never waits for `tracing` or a metrics recorder. A slow subscriber or
//!   recorder makes the observer fall behind, and one more than the
//!   registry's `event_capacity` (1024 by default) behind loses the oldest
//!   events: it counts them ([`ObserverHandle::lost`]), reports them (a
//!   `warn` event, the counter `bulkhead_observer_events_lost_total`), and
//!   carries on. A panic in a subscriber or recorder ends the observer's
//!   thread ([`ObserverHandle::is_running`]), never a caller's.
//! - **The price of that** is that events are emitted after the fact, from
//!   another thread: a `tracing` event does not sit in the span of the call
//!   that caused it (its fields name the instance instead), and an event
//!   counter may undercount if events were lost. Counters that come from a
//!   sample are exact.
//!
//! # Tracing
//!
//! `trace_events` emits one event per policy event, with target
//! `bulkhead` (filter with `RUST_LOG=bulkhead=debug`) and the fields
//! `instance` (the instance id), `policy`, `kind` and the kind's own fields.
//! Events about single calls are `DEBUG`, since under load there may be one
//! per call (rates belong in metrics); changes of state are `INFO`, and a
//! circuit breaker opening is `WARN`.
//!
//! | `policy` | `kind` | level | other fields |
//! |---|---|---|---|
//! | `bulkhead` | `rejected` | DEBUG | `max_concurrent`, `waited` (whether the call waited before it was rejected) |
//! | `bulkhead` | `key_rejected` | DEBUG | `reason` (`key_full`, `global_full`, `too_many_keys`: a new key past `max_keys`, whose message starts with REG-017), `limit` (the key's `per_key`, `max_concurrent` or `max_keys`), `waited` |
//! | `bulkhead` | `limit_changed` | INFO | `from`, `to` |
//! | `retry` | `retrying` | DEBUG | `attempt` (the one that failed, from 1), `delay` (before the next), `cause` |
//! | `retry` | `succeeded` | DEBUG | `attempts` |
//! | `retry` | `exhausted` | DEBUG | `attempts`, `cause` |
//! | `retry` | `aborted` | DEBUG | `attempts`, `cause` |
//! | `retry` | `budget_exhausted` | DEBUG | `attempts`, `cause` (of the failure the budget left unretried) |
//! | `retry` | `gave_up` | DEBUG | `attempts`, `cause`, `reason` (`Deadline`, or `Pushback` with the wait asked for) |
//! | `circuit_breaker` | `state_transition` | WARN to `open` or `forced_open`, else INFO | `from`, `to` |
//! | `circuit_breaker` | `rejected` | DEBUG | `state` |
//! | `timeout` | `timed_out` | DEBUG | `timeout` |
//! | `timeout` | `overrun` | DEBUG | `timeout`, `took` |
//! | `rate_limiter` | `rejected` | DEBUG | `limit_for_period` |
//! | `hedge` | `started` | DEBUG | `hedge` (its number in the call, from 1) |
//! | `hedge` | `skipped` | DEBUG | `hedge`, `cause` (the rejection that refused it) |
//! | `hedge` | `budget_exhausted` | DEBUG | `hedge` |
//! | `hedge` | `won` | DEBUG | `hedge` |
//! | `fallback` | `used` | DEBUG | `cause` |
//! | `chaos` | `fault_injected` | DEBUG | none |
//! | `chaos` | `panic_injected` | DEBUG | none |
//! | `chaos` | `latency_injected` | DEBUG | `latency` |
//! | (none) | `fleet_share_changed` | WARN when `reason` is `unreachable`, else INFO | `resource` (instead of `instance`), `reason` (`joined`, `rebalanced`, `unreachable`, `rejoined`, `left`), `from`, `to`, `target`, `budget`, `processes` |
//! | (none) | `events_lost` | WARN | `lost` (how many; no `instance`) |
//!
//! Durations are recorded with their `Debug` form (`250ms`). `cause` is
//! `error` for the call's own error, else the rejection kind as `abort_on`
//! lists name it (`BulkheadFull`, `CircuitOpen`, `Timeout`, `RateLimited`,
//! `Injected`).
//! Circuit states are `closed`, `open`, `half_open`, `forced_open`,
//! `disabled`. Every event also has a short `message`.
//!
//! # Metrics
//!
//! `export_metrics` exports these, each labelled with `instance` (the
//! instance id) and the labels listed. A gauge comes from a sample of the
//! registry's snapshot, taken every interval; a counter from the events as
//! they come ("event"), or from a sample when the policy counts it exactly
//! ("sample"). Counters are registered (at 0) with the first sample that
//! shows their instance, except those with more labels, which appear with
//! their first event.
//!
//! | metric | type | unit | labels | source | what |
//! |---|---|---|---|---|---|
//! | `bulkhead_in_flight` | gauge | count | `instance` | sample | calls holding a slot |
//! | `bulkhead_max_concurrent` | gauge | count | `instance` | sample, and `limit_changed` events | the limit in force (an adaptive bulkhead's, as its algorithm set it) |
//! | `bulkhead_waiting` | gauge | count | `instance` | sample | calls waiting for a slot (0 when `max_wait` is zero) |
//! | `bulkhead_held` | gauge | count | `instance`, `priority` | sample | calls holding a slot, by class (`sheddable`, `normal`, `high`, `critical`; calls nobody gave a class count for the bulkhead's `priority`) |
//! | `bulkhead_rejections_total` | counter | count | `instance` | event | calls rejected with `BulkheadFull` (shed calls included) |
//! | `bulkhead_shed_total` | counter | count | `instance`, `priority` | event | calls refused by their class's share of the limit (`shed_at`), by class |
//! | `bulkhead_limit_changes_total` | counter | count | `instance` | event | changes of the limit at run time |
//! | `bulkhead_admitted_total` | counter | count | `instance` | sample, only when the registry tracks sizing | calls that got a slot |
//! | `bulkhead_abandoned_total` | counter | count | `instance` | sample, only when the registry tracks sizing | calls that stopped waiting for a slot before they got one: cut short by a timeout, or an async call dropped while it waited |
//! | `bulkhead_completed_total` | counter | count | `instance` | sample, only when the registry tracks sizing | admitted calls that gave their slot back |
//! | `bulkhead_hold_microseconds_total` | counter | microseconds | `instance` | sample, only when the registry tracks sizing | how long completed calls held their slot, in total: its rate over the rate of `bulkhead_completed_total` is the mean latency of admitted calls |
//! | `bulkhead_adaptive_ceiling` | gauge | count | `instance` | sample, only for adaptive bulkheads | the most its algorithm may allow (`max_concurrent`) |
//! | `bulkhead_adaptive_no_load_seconds` | gauge | seconds | `instance` | sample, only for adaptive bulkheads, once measured | its estimate of a call's latency at low concurrency |
//! | `bulkhead_adaptive_recent_latency_seconds` | gauge | seconds | `instance` | sample, only for adaptive bulkheads | the mean latency of the successful calls of its last window |
//! | `bulkhead_adaptive_errors_total` | counter | count | `instance` | sample, only for adaptive bulkheads | calls that returned an error (counted, not a congestion signal by default) |
//! | `bulkhead_adaptive_drops_total` | counter | count | `instance` | sample, only for adaptive bulkheads | calls dropped before they ended (timed out, cancelled) |
//! | `bulkhead_keyed_in_flight` | gauge | count | `instance` | sample, only for keyed bulkheads | calls holding a slot, all keys together |
//! | `bulkhead_keyed_waiting` | gauge | count | `instance` | sample, only for keyed bulkheads | calls waiting for a slot |
//! | `bulkhead_keyed_max_concurrent` | gauge | count | `instance` | sample, only for keyed bulkheads | the limit of all keys together |
//! | `bulkhead_keyed_keys` | gauge | count | `instance` | sample, only for keyed bulkheads | live keys |
//! | `bulkhead_keyed_key_in_flight` | gauge | count | `instance`, `key` | sample, only for keyed bulkheads | calls holding a slot, for each of the keys holding the most (the registry's `snapshot_top_keys`, 10 by default) and the rest together as `key="_other"`; a key that leaves the top list is set to 0; at most 100 distinct keys are ever labelled per keyed bulkhead (busy keys seen after that count in `_other`), so tenants coming and going never grow the series without bound |
//! | `bulkhead_keyed_rejections_total` | counter | count | `instance`, `reason` | event | calls a keyed bulkhead rejected with `BulkheadFull`, by `reason`: `key_full`, `global_full` or `too_many_keys` (REG-017); not in `bulkhead_rejections_total` |
//! | `bulkhead_retries_total` | counter | count | `instance`, `cause` | event | failed attempts followed by another; `cause` as in the tracing fields |
//! | `bulkhead_retry_calls_total` | counter | count | `instance`, `outcome` | event | calls that ended after a failed attempt: `outcome` is `succeeded_after_retry`, `exhausted`, `aborted`, `budget_exhausted` or `gave_up` |
//! | `bulkhead_retry_budget_available` | gauge | count | `instance` | sample, only for a retry with a budget | retries and hedges the budget allows now |
//! | `bulkhead_circuit_breaker_state` | gauge | count | `instance`, `state` | sample, and transitions | 1 for the current state, 0 for the four others |
//! | `bulkhead_circuit_breaker_transitions_total` | counter | count | `instance`, `from`, `to` | event | state transitions |
//! | `bulkhead_circuit_breaker_rejections_total` | counter | count | `instance` | sample | calls not permitted (open, or no trial call left) |
//! | `bulkhead_timeouts_total` | counter | count | `instance` | event | calls that timed out (an async call dropped, a sync wait cut short) |
//! | `bulkhead_timeout_overruns_total` | counter | count | `instance` | event | sync calls that ran past their timeout and kept their result |
//! | `bulkhead_rate_limiter_rejections_total` | counter | count | `instance` | event | calls that got no permit within `max_wait` |
//! | `bulkhead_rate_limiter_available_permits` | gauge | count | `instance` | sample | permits left in this period (negative while reserved ahead) |
//! | `bulkhead_rate_limiter_waiting` | gauge | count | `instance` | sample | calls waiting for a reserved permit |
//! | `bulkhead_hedges_total` | counter | count | `instance`, `outcome` | event | hedges due: `outcome` is `started`, `skipped` (refused by a policy), `budget_exhausted` (not made), and `won` counts again those that answered first |
//! | `bulkhead_fallbacks_total` | counter | count | `instance`, `cause` | event | calls the fallback answered; `cause` as in the tracing fields |
//! | `bulkhead_chaos_enabled` | gauge | count | `instance` | sample | 1 while the chaos policy injects, 0 while it is disabled |
//! | `bulkhead_chaos_injections_total` | counter | count | `instance`, `kind` | event | what the chaos policy injected: `kind` is `fault`, `panic` or `latency` |
//! | `bulkhead_chaos_latency_microseconds_total` | counter | microseconds | `instance` | event | the latency the chaos policy injected, in total |
//! | `bulkhead_observer_events_lost_total` | counter | count | none | event | events the exporter lost by falling behind: the event counters undercount by as much |
//! | `bulkhead_call_duration_seconds` | histogram | seconds | `instance`, `outcome` | histogram | calls through the instance's policies (a `Pipeline`, an attribute's wrapper), from their start to their result: every attempt and the retry's delays; `outcome` is `success`, `error` (the call's own), or the rejection of the last attempt: `bulkhead_full` (a keyed pipeline's key refusal too), `circuit_open`, `timeout`, `rate_limited`, `injected`, `deadline_exceeded`; the outcome before any fallback (a call the fallback answered keeps its last attempt's) |
//! | `bulkhead_attempt_duration_seconds` | histogram | seconds | `instance`, `outcome` | histogram | each attempt of those calls (a round of hedges counts as one), from before the circuit breaker to its result, waits for a rate-limiter permit and a bulkhead slot included; `outcome` as above |
//! | `bulkhead_slot_wait_seconds` | histogram | seconds | `instance`, `outcome` | histogram | how long those calls waited for a slot of their bulkhead: a call admitted or refused at once adds a sample to the first bucket (0 for a sync call, under 1.024 µs for an async one; replayed to the recorder as 1.024 µs); `outcome` is `admitted`, `rejected` (full, at once or after `max_wait`) or `abandoned` (a timeout or the call's deadline ended the wait, or the caller dropped an async call waiting under a timeout); a keyed pipeline's wait for its key's slot is not one of them (it is in the attempt) |
//!
//! With a fleet crate (the facade's feature `redis`), each fleet resource
//! adds these, labelled with
//! `resource` (see `Registry::fleet_resource`):
//!
//! | metric | type | unit | labels | source | what |
//! |---|---|---|---|---|---|
//! | `bulkhead_fleet_share` | gauge | count | `resource` | sample | the slots this process's bulkheads on the resource may hold together now |
//! | `bulkhead_fleet_target` | gauge | count | `resource` | sample | the share the fleet's allocation aims at for this process |
//! | `bulkhead_fleet_budget` | gauge | count | `resource` | sample | the fleet's budget |
//! | `bulkhead_fleet_processes` | gauge | count | `resource` | sample | the processes sharing it |
//! | `bulkhead_fleet_state` | gauge | count | `resource`, `state` | sample | 1 for this process's state (`joining`, `joined`, `unreachable`, `left`), 0 for the others |
//! | `bulkhead_fleet_renewals_total` | counter | count | `resource` | sample | leases renewed |
//! | `bulkhead_fleet_failures_total` | counter | count | `resource` | sample | requests to Redis that failed or timed out |
//! | `bulkhead_fleet_share_changes_total` | counter | count | `resource`, `reason` | event | changes of the share, by reason |
//!
//! ## Histograms
//!
//! The three histograms (source "histogram" above) are recorded by the
//! registry's compositions of policies (`Pipeline`, the wrappers of
//! `#[resilient]` and of functions with a body, the tower `PipelineLayer`),
//! labelled with their bulkhead's instance id (or the composition's id if
//! it has no bulkhead), and by the tower `BulkheadLayer` around a bulkhead
//! of a registry (a request from its arrival to its answer is a call of
//! one attempt, `success` or `error` as the inner service answered, and
//! its wait for the slot); a bulkhead used on its own (`try_enter`,
//! `enter_async`) and the `KeyedBulkheadLayer` record none. They cost nothing until an exporter asks
//! for them: `export_metrics` turns them on for the whole registry
//! ([`Registry::telemetry`](crate::Registry::telemetry)). From then on a
//! call reads the precise clock at its start and at each attempt's end (a
//! retry's attempt at its start too), and around its wait for a slot (a
//! sync call only when it has to wait, an async one always), and adds each
//! sample to a bucketed histogram of atomics: no lock (but a read lock
//! per attempt while an attempt hook is set), no allocation, no call to
//! the recorder on the call path.
//!
//! Every interval the exporter replays each histogram's new samples into
//! the recorder's histogram: each of our buckets (two per power of two of
//! nanoseconds, from 1 µs to 73 minutes; see
//! [`HistogramSnapshot`](bulkhead_core::HistogramSnapshot)) as that many
//! samples of its representative value, the geometric middle of its
//! bounds, so a recorded value is within a factor of 1.23 of the real
//! one. The recorder's own configuration decides what it keeps of them:
//! `metrics-exporter-prometheus` renders a summary unless given buckets
//! (`PrometheusBuilder::set_buckets`, as the axum example does), and then
//! `_bucket`, `_sum` and `_count` series Prometheus's
//! `histogram_quantile` reads. A cancelled async call (its future dropped
//! by its caller) records no call or attempt; under a timeout, a wait for
//! a slot it was in is recorded as `abandoned`.

mod names;
// The observer thread runs the exporters; the dashboard samples on the
// runtime serving it.
#[cfg_attr(not(any(feature = "metrics", feature = "tracing")), allow(dead_code))]
mod observer;

#[cfg(feature = "dashboard")]
#[cfg_attr(bulkhead_docsrs, doc(cfg(feature = "dashboard")))]
pub mod dashboard;
#[cfg(feature = "metrics")]
mod metrics;
#[cfg(feature = "tracing")]
mod tracing;

#[cfg(feature = "dashboard")]
#[cfg_attr(bulkhead_docsrs, doc(cfg(feature = "dashboard")))]
pub use self::dashboard::{Dashboard, dashboard};
#[cfg(feature = "metrics")]
#[cfg_attr(bulkhead_docsrs, doc(cfg(feature = "metrics")))]
pub use self::metrics::{export_metrics, export_metrics_to};
#[cfg(feature = "tracing")]
#[cfg_attr(bulkhead_docsrs, doc(cfg(feature = "tracing")))]
pub use self::tracing::trace_events;
pub use observer::ObserverHandle;

#[cfg(test)]
mod tests {
    use super::ObserverHandle;

    #[test]
    fn bounds() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<ObserverHandle>();
    }
}
