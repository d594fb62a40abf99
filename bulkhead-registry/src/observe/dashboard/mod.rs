//! A live page of a registry's policies (feature `dashboard`), as an axum
//! [`Router`] to nest in an application: [`dashboard`], or [`Dashboard`] to
//! set its interval.
//!
//! ```
//! use axum::Router;
//! use bulkhead_registry::{Registry, observe};
//!
//! let registry = Registry::new();
//! // ... build pipelines and wrappers on `registry` ...
//! let app: Router = Router::new().nest("/dashboard", observe::dashboard(&registry));
//! # let _ = app;
//! ```
//!
//! The router has three routes, relative to where it is nested:
//!
//! | route | what |
//! |---|---|
//! | `GET /` | the page: one HTML document, its CSS and script inline; it loads nothing else, from the network or the application, and its `Content-Security-Policy` header forbids the browser any other load: `default-src 'none'; script-src 'sha256-<its script's hash>'; style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'` (no other inline script or event handler runs) (its only connections, to its stream, are on its own origin) |
//! | `GET /events` | the stream the page reads: server-sent events, one `snapshot` event each interval (1 s by default), its `data` the JSON below, its `id` the sample's `seq`; the first event of a stream also sets the browser's `retry` delay |
//! | `GET /snapshot.json` | one sample, the same JSON (its rates `null`) |
//!
//! The page shows, for every instance: a bulkhead's calls in flight against
//! its limit, its waiting calls, its refusals per second, its limit over
//! time (a chart of the last 300 samples the page has seen, five minutes
//! at the default interval, which is how an adaptive limit moves), its calls held and shed by priority class; a
//! keyed bulkhead's totals and busiest keys; a circuit breaker's state and
//! refusals; a rate limiter's permits and refusals; a fleet resource's
//! share. Per class, the refusals shown are the calls *shed*, refused by
//! their class's share of the limit (key `shed_at`), as the snapshot counts
//! them (`classes[c].shed`); a call refused because the bulkhead was full
//! is in the bulkhead's refusals per second, not in its class's (the
//! bulkhead does not count those by class: the refusal of a full bulkhead
//! does not read the call's class), and the table's caption says so.
//! When the stream breaks, the page says it is reconnecting, keeps
//! what it has drawn, and goes on when a stream answers again (the
//! browser's `EventSource` retries on its own; the page opens a new one if
//! the browser gives up, after an error status for instance). A stream
//! that stays open but sends no sample for three intervals and a second
//! (since it opened or last sent one) is taken as broken too: the page
//! says it is reconnecting, closes it and opens a new one (again after
//! each such silence). A stream the browser is reopening is left to it,
//! for the [`retry`](Dashboard::retry) delay, however long.
//! Every value sits in an element with `data-instance` and `data-field`
//! attributes (`[data-instance="checkout"][data-field="in_flight"]`), for
//! scripts and tests.
//!
//! # The JSON
//!
//! ```json
//! {
//!   "seq": 42, "time": 1764860000000, "interval_ms": 1000.0, "events_missed": 0,
//!   "bulkheads": [{
//!     "instance": "checkout", "in_flight": 8, "limit": 8, "waiting": 3,
//!     "available": 0, "reserved": 8, "borrowed": 0, "max_wait_ms": 100.0,
//!     "enabled": true, "rejected_per_sec": 12.0,
//!     "traffic": null, "adaptive": null, "latency": null,
//!     "classes": [{"class": "sheddable", "threshold": 4, "held": 0,
//!                  "beyond_share": 0, "shed_total": 0, "shed_per_sec": 0.0}, ...]
//!   }],
//!   "keyed_bulkheads": [{"instance": "tenants", "in_flight": 5, "limit": 64,
//!     "waiting": 0, "per_key": 4, "keys": 3, "busy_keys": 2, "max_keys": 10000,
//!     "refused_keys": 0, "rejected_per_sec": 0.0,
//!     "top": [{"key": "acme", "in_flight": 4, "waiting": 0, "limit": 4}]}],
//!   "circuit_breakers": [{"instance": "users", "state": "closed",
//!     "failure_rate": 12.5, "slow_call_rate": 0.0, "failure_rate_threshold": 50.0,
//!     "buffered_calls": 16, "failed_calls": 2, "not_permitted_total": 0,
//!     "rejected_per_sec": 0.0}],
//!   "rate_limiters": [{"instance": "api", "available_permits": 7,
//!     "limit_for_period": 10, "refresh_period_ms": 1000.0, "waiting": 0,
//!     "rejected_per_sec": 0.0}],
//!   "fleets": [{"resource": "db", "state": "joined", "share": 20, "target": 20,
//!     "budget": 60, "processes": 3, "limits": 20, "in_flight": 4}]
//! }
//! ```
//!
//! Every field but the rates is the registry's snapshot
//! ([`Registry::snapshot`](crate::Registry::snapshot)) at the time of the
//! sample: `in_flight`, `limit` and `waiting` are a bulkhead's
//! `concurrent_calls`, `max_concurrent` and `waiting_calls`; `traffic` is
//! `null` unless the registry tracks sizing, else `{"admitted", "rejected",
//! "abandoned", "completed", "mean_hold_ms"}`; `adaptive` is `null` unless
//! the bulkhead is adaptive, else `{"algorithm", "floor", "ceiling",
//! "limit", "no_load_ms", "recent_ms", "probing"}`; durations are in milliseconds; `time` is the
//! Unix time in milliseconds; `seq` grows by one with every sample the
//! router takes, whichever client it is for. `latency` is the median and
//! 99th percentile of the durations of the calls through the instance's
//! policies since the previous sample, and their rate
//! (`{"p50_ms": 1.2, "p99_ms": 8.4, "calls_per_sec": 340.0}`, from the
//! registry's histograms, [`Registry::telemetry`](crate::Registry::telemetry),
//! which the dashboard turns on); `null` on a stream's first sample, or
//! when no call through a `Pipeline` or a wrapper on the instance ended
//! since the previous one.
//!
//! # Rates
//!
//! Each client of `/events` has its own subscription to the registry's
//! events ([`Registry::subscribe`](crate::Registry::subscribe)) and its own
//! previous sample, and a rate covers the time between its samples, on the
//! registry's clock: `null` in the first event of a stream and whenever the
//! clock did not move, and a rate from a counter is also `null` on that
//! counter's first reading (an instance that appeared since the previous
//! sample). A bulkhead's `rejected_per_sec` (its calls refused
//! as full, shed calls included) comes from its `traffic` counter when the
//! registry tracks sizing, else from its `Rejected` and `Shed` events,
//! which undercount if the client fell more than the registry's
//! `event_capacity` behind (`events_missed` says by how much). A circuit
//! breaker's comes from its `not_permitted_calls` counter, a class's
//! `shed_per_sec` from its `shed` counter; a keyed bulkhead's and a rate
//! limiter's from their events.
//!
//! Admitted calls cost nothing more while a page is open: samples read the
//! snapshot. While a stream is open (as while any subscriber is, such as
//! the exporters), refusals and the other events are published to it, a
//! cost on those calls only; a registry nobody subscribes to builds no
//! event.
//!
//! # Mounting
//!
//! The router has no state of its own to give: nest it in a `Router<()>`, or
//! in an application's `Router<S>` as `dashboard(&registry).with_state(())`
//! (which turns a `Router<()>` into a `Router<S>`). Nested at `/dashboard`,
//! the page is `/dashboard` (axum's `nest` does not route `/dashboard/`);
//! the page finds its stream from its own address either way. Behind a
//! proxy, the stream needs its buffering off (the response says
//! `X-Accel-Buffering: no` for nginx) and a read timeout longer than the
//! interval. Its samples are taken
//! on the runtime serving it; no thread is started. It serves whoever can
//! reach it: instance ids, keys and fleet names are visible to them, so
//! mount it where the application's other operator pages are, behind the
//! same authentication.

