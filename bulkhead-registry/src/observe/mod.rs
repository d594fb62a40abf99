//! Watching a registry's policies: their events as
//! [`tracing`](https://docs.rs/tracing) events (feature `tracing`,
//! `trace_events`), their state as [`metrics`](https://docs.rs/metrics)
//! gauges and counters (feature `metrics`, `export_metrics`) or as
//! [OpenTelemetry](https://docs.rs/opentelemetry) instruments and spans
//! (feature `opentelemetry`, `export_opentelemetry`,
//! `export_attempt_spans`), and a live page of it all, served by the
//! application (feature `dashboard`, `dashboard`: see the module
//! `dashboard`).
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
//! # #[cfg(feature = "opentelemetry")]
//! let otel = observe::export_opentelemetry(&registry, &opentelemetry::global::meter("bulkhead"))?;
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
//!   [`Registry::snapshot`](crate::Registry::snapshot) every interval (by
//!   `export_metrics`) or at each collection of the OpenTelemetry SDK (by
//!   `export_opentelemetry`, whose SDK calls its instruments' callbacks).
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
//! | `bulkhead_call_duration_seconds` | histogram | seconds | `instance`, `outcome` | histogram | calls through the instance's policies (a `Pipeline`, an attribute's wrapper), from their start to their result: every attempt and the retry's delays; `outcome` is `success`, `error` (the call's own), or the rejection of the last attempt: `bulkhead_full` (a keyed pipeline's key refusal too), `circuit_open`, `timeout`, `rate_limited`, `injected`, `deadline_exceeded`, or `rejected` for a kind of rejection added after these; the outcome before any fallback (a call the fallback answered keeps its last attempt's) |
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
//! of a registry and the `KeyedBulkheadLayer` around a keyed one (a
//! request from its arrival to its answer is a call of one attempt,
//! `success` or `error` as the inner service answered, and its wait for
//! the slot, all keys together); a bulkhead used on its own (`try_enter`,
//! `enter_async`) records none. They cost nothing until an exporter asks
//! for them: `export_metrics` (as `export_opentelemetry`, the dashboard
//! and an attempt hook do) turns them on for the whole registry
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
//! (`PrometheusBuilder::set_buckets`, or `set_buckets_for_metric` as the
//! axum example does), and then
//! `_bucket`, `_sum` and `_count` series Prometheus's
//! `histogram_quantile` reads. A cancelled async call (its future dropped
//! by its caller) records no call or attempt; under a timeout, a wait for
//! a slot it was in is recorded as `abandoned`.
//!
//! # OpenTelemetry
//!
//! `export_opentelemetry` creates these instruments on the program's
//! `Meter`, named in the style of the OpenTelemetry semantic conventions
//! (which have no resilience conventions yet: these are a proposal).
//! Every one but the three histograms is observable, read at each of the
//! SDK's collections (the histograms are recorded into by the first
//! callback of each collection, with the samples taken since the one
//! before): what a snapshot shows is taken then (once per collection), event counts are
//! kept by the exporter's thread as events come, exact unless it lost some
//! (`resilience.observer.lost_events`). Each has the `metrics` exporter's
//! twin listed, the same series with the same sources and the same rules
//! (counters read 0 before their first event, at most 100 keys labelled per
//! keyed bulkhead), except that a key that leaves a keyed bulkhead's top
//! list is no longer reported (rather than set to 0). Attributes:
//!
//! - `resilience.instance`: the instance id (`resilience.fleet.resource`
//!   for a fleet resource's);
//! - `resilience.outcome`: how a failed attempt or call ended: `error` (its
//!   own error) or the rejection kind in snake case (`bulkhead_full`,
//!   `circuit_open`, `timeout`, `rate_limited`, `injected`,
//!   `deadline_exceeded`; `rejected` for a kind of rejection added after
//!   these), where `metrics` labels `cause` (`BulkheadFull`,
//!   ...);
//! - `resilience.retry.result`, `resilience.hedge.result`,
//!   `resilience.chaos.injection`, `resilience.keyed_bulkhead.reason`,
//!   `resilience.fleet.reason`: the values of the twin's `outcome`, `kind`
//!   or `reason`;
//! - `resilience.circuit_breaker.state` (and `previous_state` for a
//!   transition), `resilience.priority`, `resilience.keyed_bulkhead.key`,
//!   `resilience.fleet.state`: as the twin's labels.
//!
//! | instrument | type | unit | attributes | `metrics` twin | what |
//! |---|---|---|---|---|---|
//! | `resilience.bulkhead.in_flight` | UpDownCounter | `{call}` | `resilience.instance` | `bulkhead_in_flight` | Calls holding a slot of the bulkhead. |
//! | `resilience.bulkhead.limit` | UpDownCounter | `{slot}` | `resilience.instance` | `bulkhead_max_concurrent` | The bulkhead's limit in force (an adaptive bulkhead's, set by its algorithm). |
//! | `resilience.bulkhead.waiting` | UpDownCounter | `{call}` | `resilience.instance` | `bulkhead_waiting` | Calls waiting for a slot of the bulkhead. |
//! | `resilience.bulkhead.priority.in_flight` | UpDownCounter | `{call}` | `resilience.instance`, `resilience.priority` | `bulkhead_held` | Calls holding a slot of the bulkhead, by priority class. |
//! | `resilience.bulkhead.rejections` | Counter | `{call}` | `resilience.instance` | `bulkhead_rejections_total` | Calls the bulkhead rejected. |
//! | `resilience.bulkhead.shed` | Counter | `{call}` | `resilience.instance`, `resilience.priority` | `bulkhead_shed_total` | Calls the bulkhead refused by their class's share of the limit, by priority class. |
//! | `resilience.bulkhead.limit.changes` | Counter | `{change}` | `resilience.instance` | `bulkhead_limit_changes_total` | Changes of the bulkhead's limit. |
//! | `resilience.bulkhead.admitted` | Counter | `{call}` | `resilience.instance` | `bulkhead_admitted_total` | Calls that got a slot (when the registry tracks sizing). |
//! | `resilience.bulkhead.abandoned` | Counter | `{call}` | `resilience.instance` | `bulkhead_abandoned_total` | Calls that stopped waiting for a slot before they got one (when the registry tracks sizing). |
//! | `resilience.bulkhead.completed` | Counter | `{call}` | `resilience.instance` | `bulkhead_completed_total` | Admitted calls that gave their slot back (when the registry tracks sizing). |
//! | `resilience.bulkhead.hold_time` | Counter | `s` | `resilience.instance` | `bulkhead_hold_microseconds_total` | Time completed calls held their slot, in total (when the registry tracks sizing). |
//! | `resilience.bulkhead.adaptive.ceiling` | UpDownCounter | `{slot}` | `resilience.instance` | `bulkhead_adaptive_ceiling` | The most an adaptive bulkhead's algorithm may allow (its max_concurrent). |
//! | `resilience.bulkhead.adaptive.no_load_latency` | Gauge | `s` | `resilience.instance` | `bulkhead_adaptive_no_load_seconds` | An adaptive bulkhead's estimate of a call's latency at low concurrency. |
//! | `resilience.bulkhead.adaptive.recent_latency` | Gauge | `s` | `resilience.instance` | `bulkhead_adaptive_recent_latency_seconds` | The mean latency of an adaptive bulkhead's successful calls in its last window. |
//! | `resilience.bulkhead.adaptive.errors` | Counter | `{call}` | `resilience.instance` | `bulkhead_adaptive_errors_total` | Calls of an adaptive bulkhead that returned an error. |
//! | `resilience.bulkhead.adaptive.drops` | Counter | `{call}` | `resilience.instance` | `bulkhead_adaptive_drops_total` | Calls of an adaptive bulkhead dropped before they ended (timed out, cancelled). |
//! | `resilience.keyed_bulkhead.in_flight` | UpDownCounter | `{call}` | `resilience.instance` | `bulkhead_keyed_in_flight` | Calls holding a slot of the keyed bulkhead, all keys together. |
//! | `resilience.keyed_bulkhead.waiting` | UpDownCounter | `{call}` | `resilience.instance` | `bulkhead_keyed_waiting` | Calls waiting for a slot of the keyed bulkhead. |
//! | `resilience.keyed_bulkhead.limit` | UpDownCounter | `{slot}` | `resilience.instance` | `bulkhead_keyed_max_concurrent` | The keyed bulkhead's limit of all keys together. |
//! | `resilience.keyed_bulkhead.keys` | UpDownCounter | `{key}` | `resilience.instance` | `bulkhead_keyed_keys` | The keyed bulkhead's live keys. |
//! | `resilience.keyed_bulkhead.key.in_flight` | UpDownCounter | `{call}` | `resilience.instance`, `resilience.keyed_bulkhead.key` | `bulkhead_keyed_key_in_flight` | Calls holding a slot of the keyed bulkhead, for its busiest keys, the others as _other. |
//! | `resilience.keyed_bulkhead.rejections` | Counter | `{call}` | `resilience.instance`, `resilience.keyed_bulkhead.reason` | `bulkhead_keyed_rejections_total` | Calls the keyed bulkhead rejected, by reason: key_full, global_full, too_many_keys. |
//! | `resilience.retry.retries` | Counter | `{retry}` | `resilience.instance`, `resilience.outcome` | `bulkhead_retries_total` | Failed attempts followed by another, by how they failed. |
//! | `resilience.retry.calls` | Counter | `{call}` | `resilience.instance`, `resilience.retry.result` | `bulkhead_retry_calls_total` | Calls that succeeded after retrying, exhausted their attempts or retry budget, were aborted, or gave up. |
//! | `resilience.retry.budget.available` | UpDownCounter | `{retry}` | `resilience.instance` | `bulkhead_retry_budget_available` | Retries and hedges the retry budget allows now. |
//! | `resilience.circuit_breaker.state` | UpDownCounter | `1` | `resilience.instance`, `resilience.circuit_breaker.state` | `bulkhead_circuit_breaker_state` | 1 for the circuit breaker's current state, 0 for the others. |
//! | `resilience.circuit_breaker.transitions` | Counter | `{transition}` | `resilience.instance`, `resilience.circuit_breaker.previous_state`, `resilience.circuit_breaker.state` | `bulkhead_circuit_breaker_transitions_total` | State transitions of the circuit breaker. |
//! | `resilience.circuit_breaker.rejections` | Counter | `{call}` | `resilience.instance` | `bulkhead_circuit_breaker_rejections_total` | Calls the circuit breaker did not permit. |
//! | `resilience.timeout.timeouts` | Counter | `{call}` | `resilience.instance` | `bulkhead_timeouts_total` | Calls that timed out. |
//! | `resilience.timeout.overruns` | Counter | `{call}` | `resilience.instance` | `bulkhead_timeout_overruns_total` | Sync calls that ran past their timeout (and kept their result). |
//! | `resilience.rate_limiter.rejections` | Counter | `{call}` | `resilience.instance` | `bulkhead_rate_limiter_rejections_total` | Calls the rate limiter rejected. |
//! | `resilience.rate_limiter.available_permits` | UpDownCounter | `{permit}` | `resilience.instance` | `bulkhead_rate_limiter_available_permits` | Permits left in the current period (negative while reserved ahead). |
//! | `resilience.rate_limiter.waiting` | UpDownCounter | `{call}` | `resilience.instance` | `bulkhead_rate_limiter_waiting` | Calls waiting for a reserved permit. |
//! | `resilience.hedge.hedges` | Counter | `{hedge}` | `resilience.instance`, `resilience.hedge.result` | `bulkhead_hedges_total` | Hedges due, by result: started, skipped, budget_exhausted; and those that won. |
//! | `resilience.fallback.calls` | Counter | `{call}` | `resilience.instance`, `resilience.outcome` | `bulkhead_fallbacks_total` | Calls the fallback answered, by how they failed. |
//! | `resilience.chaos.enabled` | Gauge | `1` | `resilience.instance` | `bulkhead_chaos_enabled` | 1 while the chaos policy injects faults and latency, 0 while it is disabled. |
//! | `resilience.chaos.injections` | Counter | `{injection}` | `resilience.instance`, `resilience.chaos.injection` | `bulkhead_chaos_injections_total` | What the chaos policy injected, by kind: fault, panic, latency. |
//! | `resilience.chaos.injected_latency` | Counter | `s` | `resilience.instance` | `bulkhead_chaos_latency_microseconds_total` | The latency the chaos policy injected, in total. |
//! | `resilience.observer.lost_events` | Counter | `{event}` | none | `bulkhead_observer_events_lost_total` | Events the exporter lost by falling behind; event counters undercount by as much. |
//! | `resilience.fleet.share` | UpDownCounter | `{slot}` | `resilience.fleet.resource` | `bulkhead_fleet_share` | The slots this process's bulkheads on the fleet resource may hold together. |
//! | `resilience.fleet.target` | UpDownCounter | `{slot}` | `resilience.fleet.resource` | `bulkhead_fleet_target` | The share the fleet's allocation aims at for this process. |
//! | `resilience.fleet.budget` | UpDownCounter | `{slot}` | `resilience.fleet.resource` | `bulkhead_fleet_budget` | The fleet's budget for the resource. |
//! | `resilience.fleet.processes` | UpDownCounter | `{process}` | `resilience.fleet.resource` | `bulkhead_fleet_processes` | The processes sharing the fleet resource. |
//! | `resilience.fleet.state` | UpDownCounter | `1` | `resilience.fleet.resource`, `resilience.fleet.state` | `bulkhead_fleet_state` | 1 for this process's state on the fleet resource, 0 for the others. |
//! | `resilience.fleet.renewals` | Counter | `{renewal}` | `resilience.fleet.resource` | `bulkhead_fleet_renewals_total` | Leases renewed. |
//! | `resilience.fleet.failures` | Counter | `{request}` | `resilience.fleet.resource` | `bulkhead_fleet_failures_total` | Requests to Redis that failed or timed out. |
//! | `resilience.fleet.share.changes` | Counter | `{change}` | `resilience.fleet.resource`, `resilience.fleet.reason` | `bulkhead_fleet_share_changes_total` | Changes of the share, by reason. |
//! | `resilience.call.duration` | Histogram | `s` | `resilience.instance`, `resilience.outcome` | `bulkhead_call_duration_seconds` | Calls through the instance's policies, from start to result (every attempt and retry delay); `resilience.outcome` is `success`, `error` or the last attempt's rejection kind. |
//! | `resilience.attempt.duration` | Histogram | `s` | `resilience.instance`, `resilience.outcome` | `bulkhead_attempt_duration_seconds` | Each attempt of those calls; `resilience.outcome` as above. |
//! | `resilience.bulkhead.slot.wait` | Histogram | `s` | `resilience.instance`, `resilience.outcome` | `bulkhead_slot_wait_seconds` | Waits for a slot of the instance's bulkhead; `resilience.outcome` is `admitted`, `rejected` or `abandoned`. |
//!
//! The histograms are those of the `metrics` exporter (see *Histograms*
//! above; `export_opentelemetry` turns them on too). Each collection
//! records what every one of their buckets gained since the previous
//! collection into a `Histogram<f64>` whose boundaries are the registry's
//! own bucket bounds: bucket counts, count and sum are exact (the sum to a
//! float's precision), at the price of one `record` per call of the
//! interval (about 100 ns each, on the collecting thread). The SDK cannot
//! take the buckets as they are: the Rust API has no observable histogram
//! and its SDK no `MetricProducer`.
//!
//! ## Spans
//!
//! `export_attempt_spans(&registry, tracer)` makes a span
//! `resilience.attempt` (kind internal) of each attempt of the calls
//! through the registry's compositions, a child of the caller's current
//! context, from the attempt's start (before the circuit breaker) to its
//! end, with the attributes:
//!
//! | attribute | when | value |
//! |---|---|---|
//! | `resilience.instance` | always | the composition's instance id, as the histograms' |
//! | `resilience.attempt.number` | always | the attempt's number in its call, from 1 |
//! | `resilience.outcome` | always | `success`, `error`, or the rejection kind in snake case |
//! | `resilience.rejection.kind` | a policy refused the attempt | why: `bulkhead_full`, `circuit_open`, `timeout`, `rate_limited`, `injected`, `deadline_exceeded` (`rejected` for a kind added after these) |
//! | `error.type` | the attempt failed | the rejection kind, or `_OTHER` for the call's own error |
//!
//! A failed attempt's status is `Error` (its description the outcome). The
//! span is made on the caller's thread as the attempt ends: unlike the
//! metrics, tracing costs each attempt what the tracer costs.

mod names;
// The observer thread runs the exporters; the dashboard samples on the
// runtime serving it.
#[cfg_attr(
    not(any(feature = "metrics", feature = "tracing", feature = "opentelemetry")),
    allow(dead_code)
)]
mod observer;

#[cfg(feature = "dashboard")]
#[cfg_attr(bulkhead_docsrs, doc(cfg(feature = "dashboard")))]
pub mod dashboard;
#[cfg(feature = "metrics")]
mod metrics;
#[cfg(feature = "opentelemetry")]
mod otel;
#[cfg(feature = "tracing")]
mod tracing;

#[cfg(feature = "dashboard")]
#[cfg_attr(bulkhead_docsrs, doc(cfg(feature = "dashboard")))]
pub use self::dashboard::{Dashboard, dashboard};
#[cfg(feature = "metrics")]
#[cfg_attr(bulkhead_docsrs, doc(cfg(feature = "metrics")))]
pub use self::metrics::{export_metrics, export_metrics_to};
#[cfg(feature = "opentelemetry")]
#[cfg_attr(bulkhead_docsrs, doc(cfg(feature = "opentelemetry")))]
pub use self::otel::{AttemptSpans, export_attempt_spans, export_opentelemetry};
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
