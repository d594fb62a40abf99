//! The policies of one call, composed in the one fixed order:
//!
//! ```text
//! Fallback( Retry( Hedge( CircuitBreaker( RateLimiter( Timeout( Bulkhead( Chaos( call ) ) ) ) ) ) ) )
//! ```
//!
//! whatever order they were declared in. What follows from the order:
//!
//! - a bulkhead slot is held only while the call runs, never during a retry
//!   delay;
//! - each attempt of a hedged call goes through the breaker, the rate
//!   limiter, the timeout and the bulkhead on its own, and each attempt the
//!   retry makes is hedged anew;
//! - the fallback sees the outcome of the last attempt, and answers outside
//!   every other policy (its answer is the caller's to make: see
//!   [`Fallback`]);
//! - a rejection from an inner policy (a full bulkhead, a timeout, no
//!   rate-limiter permit) is an outcome like any other to the outer ones: the
//!   retry retries it unless its kind is in `abort_on`, the breaker records
//!   it as a failure unless its kind is in `ignore_on`;
//! - the time spent waiting for a bulkhead slot counts towards the timeout;
//! - a call the bulkhead rejects has already taken a rate-limiter permit;
//! - a latency chaos injects holds the call's bulkhead slot and counts
//!   towards its timeout, and a fault it injects (`Rejection::Injected`) is
//!   an outcome like any rejection to the outer policies.
//!
//! Policies that are not there cost nothing but a branch; policies that are
//! there but not triggered allocate nothing and cost a few nanoseconds plus
//! the clock readings they need: a timed breaker, a rate limiter and a
//! timeout need the time, and share one reading at the start of an attempt
//! and one at its end when they run on the same clock. Those are
//! [`recent`](Clock::recent) readings (an atomic load on the
//! `SystemClock`), precise ones only where a policy needs them: a breaker
//! whose `slow_call_threshold` is under 20 times the clock's resolution
//! (100 ms on the `SystemClock`) times calls on `now`, a timeout reads `now`
//! when a call has to wait, and a rate limiter near the end of a period or
//! when it has no permit left (see each policy).

mod future;
mod lend;
mod record;

pub use lend::{Lend, Lent};
#[allow(unsafe_code)]
mod one_task;
mod sync;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::bulkhead::Bulkhead;
use crate::chaos::Chaos;
use crate::circuit_breaker::{BreakerOutcome, BreakerPermit, CircuitBreaker};
use crate::clock::{Clock, SystemClock, Timeline};
use crate::fallback::Fallback;
use crate::hedge::Hedge;
use crate::rate_limiter::RateLimiter;
use crate::rejection::{CallError, DeadlineExceeded, Rejection, RejectionKind};
use crate::retry::{AttemptFailure, Retry};
use crate::telemetry::InstanceTelemetry;
use crate::timeout::Timeout;

/// The set of policies a call runs under, composed in the fixed order
/// `Fallback( Retry( Hedge( CircuitBreaker( RateLimiter( Timeout( Bulkhead(
/// Chaos( call ) ) ) ) ) ) ) )` whatever order they were added in. Cheap to clone
/// (each policy is a handle to shared state).
///
/// Two of them are applied in part by the caller: a hedge runs only the
/// async calls made with [`call_hedged`](Self::call_hedged) (`call` and
/// `call_async` make one attempt at a time, and their futures do not carry
/// the hedged attempts), and a fallback is only held here, for the caller
/// to ask ([`Fallback::answers`]) and to answer with its own method,
/// outside every policy.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use bulkhead_core::{Bulkhead, BulkheadConfig, CallError, Classifier, Policies, Retry, RetryConfig};
///
/// let policies = Policies::new()
///     .with_retry(Retry::new("db", RetryConfig::builder().wait(Duration::ZERO).build()?))
///     .with_bulkhead(Bulkhead::new("db", BulkheadConfig::default()));
///
/// let mut attempts = 0;
/// let result: Result<u32, CallError<&str>> = policies.call(&Classifier::new(), || {
///     attempts += 1;
///     if attempts < 3 { Err("flaky") } else { Ok(attempts) }
/// });
/// assert_eq!(result, Ok(3));
/// # Ok::<(), bulkhead_core::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct Policies {
    fallback: Option<Fallback>,
    retry: Option<Retry>,
    hedge: Option<Hedge>,
    circuit_breaker: Option<CircuitBreaker>,
    rate_limiter: Option<RateLimiter>,
    timeout: Option<Timeout>,
    bulkhead: Option<Bulkhead>,
    chaos: Option<Chaos>,
    /// Measures call durations (slow calls), and gives the breaker its
    /// seconds when it shares the clock.
    clock: Timeline,
    /// The rate limiter's clock (a clone of `clock` when shared), and when
    /// its first period began on it.
    limiter_clock: Timeline,
    limiter_origin: i64,
    /// The timeout's clock (a clone of `clock` when shared).
    timeout_clock: Timeline,
    /// When the breaker was created, on `clock`.
    breaker_origin: i64,
    /// Whether the circuit breaker, the rate limiter and the timeout (those
    /// present) run on `clock`, so that one reading of it can serve them
    /// all.
    shares_clock: bool,
    /// Whether the breaker times calls on precise readings (its
    /// `slow_call_threshold` is short for the clock's resolution), which
    /// then serve the other policies too.
    precise: bool,
    /// The histograms of its instance (a registry's compositions).
    telemetry: Option<Arc<InstanceTelemetry>>,
}

