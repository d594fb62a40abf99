//! What a composition of policies records of its calls for people to see:
//! histograms of call duration, attempt duration and slot wait, and a hook
//! told of each attempt (for spans).
//!
//! Nothing is recorded until something asks: a registry's
//! [`TelemetryHub`] starts with recording off, and what reads it (the
//! registry's `metrics` and OpenTelemetry exporters, its dashboard, an
//! [`AttemptHook`]) turns it on. While it is off, a composition's call
//! pays one load of a process-wide flag and a branch for it, and two
//! dependent loads more (its instance's telemetry, then whether it
//! records) once any hub of the process records. While it is on,
//! each call reads the precise clock (`Clock::now`) at its start, at each
//! attempt's end, and around a wait for a bulkhead slot, and adds each
//! sample to a histogram of atomic buckets ([`HistogramSnapshot`]): one
//! relaxed `fetch_add` on a bucket and one on the sum, no lock, no
//! allocation.

mod histogram;

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};
use std::time::{Duration, Instant};

pub use histogram::HistogramSnapshot;
use histogram::{BUCKETS, Histogram};

use crate::clock::nanos;
use crate::rejection::RejectionKind;

/// How an attempt or a call ended, as the histograms label it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Outcome {
    /// It returned `Ok`.
    Success,
    /// The call ran and returned its own error.
    Error,
    /// A policy refused it (or cut it short: a timeout).
    Rejected(RejectionKind),
}

impl Outcome {
    /// Every outcome, in the order of their histograms.
    pub const ALL: [Outcome; 8] = [
        Outcome::Success,
        Outcome::Error,
        Outcome::Rejected(RejectionKind::BulkheadFull),
        Outcome::Rejected(RejectionKind::CircuitOpen),
        Outcome::Rejected(RejectionKind::Timeout),
        Outcome::Rejected(RejectionKind::RateLimited),
        Outcome::Rejected(RejectionKind::Injected),
        Outcome::Rejected(RejectionKind::DeadlineExceeded),
    ];

    /// Its label: `success`, `error`, or the rejection kind in snake case
    /// (`bulkhead_full`, `circuit_open`, `timeout`, `rate_limited`,
    /// `injected`, `deadline_exceeded`; `rejected` for a kind added after
    /// these).
    pub const fn label(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Error => "error",
            Outcome::Rejected(kind) => match kind {
                RejectionKind::BulkheadFull => "bulkhead_full",
                RejectionKind::CircuitOpen => "circuit_open",
                RejectionKind::Timeout => "timeout",
                RejectionKind::RateLimited => "rate_limited",
                RejectionKind::Injected => "injected",
                RejectionKind::DeadlineExceeded => "deadline_exceeded",
                _ => OTHER_REJECTION,
            },
        }
    }

    /// The rejection kind, if a policy refused it.
    pub const fn rejection(self) -> Option<RejectionKind> {
        match self {
            Outcome::Rejected(kind) => Some(kind),
            _ => None,
        }
    }

    const fn index(self) -> usize {
        match self {
            Outcome::Success => 0,
            Outcome::Error => 1,
            Outcome::Rejected(kind) => match kind {
                RejectionKind::BulkheadFull => 2,
                RejectionKind::CircuitOpen => 3,
                RejectionKind::Timeout => 4,
                RejectionKind::RateLimited => 5,
                RejectionKind::Injected => 6,
                RejectionKind::DeadlineExceeded => 7,
                _ => 8,
            },
        }
    }
}

/// Whether any hub of the process records: until one does, a call through
/// a composition reads only this to know that it records nothing.
static ANY_RECORDING: AtomicBool = AtomicBool::new(false);

/// Whether any hub of the process records (never false again once one
/// does).
#[inline(always)]
pub(crate) fn any_recording() -> bool {
    ANY_RECORDING.load(Ordering::Relaxed)
}

/// The label of a rejection of a kind added after this list was written.
const OTHER_REJECTION: &str = "rejected";

