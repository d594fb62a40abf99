//! Policy state and events as OpenTelemetry instruments
//! ([`export_opentelemetry`]), and a span per attempt
//! ([`export_attempt_spans`], in `spans`).
//!
//! # Implementation details
//!
//! Every instrument but the histograms is observable: the program's SDK
//! calls its callback at each collection, and the callback reports what a
//! [`State`] shared with the exporter holds. The state has two parts:
//!
//! - **event counts**, added by the observer thread as the registry's events
//!   come (cumulative, exact unless the observer fell behind);
//! - **what the latest snapshot showed**: the first callback of a collection
//!   (the first to find it has already read the current snapshot, so that
//!   the SDK's order of callbacks does not matter) takes a new
//!   [`Registry::snapshot`], which every other callback of the collection
//!   reads. Gauges are thus as fresh as the collection, and the exporter
//!   needs no sampling interval of its own.
//!
//! The histograms are synchronous (the API has no observable histogram):
//! that same first callback records into them what the registry's
//! histograms gained since the previous collection (see `histograms`).
//!
//! Callers of the registry's policies never meet the exporter: admitted
//! calls touch nothing, events go through the registry's bounded buffer to
//! the observer thread, which only adds to counts in the state. The
//! callbacks hold the state weakly: once the exporter stops, they report
//! nothing. (Attempt spans, by contrast, are made on the caller's thread.)

mod events;
mod histograms;
pub(super) mod names;
mod samples;
mod spans;

pub use spans::{AttemptSpans, export_attempt_spans};

use std::borrow::Cow;
use std::collections::HashMap;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use ::opentelemetry::KeyValue;
use ::opentelemetry::metrics::{AsyncInstrument, AsyncInstrumentBuilder, Meter};
use bulkhead_core::Event;

use super::observer::{self, ObserverHandle, Sink};
use crate::registry::Registry;
use names::{EVENTS_LOST, INSTRUMENTS, Kind};

/// Exports the state of `registry`'s policies and counts their events as
/// OpenTelemetry instruments created on `meter`, until the returned handle
/// is dropped.
///
/// Every instrument but the histograms is observable: the SDK behind `meter`
/// reads them at each of its collections (a `PeriodicReader`'s interval, a
/// pull exporter's scrape), gauges from a [`snapshot`](Registry::snapshot)
/// taken then, once per collection; the histograms are fed then too;
/// counters follow the policies' events, counted by a
/// thread of the exporter's own as they come, or come from the snapshot
/// when the policy counts them exactly. Every instrument, its unit and
/// attributes are in the [module docs](super#opentelemetry).
///
/// Callers never wait for the exporter nor for OpenTelemetry: admitted calls
/// are not touched at all, and events are read from a bounded buffer. An
/// exporter that falls more than the registry's `event_capacity` behind
/// loses the oldest events (counted in `resilience.observer.lost_events`
/// and [`ObserverHandle::lost`]), so its event counters then undercount.
///
/// Once the handle is dropped, the instruments report nothing (OpenTelemetry
/// cannot remove an instrument from a meter: a second exporter on the same
/// meter adds instruments of the same names, and the SDK merges what both
/// report, so stop one before starting another).
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
/// // The program's SDK (opentelemetry_sdk, with an OTLP or Prometheus
/// // exporter) makes the meter provider; `global` is a no-op until one is
/// // installed.
/// let meter = opentelemetry::global::meter("bulkhead");
/// let exporter = observe::export_opentelemetry(&registry, &meter)?;
/// // ... build pipelines and wrappers on `registry`, serve traffic ...
/// # drop(exporter);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn export_opentelemetry(registry: &Registry, meter: &Meter) -> io::Result<ObserverHandle> {
    registry.telemetry().record();
    let state = Arc::new(Mutex::new(State::new(registry.clone(), meter)));
    for (index, instrument) in INSTRUMENTS.iter().enumerate() {
        register(meter, index, instrument, Arc::downgrade(&state));
    }
    let mut exporter = Exporter { state };
    observer::spawn(
        "bulkhead-otel",
        registry.subscribe(),
        None,
        move |observer| observer.run(&mut exporter),
    )
}

/// Label values, in the order of their instrument's attributes.
type Labels = Box<[Cow<'static, str>]>;

/// A value of a series: each instrument reports it as its kind says.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Value {
    Count(u64),
    Signed(i64),
    Float(f64),
}

impl Value {
    fn as_u64(self) -> u64 {
        match self {
            Value::Count(n) => n,
            Value::Signed(n) => u64::try_from(n).unwrap_or(0),
            // Saturating, and NaN as 0.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            Value::Float(x) => x as u64,
        }
    }

    fn as_i64(self) -> i64 {
        match self {
            Value::Count(n) => i64::try_from(n).unwrap_or(i64::MAX),
            Value::Signed(n) => n,
            #[allow(clippy::cast_possible_truncation)]
            Value::Float(x) => x as i64,
        }
    }

    #[allow(clippy::cast_precision_loss)] // counts far below 2^53
    fn as_f64(self) -> f64 {
        match self {
            Value::Count(n) => n as f64,
            Value::Signed(n) => n as f64,
            Value::Float(x) => x,
        }
    }
}

impl From<u32> for Value {
    fn from(n: u32) -> Self {
        Value::Count(u64::from(n))
    }
}