/// A breaker times calls on recent readings if its `slow_call_threshold` is
/// at least this many times the clock's resolution (within 5% of it).
const RECENT_TIMING: u32 = 20;

impl Policies {
    /// No policy at all: calls pass straight through, measured on the system
    /// clock if a later policy needs to.
    pub fn new() -> Self {
        Policies::on_clock(Arc::new(SystemClock))
    }

    /// No policy yet; durations are measured on `clock` (the registry's).
    pub fn on_clock(clock: Arc<dyn Clock>) -> Self {
        let clock = Timeline::new(clock);
        Policies {
            fallback: None,
            retry: None,
            hedge: None,
            circuit_breaker: None,
            rate_limiter: None,
            timeout: None,
            bulkhead: None,
            chaos: None,
            limiter_clock: clock.clone(),
            limiter_origin: 0,
            timeout_clock: clock.clone(),
            breaker_origin: 0,
            clock,
            shares_clock: true,
            precise: false,
            telemetry: None,
        }
    }

    /// Records its calls into `telemetry` (its instance's histograms)
    /// whenever their hub records: call and attempt durations, and the
    /// waits for a bulkhead slot (see [`TelemetryHub`](crate::TelemetryHub)).
    #[must_use]
    pub fn with_telemetry(mut self, telemetry: Arc<InstanceTelemetry>) -> Self {
        self.telemetry = Some(telemetry);
        self
    }

    /// Its instance's telemetry, if it has any.
    pub fn telemetry(&self) -> Option<&Arc<InstanceTelemetry>> {
        self.telemetry.as_ref()
    }

