//! The timeout policy: a call that takes longer than `duration` ends with
//! [`CallTimeout`].
//!
//! An async call is dropped at its deadline by the [`TimeoutFuture`] that
//! [`Timeout::run`] wraps it in. A sync call cannot be pre-empted: the caller
//! bounds its wait for a bulkhead slot by [`Timeout::deadline`], reports a
//! wait cut short with [`Timeout::timed_out`] and a body that ran too long
//! with [`Timeout::overran`].
//!
//! In the fixed order the timeout sits inside the rate limiter: a wait for a
//! rate-limiter permit is not part of the timeout, for sync and async calls
//! alike, and the deadline counts from when the permit was granted.
//!
//! # Precision
//!
//! [`Timeout::deadline`] reads the clock's precise [`now`](Clock::now). A
//! call composed with other policies (`Policies`, pipelines, generated
//! wrappers) does not pay for that reading unless it has to wait:
//!
//! - a sync call that waits for a bulkhead slot reads `now` when it starts
//!   waiting, and its deadline counts from there (a few nanoseconds after
//!   the timeout started); a call that gets its slot at once has nothing to
//!   cut short;
//! - an async call's deadline counts from a [`recent`](Clock::recent)
//!   reading at its start. If the call is still pending after its first
//!   poll, the deadline is settled: `recent + resolution + duration`, or
//!   `now + duration` read then if that is earlier. So while the clock works
//!   as designed (its recent readings at most [`resolution`](Clock::resolution)
//!   old), a call is never cut short before `duration` has passed, and is
//!   cut at most the resolution late (5 ms on the `SystemClock`, none on a
//!   `ManualClock`); a call whose first poll returns at once (it waits for
//!   I/O or a slot) gets `now + duration`, to the microsecond. A recent
//!   reading that lags by more than the resolution (a clock thread starved
//!   of CPU) can make the deadline that much early, less the resolution;

//! - a sync call's overrun (`Overrun` event, `took`) is measured between
//!   two recent readings: to within the resolution either way.
//!
//! - `config.rs`: [`TimeoutConfig`] and its builder;
//! - `future.rs`: [`TimeoutFuture`], the async call raced against its
//!   deadline.

mod config;
mod future;

pub use config::{TimeoutConfig, TimeoutConfigBuilder};
pub use future::TimeoutFuture;
pub(crate) use future::Within;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::clock::{Clock, Timeline};
use crate::context::{PolicyContext, policy_getters};
use crate::events::{Event, TimeoutEvent, TimeoutEventKind};
use crate::intern::intern;
use crate::rejection::CallTimeout;

/// A timeout policy: how long a call may take, measured on the policy's
/// clock.
///
/// Cheap to clone; clones share one configuration.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use bulkhead_core::{Timeout, TimeoutConfig};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let config = TimeoutConfig::builder()
///     .duration(Duration::from_millis(20))
///     .build()?;
/// let timeout = Timeout::new("search", config);
///
/// let quick = timeout.run(timeout.deadline(), async { 42 }).await;
/// assert_eq!(quick, Ok(42));
///
/// let stuck = timeout.run(timeout.deadline(), std::future::pending::<u32>()).await;
/// assert_eq!(stuck.unwrap_err().instance(), "search");
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Timeout {
    shared: Arc<Shared>,
}

struct Shared {
    instance: &'static str,
    config: TimeoutConfig,
    context: PolicyContext,
    /// The clock's resolution, read once.
    resolution: Duration,
    /// The duration in nanoseconds (saturating).
    nanos: u64,
}

/// When a [`TimeoutFuture`] ends its call.
#[derive(Debug, Clone, Copy)]
enum Deadline<'a> {
    /// At this instant, or never.
    At(Option<Instant>),
    /// `duration` after `start`, a recent reading on `timeline`, to be
    /// settled ([`Shared::settle`]) when it is first needed, or the call's
    /// deadline ([`crate::deadline`]) in force then if that comes first
    /// (a call through `Policies`).
    Recent { start: u64, timeline: &'a Timeline },
    /// At the call's deadline, which came before the timeout's own: the
    /// call ends with `DeadlineExceeded`, and the timeout publishes
    /// nothing.
    Scope(Instant),
}

