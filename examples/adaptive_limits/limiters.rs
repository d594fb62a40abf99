//! The limiters on trial: a static limit and ours, as bulkheads of a
//! registry on the simulation's `ManualClock`, and tower-resilience's
//! adaptive layer over the simulated dependency.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering::Relaxed};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bulkhead::adaptive::Sampling;
use bulkhead::{Adaptive, BulkheadConfig, CallOutcome, ManualClock, OwnedBulkheadPermit, Registry};
use tower::{Layer, Service};
use tower_resilience::adaptive::{
    AdaptiveFuture, AdaptiveLimiterLayer, AdaptiveService, Aimd, ConcurrencyAlgorithm, Vegas,
};

use crate::{SLO, ceiling, initial, model};

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Static,
    Ours(Adaptive),
    TowerAimd,
    TowerVegas,
}

impl Kind {
    pub(crate) const ALL: [Kind; 6] = [
        Kind::Static,
        Kind::Ours(Adaptive::Aimd),
        Kind::Ours(Adaptive::Vegas),
        Kind::Ours(Adaptive::Gradient2),
        Kind::TowerAimd,
        Kind::TowerVegas,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Static => "static C",
            Kind::Ours(Adaptive::Aimd) => "ours: aimd",
            Kind::Ours(Adaptive::Vegas) => "ours: vegas",
            Kind::Ours(_) => "ours: gradient2",
            Kind::TowerAimd => "tower-resilience Aimd",
            Kind::TowerVegas => "tower-resilience Vegas",
        }
    }

    pub(crate) fn colour(self) -> &'static str {
        match self {
            Kind::Static => "#888888",
            Kind::Ours(Adaptive::Aimd) => "#1f77b4",
            Kind::Ours(Adaptive::Vegas) => "#2ca02c",
            Kind::Ours(_) => "#d62728",
            Kind::TowerAimd => "#9467bd",
            Kind::TowerVegas => "#ff7f0e",
        }
    }

    pub(crate) fn ours(self) -> bool {
        matches!(self, Kind::Ours(_))
    }
}

/// What a limiter gives an admitted call.
pub(crate) enum Ticket {
    Permit(OwnedBulkheadPermit),
    /// The future tower-resilience's layer returned, and the flag that
    /// lets the dependency under it answer.
    Tower {
        future: AdaptiveFuture<(), Fault>,
        answer: Arc<AtomicU8>,
    },
}

/// The error of a call chaos failed, as tower-resilience's layer sees it.
#[derive(Debug)]
pub(crate) struct Fault;

/// An [`Answer`]'s flag: not yet, a success, a failure.
const PENDING: u8 = 0;
const OK: u8 = 1;
const FAILED: u8 = 2;

/// The dependency as a tower service: each call's future is ready once the
/// simulation sets its flag, `Ok` or `Err` as the flag says.
#[derive(Clone)]
pub(crate) struct Dependency;

/// A call to the [`Dependency`], answered when its flag is set.
pub(crate) struct Answer(Arc<AtomicU8>);

impl Future for Answer {
    type Output = Result<(), Fault>;

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        match self.0.load(Relaxed) {
            PENDING => Poll::Pending,
            OK => Poll::Ready(Ok(())),
            _ => Poll::Ready(Err(Fault)),
        }
    }
}

impl Service<Arc<AtomicU8>> for Dependency {
    type Response = ();
    type Error = Fault;
    type Future = Answer;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Fault>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, answer: Arc<AtomicU8>) -> Answer {
        Answer(answer)
    }
}

/// tower-resilience's algorithm, handed the simulated latency of the call
/// that ends instead of the wall-clock time its layer measured.
pub(crate) struct Simulated {
    algorithm: Box<dyn ConcurrencyAlgorithm>,
    latency: Arc<AtomicU64>,
}

impl ConcurrencyAlgorithm for Simulated {
    fn record_success(&self, _wall_clock: Duration) {
        let latency = Duration::from_nanos(self.latency.load(Relaxed));
        self.algorithm.record_success(latency);
    }

    fn record_failure(&self) {
        self.algorithm.record_failure();
    }

    fn record_dropped(&self) {
        self.algorithm.record_dropped();
    }

    fn limit(&self) -> usize {
        self.algorithm.limit()
    }