    /// What a call records into, if its telemetry records. In a process
    /// where no hub records, one load of a static and a branch; otherwise
    /// two dependent loads more (the instance's telemetry, then whether it
    /// records).
    #[inline(always)]
    fn recorder(&self) -> Option<crate::telemetry::Recorder<'_>> {
        if !crate::telemetry::any_recording() {
            return None;
        }
        match &self.telemetry {
            None => None,
            Some(telemetry) => telemetry.recorder(),
        }
    }

    /// Adds (or replaces) the fallback policy.
    #[must_use]
    pub fn with_fallback(mut self, fallback: Fallback) -> Self {
        self.fallback = Some(fallback);
        self
    }

    /// Adds (or replaces) the retry policy.
    #[must_use]
    pub fn with_retry(mut self, retry: Retry) -> Self {
        self.retry = Some(retry);
        self
    }

    /// Adds (or replaces) the hedge policy.
    #[must_use]
    pub fn with_hedge(mut self, hedge: Hedge) -> Self {
        self.hedge = Some(hedge);
        self
    }

    /// Adds (or replaces) the circuit breaker.
    #[must_use]
    pub fn with_circuit_breaker(mut self, circuit_breaker: CircuitBreaker) -> Self {
        let threshold = circuit_breaker.config().slow_call_threshold();
        self.breaker_origin = self.clock.offset(circuit_breaker.origin());
        self.precise = self
            .clock
            .clock()
            .resolution()
            .checked_mul(RECENT_TIMING)
            .is_none_or(|enough| threshold < enough);
        self.circuit_breaker = Some(circuit_breaker);
        self.share_clock_if_one()
    }

    /// Adds (or replaces) the rate limiter.
    #[must_use]
    pub fn with_rate_limiter(mut self, rate_limiter: RateLimiter) -> Self {
        self.limiter_clock = self.timeline_of(rate_limiter.clock());
        self.limiter_origin = self.limiter_clock.offset(rate_limiter.origin());
        self.rate_limiter = Some(rate_limiter);
        self.share_clock_if_one()
    }

    /// Adds (or replaces) the timeout.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Timeout) -> Self {
        self.timeout_clock = self.timeline_of(timeout.clock());
        self.timeout = Some(timeout);
        self.share_clock_if_one()
    }

    /// Readings of `clock`: the composition's own if it is the same clock.
    fn timeline_of(&self, clock: &Arc<dyn Clock>) -> Timeline {
        if Arc::ptr_eq(clock, self.clock.clock()) {
            self.clock.clone()
        } else {
            Timeline::new(Arc::clone(clock))
        }
    }

    /// A reading of `clock` for the policies: recent, unless the breaker
    /// needs precise ones.
    #[inline]
    fn read(&self, clock: &Timeline) -> u64 {
        if self.precise {
            clock.now()
        } else {
            clock.recent()
        }
    }

    /// Decides whether one clock reading can serve every policy that reads
    /// the clock: only if they all run on the same clock (the registry's).
    fn share_clock_if_one(mut self) -> Self {
        let same = |clock: &Arc<dyn Clock>| Arc::ptr_eq(clock, self.clock.clock());
        self.shares_clock = self
            .circuit_breaker
            .as_ref()
            .is_none_or(|c| same(c.clock()))
            && self.rate_limiter.as_ref().is_none_or(|r| same(r.clock()))
            && self.timeout.as_ref().is_none_or(|t| same(t.clock()));
        self
    }

    /// Adds (or replaces) the bulkhead.
    #[must_use]
    pub fn with_bulkhead(mut self, bulkhead: Bulkhead) -> Self {
        self.bulkhead = Some(bulkhead);
        self
    }

    /// Adds (or replaces) the chaos policy.
    #[must_use]
    pub fn with_chaos(mut self, chaos: Chaos) -> Self {
        self.chaos = Some(chaos);
        self
    }

    /// The fallback policy, if any.
    pub fn fallback(&self) -> Option<&Fallback> {
        self.fallback.as_ref()
    }

    /// The retry policy, if any.
    pub fn retry(&self) -> Option<&Retry> {
        self.retry.as_ref()
    }

    /// The hedge policy, if any.
    pub fn hedge(&self) -> Option<&Hedge> {
        self.hedge.as_ref()
    }

    /// The circuit breaker, if any.
    pub fn circuit_breaker(&self) -> Option<&CircuitBreaker> {
        self.circuit_breaker.as_ref()
    }

    /// Whether the retry tries an attempt again after `rejection` (unless
    /// its `abort_on` lists the kind): for a refusal that reaches the
    /// policies from inside the call (a keyed bulkhead's).
    #[doc(hidden)]
    pub fn retries_rejection(&self, rejection: &Rejection) -> bool {
        !self
            .retry()
            .is_some_and(|retry| retry.config().abort_on().contains(rejection.kind()))
    }

    /// Whether the breaker records `rejection` as a failure (unless its
    /// `ignore_on` lists the kind), as [`retries_rejection`](Self::retries_rejection).
    #[doc(hidden)]
    pub fn records_rejection(&self, rejection: &Rejection) -> bool {
        !self
            .circuit_breaker()
            .is_some_and(|breaker| breaker.config().ignore_on().contains(rejection.kind()))
    }

    /// The rate limiter, if any.
    pub fn rate_limiter(&self) -> Option<&RateLimiter> {
        self.rate_limiter.as_ref()
    }

    /// The timeout, if any.
    pub fn timeout(&self) -> Option<&Timeout> {
        self.timeout.as_ref()
    }

    /// The bulkhead, if any.
    pub fn bulkhead(&self) -> Option<&Bulkhead> {
        self.bulkhead.as_ref()
    }

    /// The chaos policy, if any.
    pub fn chaos(&self) -> Option<&Chaos> {
        self.chaos.as_ref()
    }

    /// The least time an attempt needs before the call's deadline: the
    /// retry's `min_attempt_time`, zero without a retry.
    fn min_attempt_time(&self) -> Duration {
        self.retry
            .as_ref()
            .map_or(Duration::ZERO, |retry| retry.config().min_attempt_time())
    }

    /// Whether an attempt may start under the call's `deadline` (on the
    /// composition's clock): not if it would start with `min_attempt_time`
    /// or less left ([`late`](Self::late)). Out of line: only a call under
    /// a deadline comes here.
    #[inline(never)]
    fn in_time(&self, deadline: Instant) -> bool {
        let now = self.clock.clock().now();
        deadline.saturating_duration_since(now) > self.min_attempt_time()
    }

    /// The refusal of an attempt its deadline leaves no time for:
    /// `DeadlineExceeded`, naming the retry, else the outermost policy.
    #[cold]
    #[inline(never)]
    fn late(&self) -> Rejection {
        DeadlineExceeded::new(self.outermost()).into()
    }

    /// The instance that refuses a call its deadline leaves no time for:
    /// the retry's, else the outermost policy's.
    fn outermost(&self) -> &'static str {
        let retry = self.retry.as_ref().map(Retry::instance);
        let hedge = || self.hedge.as_ref().map(Hedge::instance);
        let breaker = || self.circuit_breaker.as_ref().map(CircuitBreaker::instance);
        let limiter = || self.rate_limiter.as_ref().map(RateLimiter::instance);
        let timeout = || self.timeout.as_ref().map(Timeout::instance);
        let bulkhead = || self.bulkhead.as_ref().map(Bulkhead::instance);
        let chaos = || self.chaos.as_ref().map(Chaos::instance);
        let fallback = || self.fallback.as_ref().map(Fallback::instance);
        retry
            .or_else(hedge)
            .or_else(breaker)
            .or_else(limiter)
            .or_else(timeout)
            .or_else(bulkhead)
            .or_else(chaos)
            .or_else(fallback)
            .unwrap_or("")
    }

    /// Records on the breaker's `permit` how the call ended (`result`,
    /// which took `took`, ended at `at`; a hedge's if `hedge`; cut by its
    /// deadline while it ran if `cut`, see [`outcome`](Self::outcome)) and
    /// gives `result` back.
    ///
    /// `result` is taken apart by value: classifying an error needs its
    /// address, and a reference to the whole result would keep a success's
    /// value in memory too, from where it is copied into the caller's slot
    /// after the breaker's bookkeeping by one 16-byte load of two 8-byte
    /// stores, which stalls on store forwarding (that was most of a closed
    /// breaker's 6 ns; BENCHMARKS.md).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)] // inlined into its three callers
    fn recorded<T, E>(
        &self,
        breaker: &CircuitBreaker,
        permit: BreakerPermit<'_>,
        result: Result<T, CallError<E>>,
        classify: &Classifier<'_, E>,
        took: Option<u64>,
        at: Option<u64>,
        hedge: bool,
        cut: bool,
    ) -> Result<T, CallError<E>> {
        match result {
            Ok(value) => {
                permit.record_at(BreakerOutcome::Success, took, at);
                Ok(value)
            }
            Err(error) => {
                let outcome = self.outcome(breaker, &error, classify, hedge, cut);
                permit.record_at(outcome, took, at);
                Err(error)
            }
        }
    }

    /// What the breaker records for a call (a hedge if `hedge`) that ended
    /// with `error`. A hedge that the bulkhead or the rate limiter refused
    /// is skipped, not a failure of the call: the breaker does not record
    /// it (its trial, if half-open, goes back), since it says nothing of
    /// the dependency (the first attempt most often holds the slot it
    /// needed). Nor is a `DeadlineExceeded` that refused the call before it
    /// ran (the rate limiter's or the bulkhead's: a deadline says nothing
    /// of the dependency either), unlike one that cut it while it ran
    /// (`cut`, the timeout's), recorded as a timeout is.
    fn outcome<E>(
        &self,
        breaker: &CircuitBreaker,
        error: &CallError<E>,
        classify: &Classifier<'_, E>,
        hedge: bool,
        cut: bool,
    ) -> BreakerOutcome {
        match error {
            CallError::Inner(error) if classify.records(error) => BreakerOutcome::Failure,
            CallError::Inner(_) => BreakerOutcome::Success,
            CallError::Rejected(Rejection::DeadlineExceeded(_)) if !cut => BreakerOutcome::Ignored,
            CallError::Rejected(rejection)
                if hedge
                    && matches!(
                        rejection.kind(),
                        RejectionKind::BulkheadFull | RejectionKind::RateLimited
                    ) =>
            {
                BreakerOutcome::Ignored
            }
            CallError::Rejected(rejection)
                if breaker.config().ignore_on().contains(rejection.kind()) =>
            {
                BreakerOutcome::Ignored
            }
            CallError::Rejected(_) => BreakerOutcome::Failure,
        }
    }
}