impl Timeout {
    /// A timeout on the system clock that publishes no events.
    ///
    /// The instance id is interned: each distinct id is kept for the life of
    /// the process. Ids are meant to name the dependencies of a program, a
    /// bounded set; do not build one per request.
    pub fn new(instance: &str, config: TimeoutConfig) -> Self {
        Timeout::with_context(instance, config, PolicyContext::default())
    }

    /// A timeout measured on the context's clock, publishing its events to
    /// the context's bus.
    pub fn with_context(instance: &str, config: TimeoutConfig, context: PolicyContext) -> Self {
        Timeout {
            shared: Arc::new(Shared {
                instance: intern(instance),
                config,
                resolution: context.clock().resolution(),
                nanos: u64::try_from(config.duration().as_nanos()).unwrap_or(u64::MAX),
                context,
            }),
        }
    }

    /// How long a call may take.
    pub fn duration(&self) -> Duration {
        self.shared.config.duration()
    }

    /// The deadline of a call starting now: the clock's time plus the
    /// duration, or `None` (no deadline) if that is too far to represent.
    ///
    /// Take it once, after any rate-limiter permit and before waiting for a
    /// bulkhead slot, so that the wait for the slot counts towards the
    /// timeout.
    #[inline]
    pub fn deadline(&self) -> Option<Instant> {
        self.shared
            .context
            .clock()
            .now()
            .checked_add(self.shared.config.duration())
    }

    /// Reports an overrun if a sync call that ended at `now` ran past
    /// `deadline`.
    pub(crate) fn check_overrun(&self, deadline: Instant, now: Instant) {
        if now > deadline {
            let duration = self.duration();
            let started = deadline.checked_sub(duration).unwrap_or(deadline);
            self.overran(now.saturating_duration_since(started));
        }
    }

    /// Reports an overrun if a sync call took `took` nanoseconds (two
    /// readings' difference).
    #[inline]
    pub(crate) fn check_took(&self, took: u64) {
        if took > self.shared.nanos {
            self.overran(Duration::from_nanos(took));
        }
    }

    /// The clock it measures deadlines on.
    pub(crate) fn clock(&self) -> &Arc<dyn Clock> {
        self.shared.context.clock()
    }

    /// Runs `future` until it completes or `deadline` passes, whichever comes
    /// first; `None` never times out.
    ///
    /// See [`TimeoutFuture`] for what happens at the deadline.
    #[inline]
    pub fn run<F: Future>(&self, deadline: Option<Instant>, future: F) -> TimeoutFuture<'_, F> {
        TimeoutFuture::new(&self.shared, Deadline::At(deadline), future)
    }

    /// Runs `future` against the deadline of a call that started at
    /// `start`, a [`recent`](Clock::recent) reading of the clock on
    /// `timeline` (see the module's *Precision*): the deadline is settled if
    /// the call is still pending after its first poll, then to the call's
    /// deadline ([`crate::deadline`]) in force if that comes first: the
    /// future then ends with `DeadlineExceeded` (see [`Within`]).
    #[inline]
    pub(crate) fn run_from_recent<'a, F: Future>(
        &'a self,
        start: u64,
        timeline: &'a Timeline,
        future: F,
    ) -> Within<'a, F> {
        Within::new(TimeoutFuture::new(
            &self.shared,
            Deadline::Recent { start, timeline },
            future,
        ))
    }

    /// The rejection of a sync call whose wait for a bulkhead slot was cut
    /// short by its deadline; publishes `TimedOut`.
    #[must_use = "the rejection should be returned to the caller"]
    pub fn timed_out(&self) -> CallTimeout {
        self.shared.timed_out()
    }

    /// Reports a sync call that ran past its timeout and took `took` in all;
    /// its result is kept (a running thread cannot be pre-empted). Publishes
    /// `Overrun`.
    ///
    /// The caller decides what counts as overrunning, typically
    /// `took > duration()`.
    pub fn overran(&self, took: Duration) {
        let timeout = self.duration();
        self.shared
            .publish(TimeoutEventKind::Overrun { timeout, took });
    }
}