    fn min_limit(&self) -> usize {
        self.algorithm.min_limit()
    }

    fn max_limit(&self) -> usize {
        self.algorithm.max_limit()
    }
}

pub(crate) enum Limiter {
    /// Ours (and the static limit): a bulkhead of a registry on the
    /// simulation's clock.
    Bulkhead {
        bulkhead: bulkhead::Bulkhead,
        clock: ManualClock,
        at: u64,
    },
    /// tower-resilience's layer over the dependency.
    Tower {
        service: AdaptiveService<Dependency, Simulated>,
        latency: Arc<AtomicU64>,
    },
}

impl Limiter {
    pub(crate) fn new(kind: Kind) -> Limiter {
        let tower = |algorithm: Box<dyn ConcurrencyAlgorithm>| {
            let latency = Arc::new(AtomicU64::new(0));
            let simulated = Simulated {
                algorithm,
                latency: Arc::clone(&latency),
            };
            Limiter::Tower {
                service: AdaptiveLimiterLayer::new(simulated).layer(Dependency),
                latency,
            }
        };
        let spec = match kind {
            Kind::TowerAimd => {
                let aimd = Aimd::builder()
                    .initial_limit(initial() as usize)
                    .max_limit(ceiling() as usize)
                    // The most favourable threshold: the latency objective.
                    .latency_threshold(Duration::from_secs_f64(SLO * model().b))
                    .build()
                    .expect("valid");
                return tower(Box::new(aimd));
            }
            Kind::TowerVegas => {
                let vegas = Vegas::builder()
                    .initial_limit(initial() as usize)
                    .max_limit(ceiling() as usize)
                    .build()
                    .expect("valid");
                return tower(Box::new(vegas));
            }
            Kind::Static => BulkheadConfig::builder()
                .max_concurrent((model().c * model().static_limit).round() as u32),
            Kind::Ours(adaptive) => ours(adaptive),
        };
        Limiter::bulkhead(&spec)
    }

    /// Ours, `adaptive`, with `Sampling::errors_as_drops` (the cold start
    /// into failures, `cold.rs`).
    pub(crate) fn errors_as_drops(adaptive: Adaptive) -> Limiter {
        let sampling = Sampling::builder()
            .errors_as_drops(true)
            .build()
            .expect("valid");
        Limiter::bulkhead(&ours(adaptive).sampling(sampling))
    }

    /// A static limit of `limit` calls (the sweep of `real.rs`).
    pub(crate) fn fixed(limit: u32) -> Limiter {
        Limiter::bulkhead(&BulkheadConfig::builder().max_concurrent(limit))
    }

    /// A bulkhead of `spec`, of a registry on a `ManualClock` of its own.
    fn bulkhead(spec: &bulkhead::BulkheadConfigBuilder) -> Limiter {
        let clock = ManualClock::new();
        let registry = Registry::builder().clock(clock.clone()).build();
        let bulkhead = registry
            .bulkhead_policy("dependency", "adaptive_limits", spec)
            .expect("a valid bulkhead");
        Limiter::Bulkhead {
            bulkhead,
            clock,
            at: 0,
        }
    }

    /// Moves the limiter's clock to `now`.
    pub(crate) fn at(&mut self, now: u64) {
        if let Limiter::Bulkhead { clock, at, .. } = self
            && now > *at
        {
            clock.advance(Duration::from_nanos(now - *at));
            *at = now;
        }
    }

    pub(crate) fn admit(&mut self) -> Option<Ticket> {
        match self {
            Limiter::Bulkhead { bulkhead, .. } => {
                bulkhead.try_enter_owned().ok().map(Ticket::Permit)
            }
            Limiter::Tower { service, .. } => {
                // A clone per caller, as tower's `Buffer` or a server's
                // connections make them; not ready at once is a rejection
                // (dropping the clone leaves the layer's wait queue).
                let mut caller = service.clone();
                let mut cx = Context::from_waker(Waker::noop());
                match caller.poll_ready(&mut cx) {
                    Poll::Ready(Ok(())) => {
                        let answer = Arc::new(AtomicU8::new(PENDING));
                        let future = caller.call(Arc::clone(&answer));
                        Some(Ticket::Tower { future, answer })
                    }
                    Poll::Ready(Err(_)) | Poll::Pending => None,
                }
            }
        }
    }

