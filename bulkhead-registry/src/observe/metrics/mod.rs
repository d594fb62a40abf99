//! Policy state and events as `metrics`: [`export_metrics`].

mod events;
pub(super) mod names;
mod samples;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::io;
use std::time::Duration;

use ::metrics::{Recorder, counter};
use bulkhead_core::Event;

use super::observer::{self, ObserverHandle, Sampling, Sink};
use crate::registry::Registry;
use bulkhead_core::keys::PolicyKind;
use names::EVENTS_LOST;

/// The shortest sampling interval: shorter ones are raised to it.
const MIN_INTERVAL: Duration = Duration::from_millis(1);

/// Exports the state of `registry`'s policies and counts their events as
/// `metrics` gauges and counters, to the global recorder, from a thread of
/// its own, until the returned handle is dropped.
///
/// Gauges are sampled from a [`snapshot`](Registry::snapshot) at once and
/// then every `interval` on the registry's clock (a `ManualClock` samples
/// when a test moves it past the next due time; intervals below 1 ms are
/// raised to 1 ms); counters follow the policies' events as they come. Every
/// metric, its unit and labels are in the [module docs](super#metrics).
///
/// Callers never wait for the exporter: admitted calls are not touched at
/// all, and events are read from a bounded buffer. An exporter that falls
/// more than the registry's `event_capacity` behind loses the oldest events
/// (counted in `bulkhead_observer_events_lost_total` and
/// [`ObserverHandle::lost`]), so its event counters then undercount.
///
/// The thread holds a clone of the registry (to take snapshots): the
/// registry lives at least as long as the handle.
///
/// # Errors
///
/// If the thread cannot be started.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use bulkhead_registry::{observe, Registry};
///
/// let registry = Registry::new();
/// // After installing a recorder (metrics-exporter-prometheus, ...):
/// let metrics = observe::export_metrics(&registry, Duration::from_secs(5))?;
/// # drop(metrics);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn export_metrics(registry: &Registry, interval: Duration) -> io::Result<ObserverHandle> {
    spawn(registry, interval, None)
}

/// [`export_metrics`] to `recorder` instead of the global recorder: for a
/// program with several recorders, or a test with its own.
///
/// # Errors
///
/// If the thread cannot be started.
pub fn export_metrics_to<R>(
    registry: &Registry,
    interval: Duration,
    recorder: R,
) -> io::Result<ObserverHandle>
where
    R: Recorder + Send + 'static,
{
    spawn(registry, interval, Some(Box::new(recorder)))
}

/// A duration in whole microseconds, for the counters that add them up
/// (saturating at `u64::MAX`).
fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

fn spawn(
    registry: &Registry,
    interval: Duration,
    recorder: Option<Box<dyn Recorder + Send>>,
) -> io::Result<ObserverHandle> {
    let sampling = Sampling {
        clock: registry.clock().clone(),
        interval: interval.max(MIN_INTERVAL),
    };
    registry.telemetry().record();
    let mut exporter = Exporter {
        registry: registry.clone(),
        keys_shown: HashMap::new(),
        histograms: HashMap::new(),
    };
    observer::spawn(
        "bulkhead-metrics",
        registry.subscribe(),
        Some(sampling),
        move |observer| {
            let run = || {
                names::describe();
                observer.run(&mut exporter);
            };
            match recorder {
                Some(recorder) => ::metrics::with_local_recorder(&*recorder, run),
                None => run(),
            }
        },
    )
}

/// Turns events into counter increments and samples into gauges.
struct Exporter {
    registry: Registry,
    /// The keys each keyed bulkhead's sample labelled last.
    keys_shown: HashMap<String, samples::KeyLabels>,
    /// Each histogram as the previous sample read it.
    histograms: samples::HistogramsSeen,
}

impl Sink for Exporter {
    fn event(&mut self, event: Event) {
        event.visit(&mut events::Counter);
    }

    fn lost(&mut self, count: u64) {
        counter!(EVENTS_LOST).increment(count);
    }

    fn sample(&mut self) {
        let snapshot = self.registry.snapshot();
        for kind in PolicyKind::ALL {
            match kind {
                PolicyKind::Bulkhead => snapshot.bulkheads().iter().for_each(samples::bulkhead),
                PolicyKind::Retry => snapshot.retries().iter().for_each(samples::retry),
                PolicyKind::CircuitBreaker => snapshot
                    .circuit_breakers()
                    .iter()
                    .for_each(samples::circuit_breaker),
                PolicyKind::Timeout => snapshot.timeouts().iter().for_each(samples::timeout),
                PolicyKind::RateLimiter => snapshot
                    .rate_limiters()
                    .iter()
                    .for_each(samples::rate_limiter),
                PolicyKind::Chaos => snapshot.chaos().iter().for_each(samples::chaos),
                // Their counters all come from events.
                PolicyKind::Hedge | PolicyKind::Fallback => {}
            }
        }
        for keyed in snapshot.keyed_bulkheads() {
            let shown = self.keys_shown.entry(keyed.instance.clone()).or_default();
            samples::keyed(keyed, shown);
        }
        snapshot.fleets().iter().for_each(samples::fleet);
        samples::histograms(&self.registry, &mut self.histograms);
    }
}