impl Shared {
    /// The deadline of a call that started at `start`, a recent reading
    /// on `timeline`, with the call pending now: never earlier than
    /// `duration` after the call really started while recent readings lag
    /// by at most the resolution (see the module's *Precision*); `None` if
    /// too far to represent.
    fn settle(&self, start: u64, timeline: &Timeline) -> Option<Instant> {
        let duration = self.config.duration();
        let late = timeline
            .instant(start)
            .checked_add(duration)
            .and_then(|deadline| deadline.checked_add(self.resolution));
        let from_now = self.context.clock().now().checked_add(duration);
        match (late, from_now) {
            (Some(late), Some(from_now)) => Some(late.min(from_now)),
            (late, from_now) => late.or(from_now),
        }
    }

    fn timed_out(&self) -> CallTimeout {
        let timeout = self.config.duration();
        self.publish(TimeoutEventKind::TimedOut { timeout });
        CallTimeout::new(self.instance)
    }

    fn publish(&self, kind: TimeoutEventKind) {
        let instance = self.instance;
        self.context
            .publish(|at| Event::Timeout(TimeoutEvent::new(instance, kind, at)));
    }
}

policy_getters!(Timeout: TimeoutConfig, Debug);

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::clock::{Clock, ManualClock};
    use crate::events::{EventBus, EventStream};

    fn timeout(clock: &ManualClock) -> (Timeout, EventStream) {
        let bus = EventBus::default();
        let events = bus.subscribe();
        let context = PolicyContext::new(Arc::new(clock.clone())).with_events(bus);
        let config = TimeoutConfig::default();
        (
            Timeout::with_context("timeout-sync", config, context),
            events,
        )
    }

    fn kinds(events: &mut EventStream) -> Vec<TimeoutEventKind> {
        events
            .drain()
            .map(|event| match event {
                Event::Timeout(event) => {
                    assert_eq!(event.instance, "timeout-sync");
                    event.kind
                }
                other => panic!("not a timeout event: {other:?}"),
            })
            .collect()
    }

    #[test]
    fn the_deadline_is_the_clock_plus_the_duration() {
        let clock = ManualClock::new();
        let (timeout, _events) = timeout(&clock);
        clock.advance(Duration::from_secs(7));
        assert_eq!(
            timeout.deadline(),
            Some(clock.now() + Duration::from_secs(1))
        );
        assert_eq!(timeout.duration(), Duration::from_secs(1));
        assert_eq!(timeout.config(), TimeoutConfig::default());
    }

    #[test]
    fn a_duration_too_long_to_represent_means_no_deadline() {
        let config = TimeoutConfig::builder()
            .duration(Duration::MAX)
            .build()
            .unwrap();
        let timeout = Timeout::new("timeout-forever", config);
        assert_eq!(timeout.deadline(), None);
    }

    #[test]
    fn a_sync_wait_cut_short_is_a_call_timeout_and_an_event() {
        let clock = ManualClock::new();
        let (timeout, mut events) = timeout(&clock);
        let rejection = timeout.timed_out();
        assert_eq!(rejection.instance(), "timeout-sync");
        assert_eq!(
            kinds(&mut events),
            [TimeoutEventKind::TimedOut {
                timeout: Duration::from_secs(1)
            }]
        );
    }

    #[test]
    fn a_sync_overrun_is_reported() {
        let clock = ManualClock::new();
        let (timeout, mut events) = timeout(&clock);
        timeout.overran(Duration::from_millis(1500));
        assert_eq!(
            kinds(&mut events),
            [TimeoutEventKind::Overrun {
                timeout: Duration::from_secs(1),
                took: Duration::from_millis(1500),
            }]
        );
    }

    #[test]
    fn policies_are_send_sync_and_cheap_to_clone() {
        fn bounds<T: Send + Sync + Clone + 'static>() {}
        bounds::<Timeout>();
        bounds::<TimeoutConfig>();
    }
}