    /// Ends an admitted call after `latency`: it succeeded (`ok`), or
    /// chaos failed it.
    pub(crate) fn complete(&mut self, ticket: Ticket, latency: Duration, ok: bool) {
        match (self, ticket) {
            (Limiter::Tower { latency: cell, .. }, Ticket::Tower { mut future, answer }) => {
                cell.store(latency.as_nanos() as u64, Relaxed);
                answer.store(if ok { OK } else { FAILED }, Relaxed);
                let mut cx = Context::from_waker(Waker::noop());
                let ended = Pin::new(&mut future).poll(&mut cx);
                assert!(
                    matches!(ended, Poll::Ready(Ok(()))) == ok && matches!(ended, Poll::Ready(_)),
                    "the layer passes the answer on"
                );
            }
            (Limiter::Bulkhead { .. }, Ticket::Permit(mut permit)) => {
                // How the call ended, as a pipeline sets it: a success, or
                // an error (`CallOutcome::of` an `Err(Rejection::Injected)`).
                permit.set_outcome(if ok {
                    CallOutcome::Success
                } else {
                    CallOutcome::Error
                });
            }
            _ => unreachable!("a ticket goes back to the limiter that gave it"),
        }
    }

    /// Ends an admitted call the caller's timeout dropped after `latency`
    /// (an outage hung it): ours are told `CallOutcome::Dropped`, and
    /// tower-resilience's layer has its future dropped unanswered.
    pub(crate) fn time_out(&mut self, ticket: Ticket, latency: Duration) {
        match (self, ticket) {
            (Limiter::Tower { latency: cell, .. }, Ticket::Tower { future, .. }) => {
                cell.store(latency.as_nanos() as u64, Relaxed);
                drop(future);
            }
            (Limiter::Bulkhead { .. }, Ticket::Permit(mut permit)) => {
                permit.set_outcome(CallOutcome::Dropped);
            }
            _ => unreachable!("a ticket goes back to the limiter that gave it"),
        }
    }

    /// The windows its algorithm closed so far (ours; `None` for the
    /// others).
    pub(crate) fn windows(&self) -> Option<u64> {
        match self {
            Limiter::Bulkhead { bulkhead, .. } => bulkhead.adaptive().map(|a| a.windows),
            Limiter::Tower { .. } => None,
        }
    }

    pub(crate) fn limit(&self) -> u32 {
        match self {
            Limiter::Bulkhead { bulkhead, .. } => bulkhead.max_concurrent(),
            Limiter::Tower { service, .. } => service.limit() as u32,
        }
    }

    pub(crate) fn probing(&self) -> bool {
        match self {
            Limiter::Bulkhead { bulkhead, .. } => bulkhead.adaptive().is_some_and(|a| a.probing),
            Limiter::Tower { .. } => false,
        }
    }

    pub(crate) fn no_load(&self) -> Option<f64> {
        match self {
            Limiter::Bulkhead { bulkhead, .. } => {
                bulkhead.adaptive()?.no_load.map(|d| d.as_secs_f64())
            }
            Limiter::Tower { .. } => None,
        }
    }
}

/// Ours, `adaptive`: its ceiling, its start, and the flags' tunables.
fn ours(adaptive: Adaptive) -> bulkhead::BulkheadConfigBuilder {
    let mut spec = BulkheadConfig::builder()
        .max_concurrent(ceiling())
        .initial_concurrent(initial())
        .adaptive(adaptive);
    if let Some((alpha, beta)) = model().vegas {
        spec = spec.vegas(
            bulkhead::adaptive::Vegas::builder()
                .alpha(alpha)
                .beta(beta)
                .build()
                .expect("valid"),
        );
    }
    match model().tolerance {
        None => spec,
        Some(tolerance) => spec
            .aimd(
                bulkhead::adaptive::Aimd::builder()
                    .rtt_tolerance(tolerance)
                    .build()
                    .expect("valid"),
            )
            .gradient2(
                bulkhead::adaptive::Gradient2::builder()
                    .rtt_tolerance(tolerance)
                    .build()
                    .expect("valid"),
            ),
    }
}
