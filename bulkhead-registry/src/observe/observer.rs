//! The observer thread: reads the registry's events as they come, and takes
//! a sample on the registry's clock every interval, until its handle is
//! dropped.
//!
//! # Implementation details
//!
//! The thread drives [`EventStream::recv`] with a waker that unparks it, so
//! no async runtime is needed: it parks until an event is published, the
//! next sample is due ([`Clock::park_until`], which a `ManualClock` ends when
//! a test moves it), or the handle asks it to stop (a flag, then an unpark;
//! a thread unparked before it parks does not park).

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

use bulkhead_core::{Clock, Event, EventStream};

/// What an observer does with what it sees.
pub(crate) trait Sink {
    /// One event, in the order published.
    fn event(&mut self, event: Event);
    /// `count` events were lost: the observer fell behind.
    fn lost(&mut self, count: u64);
    /// The sample is due.
    fn sample(&mut self) {}
}

/// When an observer samples: every `interval` on `clock`, the first time at
/// once.
pub(crate) struct Sampling {
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) interval: Duration,
}

/// A running observer; it stops when this handle is dropped.
///
/// Returned by `trace_events`, `export_metrics` and `export_opentelemetry`.
/// The observer runs on a thread of its own; dropping the handle (or [`stop`](Self::stop)) tells it to
/// stop and waits until it has finished the event at hand.
#[must_use = "the observer stops when its handle is dropped"]
pub struct ObserverHandle {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// What the thread and the handle share.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    stop: AtomicBool,
    events: AtomicU64,
    lost: AtomicU64,
    samples: AtomicU64,
}

impl ObserverHandle {
    /// Events the observer has handled.
    pub fn events(&self) -> u64 {
        self.shared.events.load(Ordering::Relaxed)
    }

    /// Events the observer lost by falling more than the registry's
    /// `event_capacity` behind (a slow `tracing` subscriber or metrics
    /// recorder, a starved thread). Callers never wait for an observer: it
    /// loses events instead.
    pub fn lost(&self) -> u64 {
        self.shared.lost.load(Ordering::Relaxed)
    }

    /// Samples taken (by a metrics exporter; 0 for an observer that does not
    /// sample: `trace_events`, and `export_opentelemetry`, whose snapshots
    /// are taken by the SDK's collections).
    pub fn samples(&self) -> u64 {
        self.shared.samples.load(Ordering::Relaxed)
    }

    /// Whether the observer still runs. It ends by itself when the registry
    /// and all its policies are gone, or if a `tracing` subscriber or metrics
    /// recorder panics on its thread.
    pub fn is_running(&self) -> bool {
        self.thread
            .as_ref()
            .is_some_and(|thread| !thread.is_finished())
    }

    /// Stops the observer and waits for its thread to end; the same as
    /// dropping the handle.
    pub fn stop(self) {}
}

impl Drop for ObserverHandle {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            if thread.thread().id() != thread::current().id() {
                // A panic on the observer's thread was already reported there.
                let _ = thread.join();
            }
        }
    }
}

impl fmt::Debug for ObserverHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObserverHandle")
            .field("running", &self.is_running())
            .field("events", &self.events())
            .field("lost", &self.lost())
            .field("samples", &self.samples())
            .finish()
    }
}

/// An observer about to run, handed to the body of its thread.
pub(crate) struct Observer {
    shared: Arc<Shared>,
    stream: EventStream,
    sampling: Option<Sampling>,
}

/// Starts the thread `name` running `body`, which is to call
/// [`Observer::run`] (inside whatever scope its sink needs).
pub(crate) fn spawn(
    name: &str,
    stream: EventStream,
    sampling: Option<Sampling>,
    body: impl FnOnce(Observer) + Send + 'static,
) -> io::Result<ObserverHandle> {
    let shared = Arc::new(Shared::default());
    let observer = Observer {
        shared: Arc::clone(&shared),
        stream,
        sampling,
    };
    let thread = thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || body(observer))?;
    Ok(ObserverHandle {
        shared,
        thread: Some(thread),
    })
}

/// What [`Observer::wait`] returned for.
enum Woken {
    Event(Event),
    SampleDue,
    Stopped,
    Closed,
}

impl Observer {
    /// Feeds `sink` until the handle is dropped or the bus closes.
    pub(crate) fn run(mut self, sink: &mut dyn Sink) {
        let waker = Waker::from(Arc::new(Unpark(thread::current())));
        let mut cx = Context::from_waker(&waker);
        let mut next_sample = self.sampling.as_ref().map(|s| s.clock.now());
        let mut missed = 0;
        loop {
            if let (Some(sampling), Some(due)) = (&self.sampling, next_sample) {
                let now = sampling.clock.now();
                if now >= due {
                    sink.sample();
                    // The next one counts from this one's start, and is set
                    // before the sample is counted: a clock moved by whoever
                    // waited for the count makes it due (read after the
                    // count, a `ManualClock` moved in between was missed and
                    // the next sample waited a whole interval more). An
                    // interval too long to add (`Duration::MAX`) means no
                    // further sample.
                    next_sample = now.checked_add(sampling.interval);
                    self.shared.samples.fetch_add(1, Ordering::Release);
                }
            }
            let woken = self.wait(&mut cx, next_sample);
            let lost = self.stream.missed() - missed;
            if lost > 0 {
                missed += lost;
                self.shared.lost.fetch_add(lost, Ordering::Relaxed);
                sink.lost(lost);
            }
            match woken {
                Woken::Event(event) => {
                    sink.event(event);
                    self.shared.events.fetch_add(1, Ordering::Relaxed);
                }
                Woken::SampleDue => {}
                Woken::Stopped | Woken::Closed => return,
            }
        }
    }

    /// Parks until an event comes, the sample at `due` is due, the handle
    /// says stop or the bus closes.
    fn wait(&mut self, cx: &mut Context<'_>, due: Option<Instant>) -> Woken {
        let mut recv = pin!(self.stream.recv());
        loop {
            if self.shared.stop.load(Ordering::Acquire) {
                return Woken::Stopped;
            }
            if let Poll::Ready(event) = recv.as_mut().poll(cx) {
                return event.map_or(Woken::Closed, Woken::Event);
            }
            match (&self.sampling, due) {
                (Some(sampling), Some(due)) => {
                    if sampling.clock.now() >= due {
                        return Woken::SampleDue;
                    }
                    sampling.clock.park_until(due);
                }
                _ => thread::park(),
            }
        }
    }
}

/// Wakes the observer's thread.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}