mod sample;
#[cfg(test)]
mod tests;

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderName, header};
use axum::response::sse::{Event, Sse};
use axum::response::{Html, IntoResponse};
use axum::routing::get;
use futures_util::stream;
use tokio::time::MissedTickBehavior;

use crate::registry::Registry;
use sample::Sampler;

/// The page's script, as its `<script>` element holds it (what its hash in
/// [`CONTENT_SECURITY_POLICY`] is of).
macro_rules! script {
    () => {
        concat!("\n", include_str!("page.js"))
    };
}

/// The text of the page's `<script>` element.
#[cfg(test)]
const SCRIPT: &str = script!();

/// The page: its HTML, then its script.
const PAGE: &str = concat!(
    include_str!("page.html"),
    "<script>",
    script!(),
    "</script>\n</body>\n</html>\n"
);

/// The default time between two samples of `/events`.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);

/// The router of the dashboard page for `registry`, sampling it every second
/// ([`DEFAULT_INTERVAL`]); see [the module](self).
///
/// # Examples
///
/// ```
/// use axum::Router;
/// use bulkhead_registry::{Registry, observe};
///
/// let registry = Registry::new();
/// let app: Router = Router::new().nest("/dashboard", observe::dashboard(&registry));
/// # let _ = app;
/// ```
pub fn dashboard(registry: &Registry) -> Router {
    Dashboard::new(registry).router()
}