/// What the retry makes of a failed attempt.
fn failure<T, E>(
    result: &Result<T, CallError<E>>,
    classify: &Classifier<'_, E>,
) -> Option<AttemptFailure> {
    match result {
        Ok(_) => None,
        Err(CallError::Inner(error)) => Some(AttemptFailure::Error {
            retryable: classify.retries(error),
        }),
        Err(CallError::Rejected(rejection)) => Some(AttemptFailure::Rejected(rejection.kind())),
    }
}

/// When the call's own error (in `result`) says it may be tried again,
/// if it does and `classify` reads it.
fn retry_after<T, E>(
    result: &Result<T, CallError<E>>,
    classify: &Classifier<'_, E>,
) -> Option<Duration> {
    match result {
        Err(CallError::Inner(error)) => classify.retry_after(error),
        _ => None,
    }
}

impl Default for Policies {
    fn default() -> Self {
        Policies::new()
    }
}

impl fmt::Debug for Policies {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = |p: Option<&'static str>| p.unwrap_or("-");
        f.debug_struct("Policies")
            .field(
                "fallback",
                &name(self.fallback.as_ref().map(Fallback::instance)),
            )
            .field("retry", &name(self.retry.as_ref().map(Retry::instance)))
            .field("hedge", &name(self.hedge.as_ref().map(Hedge::instance)))
            .field(
                "circuit_breaker",
                &name(self.circuit_breaker.as_ref().map(CircuitBreaker::instance)),
            )
            .field(
                "rate_limiter",
                &name(self.rate_limiter.as_ref().map(RateLimiter::instance)),
            )
            .field(
                "timeout",
                &name(self.timeout.as_ref().map(Timeout::instance)),
            )
            .field(
                "bulkhead",
                &name(self.bulkhead.as_ref().map(Bulkhead::instance)),
            )
            .field("chaos", &name(self.chaos.as_ref().map(Chaos::instance)))
            .finish()
    }
}

