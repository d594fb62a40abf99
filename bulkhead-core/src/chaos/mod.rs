//! The chaos policy: faults and latency injected into calls on purpose,
//! to see what the other policies and their callers make of them.
//!
//! Innermost in the fixed order, `Bulkhead( Chaos( call ) )`: an injected
//! latency holds the call's bulkhead slot as a slow dependency would, and
//! counts towards its timeout (an async call is cut at its deadline); an
//! injected fault (`Rejection::Injected`) is seen by the outer policies as
//! any rejection is: the breaker records it, the retry retries it, the
//! fallback may answer it.
//!
//! # Determinism
//!
//! What chaos does to a call is a pure function of the seed and the call's
//! number (the calls made while it is enabled, counted from 0, and again
//! from 0 when a reload changes the seed): the same seed gives the same
//! injections to the same sequence of calls. Latencies are slept on the
//! policy's clock, so a `ManualClock` drives them in tests.
//!
//! # Cost
//!
//! Disabled (the default), a call costs one relaxed load. Enabled, one
//! `fetch_add` and a few multiplications, and whatever it injects.
//!
//! - `config.rs`: [`ChaosConfig`], its builder and [`ChaosFault`];
//! - `draw.rs`: the decision for one call, from the seed and its number;
//! - `live.rs`: the settings calls read, which a reload rewrites.

mod config;
mod draw;
mod live;
#[cfg(all(test, loom))]
mod loom_tests;

pub use config::{ChaosConfig, ChaosConfigBuilder, ChaosFault, ChaosLatency};

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::{Sleep, sleep_blocking};
use crate::context::PolicyContext;
use crate::events::{ChaosEvent, ChaosEventKind, Event};
use crate::intern::intern;
use crate::rejection::InjectedFault;
use draw::Draw;
use live::Live;

/// A chaos policy: injects faults and latency into a share of the calls it
/// sees, while it is enabled.
///
/// Cheap to clone; clones share one configuration and one count of calls.
/// Every key can change while calls run ([`set_config`](Self::set_config),
/// which a registry's reload calls).
///
/// # Examples
///
/// ```
/// use bulkhead_core::{Chaos, ChaosConfig, RejectionKind};
///
/// let config = ChaosConfig::builder()
///     .enabled(true)
///     .fault_rate(1.0)
///     .seed(7)
///     .build()?;
/// let chaos = Chaos::new("payments", config);
/// let fault = chaos.inject().unwrap_err();
/// assert_eq!(fault.instance(), "payments");
///
/// chaos.set_config(ChaosConfig::default()); // disabled: nothing injected
/// assert!(chaos.inject().is_ok());
/// # Ok::<(), bulkhead_core::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct Chaos {
    shared: Arc<Shared>,
}

struct Shared {
    instance: &'static str,
    context: PolicyContext,
    live: Live,
}

/// What a chaos policy injects into one call (from [`Chaos::draw`]): a
/// latency before it, a fault in its place, or both (the latency first).
#[derive(Debug)]
#[must_use = "an injection does nothing until it is applied"]
pub struct Injection<'a> {
    chaos: &'a Chaos,
    latency: Option<Duration>,
    fault: Option<ChaosFault>,
}

impl Chaos {
    /// A chaos policy on the system clock that publishes no events.
    ///
    /// The instance id is interned: each distinct id is kept for the life of
    /// the process. Ids are meant to name the dependencies of a program, a
    /// bounded set; do not build one per request.
    pub fn new(instance: &str, config: ChaosConfig) -> Self {
        Chaos::with_context(instance, config, PolicyContext::default())
    }

    /// A chaos policy sleeping on the context's clock, publishing its
    /// events to the context's bus.
    pub fn with_context(instance: &str, config: ChaosConfig, context: PolicyContext) -> Self {
        Chaos {
            shared: Arc::new(Shared {
                instance: intern(instance),
                context,
                live: Live::new(config),
            }),
        }
    }