/// How many outcome histograms a kind of call histogram has: one per
/// [`Outcome::ALL`], and one for rejections of a kind added later.
const OUTCOMES: usize = Outcome::ALL.len() + 1;

/// The label of each outcome histogram, by index.
fn outcome_label(index: usize) -> &'static str {
    Outcome::ALL
        .get(index)
        .map_or(OTHER_REJECTION, |outcome| outcome.label())
}

/// How a wait for a bulkhead slot ended, as the slot-wait histogram labels
/// it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WaitOutcome {
    /// The call got its slot.
    Admitted,
    /// The bulkhead refused it (full, at once or after waiting `max_wait`).
    Rejected,
    /// The wait was cut short by a timeout or the call's deadline (or,
    /// for an async call under a timeout, by its caller dropping it).
    Abandoned,
}

impl WaitOutcome {
    /// Every outcome, in the order of their histograms.
    pub const ALL: [WaitOutcome; 3] = [
        WaitOutcome::Admitted,
        WaitOutcome::Rejected,
        WaitOutcome::Abandoned,
    ];

    /// Its label: `admitted`, `rejected` or `abandoned`.
    pub const fn label(self) -> &'static str {
        match self {
            WaitOutcome::Admitted => "admitted",
            WaitOutcome::Rejected => "rejected",
            WaitOutcome::Abandoned => "abandoned",
        }
    }

    const fn index(self) -> usize {
        self as usize
    }
}

/// Which duration a histogram measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum HistogramKind {
    /// A whole call through the policies: every attempt, the retry's
    /// delays between them, from the call's start to its result (labelled
    /// with the last attempt's [`Outcome`]).
    CallDuration,
    /// One attempt: from its start (before the circuit breaker) to its end,
    /// waits for a rate-limiter permit and a bulkhead slot included
    /// (labelled with its [`Outcome`]).
    AttemptDuration,
    /// A call's wait for a bulkhead slot, from its arrival at the bulkhead
    /// to its admission or refusal (labelled with its [`WaitOutcome`]);
    /// a call admitted or refused at once adds a sample in the first bucket
    /// (zero for a sync call, which reads no clock unless it waits; the
    /// time between two readings, well under 1 µs, for an async one).
    SlotWait,
}

impl HistogramKind {
    /// Every kind.
    pub const ALL: [HistogramKind; 3] = [
        HistogramKind::CallDuration,
        HistogramKind::AttemptDuration,
        HistogramKind::SlotWait,
    ];

    /// Its name as a short label: `call_duration`, `attempt_duration`,
    /// `slot_wait`.
    pub const fn name(self) -> &'static str {
        match self {
            HistogramKind::CallDuration => "call_duration",
            HistogramKind::AttemptDuration => "attempt_duration",
            HistogramKind::SlotWait => "slot_wait",
        }
    }
}

/// One attempt, as an [`AttemptHook`] is told of it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct AttemptRecord<'a> {
    /// The composition's instance id (see [`TelemetryHub::instance`]).
    pub instance: &'a str,
    /// Its number in the call, from 1.
    pub number: u32,
    /// When it started (before the circuit breaker), on the composition's
    /// clock (the registry's; for a request through the tower
    /// `BulkheadLayer`, the system clock, `Instant::now`).
    pub start: Instant,
    /// When it ended.
    pub end: Instant,
    /// How it ended.
    pub outcome: Outcome,
}

/// Told of each attempt of every composition of a hub while recording is on
/// (`observe::export_attempt_spans` makes a span of each). While one is set,
/// each attempt also takes a read lock of the hub's hook to reach it.
///
/// The hub keeps the hook until it is replaced or cleared: a hook that
/// holds the registry (or its hub) makes a cycle that is never freed; hold
/// a `Weak` instead. Called on the caller's
/// thread (an async call's: the thread polling it) when the attempt ends,
/// so that the caller's ambient context (a current span) is there to read.
pub trait AttemptHook: Send + Sync + 'static {
    /// An attempt ended.
    fn attempt(&self, record: &AttemptRecord<'_>);
}