/// A predicate over the call's own error.
pub type ErrorPredicate<'a, E> = &'a (dyn Fn(&E) -> bool + Send + Sync);

/// How the outer policies judge the call's own errors: `retry_if` (is this
/// error worth another attempt? default: yes), `record_if` (is it a
/// failure for the circuit breaker? default: yes; a `false` counts as a
/// success) and `pushback` (does it say how long to wait before the next
/// attempt? default: no).
pub struct Classifier<'a, E> {
    retry_if: Option<ErrorPredicate<'a, E>>,
    record_if: Option<ErrorPredicate<'a, E>>,
    /// A function pointer, not a reference to a closure: the classifier
    /// lives in a composed call's future, 8 bytes more rather than 16.
    retry_after: Option<fn(&E) -> Option<Duration>>,
    /// Which of the call's own errors are a policy's refusal made inside
    /// the call (a keyed pipeline's key), for the histograms' outcomes.
    refused_inside: Option<fn(&E) -> Option<RejectionKind>>,
}

impl<'a, E> Classifier<'a, E> {
    /// Every error is retried and recorded as a failure, and says nothing
    /// of when to try again.
    pub const fn new() -> Self {
        Classifier {
            retry_if: None,
            record_if: None,
            retry_after: None,
            refused_inside: None,
        }
    }

    /// Retries only the errors `predicate` accepts.
    #[must_use]
    pub const fn retry_if(mut self, predicate: ErrorPredicate<'a, E>) -> Self {
        self.retry_if = Some(predicate);
        self
    }

    /// Records as failures only the errors `predicate` accepts.
    #[must_use]
    pub const fn record_if(mut self, predicate: ErrorPredicate<'a, E>) -> Self {
        self.record_if = Some(predicate);
        self
    }