impl From<u64> for Value {
    fn from(n: u64) -> Self {
        Value::Count(n)
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Self {
        Value::Signed(n)
    }
}

impl From<f64> for Value {
    fn from(x: f64) -> Self {
        Value::Float(x)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Count(u64::from(b))
    }
}

/// What the instruments' callbacks report, shared by the observer thread
/// (event counts) and the SDK's collections (snapshots).
pub(super) struct State {
    registry: Registry,
    /// Event counts, per instrument: label values to the count since the
    /// exporter started (for a seconds counter, in microseconds).
    counted: Vec<HashMap<Labels, u64>>,
    /// What the latest snapshot showed, per instrument.
    sampled: Vec<Vec<(Labels, Value)>>,
    /// The instruments whose callback has read `sampled` since it was
    /// taken (bit `i` for `INSTRUMENTS[i]`): a callback that finds its own
    /// bit set is the first of a new collection, and takes a new snapshot.
    read: u128,
    /// Each keyed bulkhead's keys ever labelled (see `samples::keyed`).
    keys_labelled: HashMap<String, std::collections::HashSet<String>>,
    /// The histograms, fed at each collection.
    histograms: histograms::Histograms,
}

impl State {
    fn new(registry: Registry, meter: &Meter) -> Self {
        State {
            registry,
            counted: INSTRUMENTS.iter().map(|_| HashMap::new()).collect(),
            sampled: INSTRUMENTS.iter().map(|_| Vec::new()).collect(),
            // As if every callback had read: the first one samples.
            read: u128::MAX,
            keys_labelled: HashMap::new(),
            histograms: histograms::Histograms::registry(meter),
        }
    }

    /// Adds `n` to the event count of `instrument` at `labels`.
    pub(super) fn add(&mut self, instrument: usize, labels: &[Cow<'static, str>], n: u64) {
        let Some(counts) = self.counted.get_mut(instrument) else {
            return;
        };
        match counts.get_mut(labels) {
            Some(count) => *count = count.saturating_add(n),
            None => {
                counts.insert(labels.into(), n);
            }
        }
    }

    /// Sets what the snapshot shows of `instrument` at `labels`.
    pub(super) fn set(
        &mut self,
        instrument: usize,
        labels: &[Cow<'static, str>],
        value: impl Into<Value>,
    ) {
        if let Some(sampled) = self.sampled.get_mut(instrument) {
            sampled.push((labels.into(), value.into()));
        }
    }

    /// Reports `instrument` at 0 for `labels` until its first event, so that
    /// its series exists before anything happens.
    pub(super) fn register(&mut self, instrument: usize, labels: &[Cow<'static, str>]) {
        self.add(instrument, labels, 0);
    }

    /// Hands `observe` every series of `instrument`, first taking a new
    /// snapshot if this is the first callback of a collection.
    fn observe(&mut self, instrument: usize, mut observe: impl FnMut(Value, &[KeyValue])) {
        let bit = 1u128 << (instrument % 128);
        if self.read & bit != 0 {
            self.read = 0;
            samples::sample(self);
        }
        self.read |= bit;
        let Some(spec) = INSTRUMENTS.get(instrument) else {
            return;
        };
        let attributes = |labels: &Labels| -> Vec<KeyValue> {
            spec.attributes
                .iter()
                .zip(labels.iter())
                .map(|(&key, value)| KeyValue::new(key, value.clone()))
                .collect()
        };
        for (labels, value) in &self.sampled[instrument] {
            observe(*value, &attributes(labels));
        }
        for (labels, &count) in &self.counted[instrument] {
            let value = if spec.kind == Kind::SecondsCounter {
                #[allow(clippy::cast_precision_loss)] // microseconds below 2^53: 285 years
                Value::Float(count as f64 / 1e6)
            } else {
                Value::Count(count)
            };
            observe(value, &attributes(labels));
        }
    }
}

/// Locks `state`, whatever a panic left in it (counts stay counts).
fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Creates `instrument` on `meter`, its callback reporting from `state`.
fn register(
    meter: &Meter,
    index: usize,
    instrument: &names::Instrument,
    state: Weak<Mutex<State>>,
) {
    let name = instrument.name;
    match instrument.kind {
        Kind::Counter => {
            let builder = meter.u64_observable_counter(name);
            observed(builder, instrument, index, state, Value::as_u64).build();
        }
        Kind::SecondsCounter => {
            let builder = meter.f64_observable_counter(name);
            observed(builder, instrument, index, state, Value::as_f64).build();
        }
        Kind::UpDownCounter => {
            let builder = meter.i64_observable_up_down_counter(name);
            observed(builder, instrument, index, state, Value::as_i64).build();
        }
        Kind::Gauge => {
            let builder = meter.f64_observable_gauge(name);
            observed(builder, instrument, index, state, Value::as_f64).build();
        }
    }
}

/// `builder` with `instrument`'s unit and description, and a callback that
/// reports its series from `state` (nothing once the exporter stopped), each
/// value turned into the instrument's type by `convert`.
fn observed<'a, I, M: 'static>(
    builder: AsyncInstrumentBuilder<'a, I, M>,
    instrument: &names::Instrument,
    index: usize,
    state: Weak<Mutex<State>>,
    convert: fn(Value) -> M,
) -> AsyncInstrumentBuilder<'a, I, M> {
    builder
        .with_unit(instrument.unit)
        .with_description(instrument.help)
        .with_callback(move |o: &dyn AsyncInstrument<M>| {
            if let Some(state) = state.upgrade() {
                lock(&state).observe(index, |value, attributes| {
                    o.observe(convert(value), attributes);
                });
            }
        })
}

/// Counts events into the shared state.
struct Exporter {
    state: Arc<Mutex<State>>,
}

impl Sink for Exporter {
    fn event(&mut self, event: Event) {
        event.visit(&mut events::Counter(&mut lock(&self.state)));
    }

    fn lost(&mut self, count: u64) {
        lock(&self.state).add(EVENTS_LOST, &[], count);
    }
}