/// A registry's histograms, one set per instance, and whether they record.
///
/// Compositions get their instance's [`InstanceTelemetry`] when they are
/// built ([`instance`](Self::instance)); recording starts for all of them,
/// those built before included, with [`record`](Self::record).
#[derive(Default)]
pub struct TelemetryHub {
    shared: Arc<HubShared>,
}

/// Each instance's place in the list, and the list.
type Instances = (HashMap<&'static str, usize>, Vec<Arc<InstanceTelemetry>>);

/// The hub's attempt hook, which its instances hold too (not the hub
/// itself: the hub holds them).
#[derive(Default)]
struct Hook {
    on: AtomicBool,
    hook: RwLock<Option<Arc<dyn AttemptHook>>>,
}

impl Hook {
    /// Tells the hook, if any.
    #[cold]
    #[inline(never)]
    fn tell(&self, record: &AttemptRecord<'_>) {
        let hook = self
            .hook
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(hook) = hook {
            hook.attempt(record);
        }
    }
}

#[derive(Default)]
struct HubShared {
    on: AtomicBool,
    hook: Arc<Hook>,
    /// Each instance's telemetry, in the order of their first composition.
    instances: Mutex<Instances>,
}

impl fmt::Debug for TelemetryHub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TelemetryHub")
            .field("recording", &self.recording())
            .field("hook", &self.shared.hook.on.load(Ordering::Relaxed))
            .finish()
    }
}