/// The dashboard's settings, then its [`router`](Dashboard::router).
///
/// ```
/// use std::time::Duration;
/// use axum::Router;
/// use bulkhead_registry::{Registry, observe::Dashboard};
///
/// let registry = Registry::new();
/// let page = Dashboard::new(&registry)
///     .interval(Duration::from_millis(250))
///     .router();
/// let app: Router = Router::new().nest("/bulkheads", page);
/// # let _ = app;
/// ```
#[derive(Debug, Clone)]
pub struct Dashboard {
    registry: Registry,
    interval: Duration,
    retry: Duration,
}

impl Dashboard {
    /// The dashboard of `registry`, sampled every [`DEFAULT_INTERVAL`].
    pub fn new(registry: &Registry) -> Self {
        Dashboard {
            registry: registry.clone(),
            interval: DEFAULT_INTERVAL,
            retry: DEFAULT_INTERVAL,
        }
    }

    /// The time between two samples of the stream (at least 10 ms; less is
    /// taken as 10 ms). The page's charts keep the last 300 samples.
    #[must_use]
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval.max(Duration::from_millis(10));
        self
    }

    /// How long a browser waits before it opens the stream again after it
    /// broke (the `retry` field of the stream's first event); 1 s by
    /// default.
    #[must_use]
    pub fn retry(mut self, retry: Duration) -> Self {
        self.retry = retry;
        self
    }

    /// The router: `GET /`, `GET /events` and `GET /snapshot.json`.
    pub fn router(self) -> Router {
        self.registry.telemetry().record();
        let shared = Arc::new(Shared {
            dashboard: self,
            seq: Arc::new(AtomicU64::new(0)),
        });
        Router::new()
            .route("/", get(page))
            .route("/events", get(events))
            .route("/snapshot.json", get(snapshot))
            .with_state(shared)
    }
}

#[derive(Debug)]
struct Shared {
    dashboard: Dashboard,
    seq: Arc<AtomicU64>,
}

impl Shared {
    fn sampler(&self) -> Sampler {
        Sampler::new(
            &self.dashboard.registry,
            Arc::clone(&self.seq),
            self.dashboard.interval,
        )
    }
}

/// The page's `Content-Security-Policy`: its own script runs (named by its
/// SHA-256, so no other inline script or event handler does), its inline
/// styles apply, it may connect to its own origin (its stream), and the
/// browser loads nothing else for it: no script, style, image, font, frame
/// or connection elsewhere, no `<base>` and no form target. A test checks
/// the hash against `page.js` (and says the new one when the script
/// changes).
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; \
     script-src 'sha256-1EE5lml08LqJzmO5SLcvZ0WDnmikV+r/Yho/7P1c7vE='; \
     style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'";

async fn page() -> impl IntoResponse {
    (
        [
            (header::CACHE_CONTROL, "no-cache"),
            (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        ],
        Html(PAGE),
    )
}

async fn snapshot(State(shared): State<Arc<Shared>>) -> impl IntoResponse {
    let sample = shared.sampler().sample();
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        sample.to_string(),
    )
}

async fn events(State(shared): State<Arc<Shared>>) -> impl IntoResponse {
    let mut ticks = tokio::time::interval(shared.dashboard.interval);
    ticks.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let retry = Some(shared.dashboard.retry);
    let start = (shared.sampler(), ticks, retry);
    let samples = stream::unfold(start, |(mut sampler, mut ticks, retry)| async move {
        ticks.tick().await;
        let sample = sampler.sample();
        let seq = sample["seq"].as_u64().unwrap_or(0);
        let mut event = Event::default()
            .event("snapshot")
            .id(seq.to_string())
            .data(sample.to_string());
        if let Some(retry) = retry {
            event = event.retry(retry);
        }
        Some((Ok::<_, Infallible>(event), (sampler, ticks, None)))
    });
    // nginx buffers responses unless told not to, which would hold the
    // samples back.
    ([(X_ACCEL_BUFFERING, "no")], Sse::new(samples))
}

const X_ACCEL_BUFFERING: HeaderName = HeaderName::from_static("x-accel-buffering");