    /// Lets the retry read when each error says the call may be tried
    /// again ([`Pushback::retry_after`]): it waits at least that long, and
    /// gives up when that is longer than its `max_wait_interval`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_core::{CallError, Classifier, Policies, Pushback, Retry, RetryConfig};
    ///
    /// #[derive(Debug, PartialEq)]
    /// struct Throttled;
    /// impl Pushback for Throttled {
    ///     fn retry_after(&self) -> Option<Duration> {
    ///         Some(Duration::from_secs(60))
    ///     }
    /// }
    ///
    /// let config = RetryConfig::builder().max_wait_interval(Duration::from_secs(1)).build()?;
    /// let policies = Policies::new().with_retry(Retry::new("api", config));
    /// let mut calls = 0;
    /// let result: Result<(), CallError<Throttled>> =
    ///     policies.call(&Classifier::new().pushback(), || {
    ///         calls += 1;
    ///         Err(Throttled)
    ///     });
    /// assert_eq!(result, Err(CallError::Inner(Throttled)));
    /// assert_eq!(calls, 1); // a minute is past max_wait_interval: no retry
    /// # Ok::<(), bulkhead_core::ConfigError>(())
    /// ```
    ///
    /// [`Pushback::retry_after`]: crate::Pushback::retry_after
    #[must_use]
    pub const fn pushback(self) -> Self
    where
        E: crate::retry::Pushback,
    {
        self.retry_after_with(<E as crate::retry::Pushback>::retry_after)
    }

    /// As [`pushback`](Self::pushback), with `retry_after` saying when an
    /// error may be tried again: for an error type that does not implement
    /// [`Pushback`](crate::Pushback) (one of another crate's).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_core::Classifier;
    ///
    /// fn after(error: &std::io::Error) -> Option<Duration> {
    ///     (error.kind() == std::io::ErrorKind::WouldBlock).then(|| Duration::from_millis(50))
    /// }
    /// let classify = Classifier::new().retry_after_with(after);
    /// # let _ = classify;
    /// ```
    #[must_use]
    pub const fn retry_after_with(mut self, retry_after: fn(&E) -> Option<Duration>) -> Self {
        self.retry_after = Some(retry_after);
        self
    }

    /// Says which of the call's own errors are a refusal by a policy
    /// applied inside the call (a keyed bulkhead's key slot, taken in the
    /// call the other policies see), and of what kind: the histograms
    /// ([`TelemetryHub`](crate::TelemetryHub)) label such an attempt with
    /// that refusal rather than `error`. Nothing else reads it.
    ///
    /// # Examples
    ///
    /// ```
    /// use bulkhead_core::{CallError, Classifier, RejectionKind};
    ///
    /// fn refused<E>(error: &CallError<E>) -> Option<RejectionKind> {
    ///     match error {
    ///         CallError::Rejected(rejection) => Some(rejection.kind()),
    ///         CallError::Inner(_) => None,
    ///     }
    /// }
    /// let classify = Classifier::<CallError<std::io::Error>>::new().refused_inside(refused);
    /// # let _ = classify;
    /// ```
    #[must_use]
    pub const fn refused_inside(mut self, refused: fn(&E) -> Option<RejectionKind>) -> Self {
        self.refused_inside = Some(refused);
        self
    }

    /// The outcome of an attempt's or a call's `result`, for the histograms.
    pub(crate) fn outcome<T>(&self, result: &Result<T, CallError<E>>) -> crate::telemetry::Outcome {
        use crate::telemetry::Outcome;
        match result {
            Ok(_) => Outcome::Success,
            Err(CallError::Rejected(rejection)) => Outcome::Rejected(rejection.kind()),
            Err(CallError::Inner(error)) => match self.refused_inside.and_then(|f| f(error)) {
                Some(kind) => Outcome::Rejected(kind),
                None => Outcome::Error,
            },
        }
    }

    #[inline]
    fn retries(&self, error: &E) -> bool {
        self.retry_if.is_none_or(|p| p(error))
    }

    #[inline]
    fn records(&self, error: &E) -> bool {
        self.record_if.is_none_or(|p| p(error))
    }

    /// When `error` says the call may be tried again, if it does.
    #[inline]
    fn retry_after(&self, error: &E) -> Option<Duration> {
        self.retry_after.and_then(|f| f(error))
    }
}

impl<E> Default for Classifier<'_, E> {
    fn default() -> Self {
        Classifier::new()
    }
}

impl<E> Clone for Classifier<'_, E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E> Copy for Classifier<'_, E> {}

impl<E> fmt::Debug for Classifier<'_, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Classifier")
            .field("retry_if", &self.retry_if.is_some())
            .field("record_if", &self.record_if.is_some())
            .field("pushback", &self.retry_after.is_some())
            .finish()
    }
}