impl Clone for TelemetryHub {
    fn clone(&self) -> Self {
        TelemetryHub {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl TelemetryHub {
    /// A hub that does not record yet.
    pub fn new() -> Self {
        TelemetryHub::default()
    }

    /// The telemetry of `instance`, made on its first request and shared by
    /// every composition of that instance afterwards.
    pub fn instance(&self, instance: &str) -> Arc<InstanceTelemetry> {
        let mut guard = self
            .shared
            .instances
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let (index, list) = &mut *guard;
        if let Some(&i) = index.get(instance) {
            return Arc::clone(&list[i]);
        }
        let telemetry = Arc::new(InstanceTelemetry {
            instance: crate::intern::intern(instance),
            histograms: OnceLock::new(),
            hook: Arc::clone(&self.shared.hook),
        });
        if self.shared.on.load(Ordering::Relaxed) {
            telemetry.allocate();
        }
        index.insert(telemetry.instance, list.len());
        list.push(Arc::clone(&telemetry));
        telemetry
    }

    /// Starts recording (for good: an exporter asks, and later ones find
    /// the history there). Allocates the histograms of every instance known
    /// so far (about 11 KB each); those of later instances are allocated as
    /// they are made.
    pub fn record(&self) {
        let guard = self
            .shared
            .instances
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        self.shared.on.store(true, Ordering::Relaxed);
        for telemetry in &guard.1 {
            telemetry.allocate();
        }
        // After the histograms exist: a call that sees the flag finds them
        // (or its instance's `OnceLock` still empty, and records nothing).
        ANY_RECORDING.store(true, Ordering::Release);
    }

    /// Whether it records.
    pub fn recording(&self) -> bool {
        self.shared.on.load(Ordering::Relaxed)
    }

    /// Sets the hook told of every attempt (replacing any other), and
    /// starts recording.
    pub fn set_attempt_hook(&self, hook: Arc<dyn AttemptHook>) {
        *self
            .shared
            .hook
            .hook
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(hook);
        self.shared.hook.on.store(true, Ordering::Release);
        self.record();
    }

    /// Removes the attempt hook, if any (recording goes on).
    pub fn clear_attempt_hook(&self) {
        self.shared.hook.on.store(false, Ordering::Release);
        *self
            .shared
            .hook
            .hook
            .write()
            .unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// Every instance's histograms that recorded a sample: one reading per
    /// instance, kind and outcome (`outcome` a label of [`Outcome`] or
    /// [`WaitOutcome`]).
    pub fn histograms(&self) -> Vec<InstanceHistogram> {
        let list: Vec<Arc<InstanceTelemetry>> = self
            .shared
            .instances
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .1
            .clone();
        let mut out = Vec::new();
        for telemetry in list {
            let Some(set) = telemetry.histograms.get() else {
                continue;
            };
            let mut push = |kind, outcome, histogram: &Histogram| {
                let histogram = histogram.read();
                if histogram.count() > 0 {
                    out.push(InstanceHistogram {
                        instance: telemetry.instance,
                        kind,
                        outcome,
                        histogram,
                    });
                }
            };
            for (i, histogram) in set.call.iter().enumerate() {
                push(HistogramKind::CallDuration, outcome_label(i), histogram);
            }
            for (i, histogram) in set.attempt.iter().enumerate() {
                push(HistogramKind::AttemptDuration, outcome_label(i), histogram);
            }
            for outcome in WaitOutcome::ALL {
                push(
                    HistogramKind::SlotWait,
                    outcome.label(),
                    &set.wait[outcome.index()],
                );
            }
        }
        out
    }
}

/// One histogram of one instance, as [`TelemetryHub::histograms`] reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceHistogram {
    instance: &'static str,
    kind: HistogramKind,
    outcome: &'static str,
    histogram: HistogramSnapshot,
}

impl InstanceHistogram {
    /// The instance id.
    pub fn instance(&self) -> &str {
        self.instance
    }

    /// What it measures.
    pub fn kind(&self) -> HistogramKind {
        self.kind
    }

    /// The outcome its samples ended with (a label of [`Outcome`], or of
    /// [`WaitOutcome`] for [`HistogramKind::SlotWait`]).
    pub fn outcome(&self) -> &str {
        self.outcome
    }

    /// The reading.
    pub fn histogram(&self) -> &HistogramSnapshot {
        &self.histogram
    }
}

/// The histograms of one instance.
struct Set {
    call: [Histogram; OUTCOMES],
    attempt: [Histogram; OUTCOMES],
    wait: [Histogram; 3],
}

/// One instance's histograms (allocated once its hub records), shared by
/// every composition of the instance.
pub struct InstanceTelemetry {
    instance: &'static str,
    histograms: OnceLock<Box<Set>>,
    hook: Arc<Hook>,
}

impl fmt::Debug for InstanceTelemetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InstanceTelemetry")
            .field("instance", &self.instance)
            .field("recording", &self.histograms.get().is_some())
            .finish()
    }
}

impl InstanceTelemetry {
    fn allocate(&self) {
        self.histograms.get_or_init(|| {
            Box::new(Set {
                call: std::array::from_fn(|_| Histogram::default()),
                attempt: std::array::from_fn(|_| Histogram::default()),
                wait: std::array::from_fn(|_| Histogram::default()),
            })
        });
    }

    /// The instance id.
    pub fn instance(&self) -> &'static str {
        self.instance
    }

    /// Whether it records (its hub was asked to).
    #[inline]
    pub fn recording(&self) -> bool {
        self.histograms.get().is_some()
    }

    /// Records a call that took `took`, if it records: for a caller timing
    /// calls outside a composition of policies (a tower layer).
    pub fn record_call(&self, took: Duration, outcome: Outcome) {
        if let Some(recorder) = self.recorder() {
            recorder.call(nanos(took), outcome);
        }
    }

    /// Records a wait for a bulkhead slot that took `took`, if it records.
    pub fn record_wait(&self, took: Duration, outcome: WaitOutcome) {
        if let Some(recorder) = self.recorder() {
            recorder.wait(nanos(took), outcome);
        }
    }

    /// Records attempt `number`, from `start` to `end`, if it records, and
    /// tells the hub's attempt hook, if any.
    pub fn record_attempt(&self, number: u32, start: Instant, end: Instant, outcome: Outcome) {
        if let Some(recorder) = self.recorder() {
            let took = nanos(end.saturating_duration_since(start));
            recorder.attempted(number, took, outcome, || (start, end));
        }
    }