    /// The instance id.
    pub fn instance(&self) -> &'static str {
        self.shared.instance
    }

    /// The configuration it runs with now.
    pub fn config(&self) -> ChaosConfig {
        self.shared.live.config()
    }

    /// Whether it injects anything now.
    pub fn is_enabled(&self) -> bool {
        self.shared.live.enabled()
    }

    /// Runs the calls that follow with `config`: every key takes effect at
    /// once (a call running meanwhile may see some of the new values and
    /// not others). A new seed starts the count of calls again.
    pub fn set_config(&self, config: ChaosConfig) {
        self.shared.live.set(config);
    }

    /// What to inject into the call about to be made: `None` when the
    /// policy is disabled (one load) or drew nothing for this call.
    #[inline]
    pub fn draw(&self) -> Option<Injection<'_>> {
        if self.shared.live.enabled() {
            self.draw_enabled()
        } else {
            None
        }
    }

    #[cold]
    #[inline(never)]
    fn draw_enabled(&self) -> Option<Injection<'_>> {
        let live = &self.shared.live;
        let (seed, n, odds) = live.next();
        let draw = Draw::of(seed, n, &odds);
        draw.injects().then(|| Injection {
            chaos: self,
            latency: draw.latency,
            fault: draw.fault.then(|| live.fault()),
        })
    }

    /// Injects into a sync call about to be made what [`draw`](Self::draw)
    /// gives, blocking the thread for a latency: see
    /// [`Injection::apply`].
    ///
    /// # Errors
    ///
    /// [`InjectedFault`] if a fault takes the call's place.
    ///
    /// # Panics
    ///
    /// If a fault takes the call's place and the policy's `fault` is
    /// `panic`.
    #[inline]
    pub fn inject(&self) -> Result<(), InjectedFault> {
        match self.draw() {
            None => Ok(()),
            Some(injection) => injection.apply(),
        }
    }

    fn publish(&self, kind: ChaosEventKind) {
        let instance = self.shared.instance;
        self.shared
            .context
            .publish(|at| Event::Chaos(ChaosEvent::new(instance, kind, at)));
    }

    /// The fault that takes a call's place: a rejection, or a panic.
    fn fault(&self, fault: ChaosFault) -> InjectedFault {
        match fault {
            ChaosFault::Error => {
                self.publish(ChaosEventKind::FaultInjected);
                InjectedFault::new(self.shared.instance)
            }
            ChaosFault::Panic => {
                self.publish(ChaosEventKind::PanicInjected);
                panic!("chaos {:?} injected a panic", self.shared.instance)
            }
        }
    }

    /// Publishes a latency about to be slept, and when it ends on the
    /// clock (`None`: too far to represent).
    fn delay(&self, latency: Duration) -> Option<std::time::Instant> {
        self.publish(ChaosEventKind::LatencyInjected { latency });
        self.shared.context.clock().now().checked_add(latency)
    }
}

impl Injection<'_> {
    /// The latency injected before the call, if any.
    pub fn latency(&self) -> Option<Duration> {
        self.latency
    }

    /// The fault that takes the call's place, if any.
    pub fn fault(&self) -> Option<ChaosFault> {
        self.fault
    }

    /// Sleeps the latency on the policy's clock, blocking the thread, then
    /// injects the fault; publishes `LatencyInjected`, then
    /// `FaultInjected` or `PanicInjected`.
    ///
    /// # Errors
    ///
    /// [`InjectedFault`] if a fault takes the call's place.
    ///
    /// # Panics
    ///
    /// If the fault is [`ChaosFault::Panic`].
    pub fn apply(self) -> Result<(), InjectedFault> {
        if let Some(latency) = self.latency {
            let clock = &**self.chaos.shared.context.clock();
            match self.chaos.delay(latency) {
                Some(until) => sleep_blocking(clock, until),
                None => loop {
                    std::thread::park();
                },
            }
        }
        self.faulted()
    }

    /// As [`apply`](Self::apply), sleeping without blocking a thread.
    ///
    /// # Errors
    ///
    /// As for [`apply`](Self::apply).
    ///
    /// # Panics
    ///
    /// As for [`apply`](Self::apply), when polled.
    pub async fn apply_async(self) -> Result<(), InjectedFault> {
        if let Some(latency) = self.latency {
            let sleep = match self.chaos.delay(latency) {
                Some(until) => self.chaos.shared.context.clock().sleep_until(until),
                None => Sleep::new(std::future::pending()),
            };
            sleep.await;
        }
        self.faulted()
    }

    fn faulted(&self) -> Result<(), InjectedFault> {
        match self.fault {
            None => Ok(()),
            Some(fault) => Err(self.chaos.fault(fault)),
        }
    }
}

impl fmt::Debug for Chaos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Chaos")
            .field("instance", &self.shared.instance)
            .field("config", &self.config())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