    /// A recorder, if the hub records.
    #[inline]
    pub(crate) fn recorder(&self) -> Option<Recorder<'_>> {
        self.histograms.get().map(|set| Recorder {
            set,
            telemetry: self,
        })
    }
}

/// What a call records into while its hub records.
#[derive(Clone, Copy)]
pub(crate) struct Recorder<'a> {
    set: &'a Set,
    telemetry: &'a InstanceTelemetry,
}

impl Recorder<'_> {
    pub(crate) fn call(&self, nanos: u64, outcome: Outcome) {
        self.set.call[outcome.index()].record(nanos);
    }

    pub(crate) fn wait(&self, nanos: u64, outcome: WaitOutcome) {
        self.set.wait[outcome.index()].record(nanos);
    }

    /// An attempt that took from `start` to `end` (stamps on `timeline`),
    /// its hook told if there is one.
    pub(crate) fn attempt(
        &self,
        number: u32,
        start: u64,
        end: u64,
        outcome: Outcome,
        timeline: &crate::clock::Timeline,
    ) {
        self.attempted(number, end.saturating_sub(start), outcome, || {
            (timeline.instant(start), timeline.instant(end))
        });
    }

    /// Attempt `number` took `took` nanoseconds; the hook, if any, is told
    /// of it with its start and end (`span`, made only then).
    #[inline]
    fn attempted(
        &self,
        number: u32,
        took: u64,
        outcome: Outcome,
        span: impl FnOnce() -> (Instant, Instant),
    ) {
        self.set.attempt[outcome.index()].record(took);
        if self.telemetry.hook.on.load(Ordering::Acquire) {
            let (start, end) = span();
            self.telemetry.hook.tell(&AttemptRecord {
                instance: self.telemetry.instance,
                number,
                start,
                end,
                outcome,
            });
        }
    }
}

// `BUCKETS` sizes the snapshot's arrays.
const _: () = assert!(BUCKETS == 66);

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn outcomes_index_their_own_histograms() {
        for (i, outcome) in Outcome::ALL.into_iter().enumerate() {
            assert_eq!(outcome.index(), i);
            assert_eq!(outcome_label(i), outcome.label());
        }
        assert_eq!(outcome_label(OUTCOMES - 1), "rejected");
        for (i, outcome) in WaitOutcome::ALL.into_iter().enumerate() {
            assert_eq!(outcome.index(), i);
        }
        let labels: std::collections::HashSet<_> = Outcome::ALL.iter().map(|o| o.label()).collect();
        assert_eq!(labels.len(), Outcome::ALL.len());
    }

    #[test]
    fn a_hub_records_for_instances_made_before_and_after_it_starts() {
        let hub = TelemetryHub::new();
        let before = hub.instance("db");
        assert!(before.recorder().is_none());
        assert!(Arc::ptr_eq(&before, &hub.instance("db")));
        hub.record();
        let after = hub.instance("cache");
        let recorder = before.recorder().expect("recording");
        recorder.call(5_000, Outcome::Success);
        recorder.wait(0, WaitOutcome::Admitted);
        after
            .recorder()
            .expect("recording")
            .call(7_000, Outcome::Rejected(RejectionKind::Timeout));
        let mut read: Vec<_> = hub
            .histograms()
            .into_iter()
            .map(|h| {
                (
                    h.instance().to_owned(),
                    h.kind(),
                    h.outcome().to_owned(),
                    h.histogram().count(),
                )
            })
            .collect();
        read.sort();
        assert_eq!(
            read,
            vec![
                (
                    "cache".into(),
                    HistogramKind::CallDuration,
                    "timeout".into(),
                    1
                ),
                (
                    "db".into(),
                    HistogramKind::CallDuration,
                    "success".into(),
                    1
                ),
                ("db".into(), HistogramKind::SlotWait, "admitted".into(), 1),
            ]
        );
    }
}
