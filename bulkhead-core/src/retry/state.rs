//! One call's progress through its attempts: [`RetryState`], fed with each
//! attempt's outcome, decides whether and when to try again.

use std::fmt;
use std::time::{Duration, Instant};

use super::{Shared, backoff, random};
use crate::events::{Event, GiveUpReason, RetryEvent, RetryEventKind};
use crate::rejection::{Rejection, RejectionKind};

/// Why an attempt failed, as a [`RetryState`] needs to know it.
///
/// # Examples
///
/// ```
/// use bulkhead_core::{BulkheadFull, AttemptFailure, Rejection, RejectionKind};
///
/// let busy = AttemptFailure::from(Rejection::from(BulkheadFull::new("db")));
/// assert_eq!(busy, AttemptFailure::Rejected(RejectionKind::BulkheadFull));
/// assert_eq!(busy.rejection(), Some(RejectionKind::BulkheadFull));
/// assert_eq!(AttemptFailure::Error { retryable: true }.rejection(), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttemptFailure {
    /// The call ran and returned its own error; `retryable` is what the
    /// `retry_if` predicate said of it (`true` without a predicate).
    Error {
        /// Whether the error may be retried.
        retryable: bool,
    },
    /// A policy inside the retry rejected the attempt: retried unless the
    /// kind is in `abort_on`.
    Rejected(RejectionKind),
}

impl AttemptFailure {
    /// The kind of rejection that failed the attempt, `None` for an error.
    pub const fn rejection(self) -> Option<RejectionKind> {
        match self {
            AttemptFailure::Error { .. } => None,
            AttemptFailure::Rejected(kind) => Some(kind),
        }
    }
}

impl From<Rejection> for AttemptFailure {
    fn from(rejection: Rejection) -> Self {
        AttemptFailure::Rejected(rejection.kind())
    }
}

impl From<RejectionKind> for AttemptFailure {
    fn from(kind: RejectionKind) -> Self {
        AttemptFailure::Rejected(kind)
    }
}

/// The attempts of one call through a [`Retry`](super::Retry); returned by
/// [`Retry::start`](super::Retry::start).
///
/// Run attempt [`attempt`](Self::attempt); on success, hand the state to
/// [`on_success`](Self::on_success); on failure, ask
/// [`on_failure`](Self::on_failure) whether to wait and try again. It
/// allocates nothing, and a call that succeeds at once publishes nothing.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use bulkhead_core::{AttemptFailure, Retry, RetryConfig};
///
/// let config = RetryConfig::builder()
///     .max_attempts(3)
///     .wait(Duration::from_millis(10))
///     .build()?;
/// let retry = Retry::new("flaky", config);
///
/// let mut state = retry.start();
/// let answer = loop {
///     let outcome: Result<u32, &str> =
///         if state.attempt() < 3 { Err("not yet") } else { Ok(42) };
///     match outcome {
///         Ok(value) => {
///             state.on_success();
///             break Ok(value);
///         }
///         Err(error) => match state.on_failure(AttemptFailure::Error { retryable: true }) {
///             Some(delay) => retry.sleep(delay),
///             None => break Err(error),
///         },
///     }
/// };
/// assert_eq!(answer, Ok(42));
/// # Ok::<(), bulkhead_core::ConfigError>(())
/// ```
#[must_use = "report the outcome with on_success or on_failure"]
pub struct RetryState<'a> {
    shared: &'a Shared,
    attempt: u32,
}

impl<'a> RetryState<'a> {
    #[inline]
    pub(super) fn new(shared: &'a Shared) -> Self {
        RetryState { shared, attempt: 1 }
    }

    /// The attempt about to run (or running): 1 for the first call.
    #[inline]
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Records a failed attempt and returns the delay to wait before the
    /// next one, or `None` to give up and return this failure.
    ///
    /// Gives up when the failure is not retryable (an error `retry_if`
    /// refused, a rejection listed in `abort_on`, or a
    /// `DeadlineExceeded`, whatever `abort_on` says), publishing `Aborted`,
    /// when this was the last of `max_attempts`, publishing `Exhausted`, or
    /// when the instance's retry budget has no room for another attempt,
    /// publishing `BudgetExhausted`. Otherwise takes one retry from the
    /// budget (if there is one), publishes `Retrying` and moves on to the
    /// next attempt.
    ///
    /// It is [`on_failure_within`](Self::on_failure_within) with no wait
    /// asked for and no deadline.
    pub fn on_failure(&mut self, failure: AttemptFailure) -> Option<Duration> {
        self.on_failure_within(failure, None, None)
    }

    /// [`on_failure`](Self::on_failure) for a failure that asked for a wait
    /// (`retry_after`, a [`Pushback`](super::Pushback) hint) and a call
    /// with a deadline (`deadline`, on the policy's clock), in this order:
    ///
    /// 1. the delay is the backoff's (jitter and `max_wait_interval`
    ///    included), or `retry_after` if longer; a `retry_after` longer
    ///    than `max_wait_interval`, or of [`Duration::MAX`] ("do not try
    ///    again") whatever the cap, gives up: `GaveUp` with
    ///    [`GiveUpReason::Pushback`];
    /// 2. a retry that would start with `min_attempt_time` or less left
    ///    before `deadline` (the clock's time now plus the delay) gives up:
    ///    `GaveUp` with [`GiveUpReason::Deadline`];
    /// 3. only then is a retry taken from the budget, so that a retry given
    ///    up costs no budget.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use bulkhead_core::{AttemptFailure, Clock, Retry, RetryConfig, SystemClock};
    ///
    /// let retry = Retry::new("api", RetryConfig::builder()
    ///     .wait(Duration::from_millis(10))
    ///     .max_wait_interval(Duration::from_secs(1))
    ///     .build()?);
    /// let error = AttemptFailure::Error { retryable: true };
    ///
    /// // The server asked for 200 ms: waited instead of 10.
    /// let asked = Some(Duration::from_millis(200));
    /// assert_eq!(retry.start().on_failure_within(error, asked, None), asked);
    /// // 5 s is past max_wait_interval: given up.
    /// let too_long = Some(Duration::from_secs(5));
    /// assert_eq!(retry.start().on_failure_within(error, too_long, None), None);
    /// // 1 ms left before the deadline: no time for a retry.
    /// let deadline = SystemClock.now() + Duration::from_millis(1);
    /// assert_eq!(retry.start().on_failure_within(error, None, Some(deadline)), None);
    /// # Ok::<(), bulkhead_core::ConfigError>(())
    /// ```
    pub fn on_failure_within(
        &mut self,
        failure: AttemptFailure,
        retry_after: Option<Duration>,
        deadline: Option<Instant>,
    ) -> Option<Duration> {
        let shared = self.shared;
        let attempts = self.attempt;
        let rejection = failure.rejection();
        let retryable = match failure {
            AttemptFailure::Error { retryable } => retryable,
            // No time is left before the call's deadline: never retried.
            AttemptFailure::Rejected(RejectionKind::DeadlineExceeded) => false,
            AttemptFailure::Rejected(kind) => !shared.config.abort_on().contains(kind),
        };
        if !retryable {
            self.publish(RetryEventKind::Aborted {
                attempts,
                rejection,
            });
            return None;
        }
        if attempts >= shared.config.max_attempts() {
            self.publish(RetryEventKind::Exhausted {
                attempts,
                rejection,
            });
            return None;
        }
        let unit = if shared.config.jitter() == 0.0 {
            0.0
        } else {
            random::unit()
        };
        let mut delay = backoff::delay(&shared.config, attempts, unit);
        if retry_after.is_some() || deadline.is_some() {
            delay = self.bounded(delay, retry_after, deadline, rejection)?;
        }
        if let Some(budget) = &shared.budget
            && !budget.withdraw()
        {
            self.publish(RetryEventKind::BudgetExhausted {
                attempts,
                rejection,
            });
            return None;
        }
        self.publish(RetryEventKind::Retrying {
            attempt: attempts,
            delay,
            rejection,
        });
        self.attempt += 1;
        Some(delay)
    }

    /// The backoff's `delay` stretched to `retry_after`, or `None` (having
    /// published `GaveUp`) if that wait is too long or the retry would come
    /// too late for `deadline`.
    #[cold]
    #[inline(never)]
    fn bounded(
        &self,
        delay: Duration,
        retry_after: Option<Duration>,
        deadline: Option<Instant>,
        rejection: Option<RejectionKind>,
    ) -> Option<Duration> {
        let config = &self.shared.config;
        let give_up = |reason| {
            self.publish(RetryEventKind::GaveUp {
                attempts: self.attempt,
                rejection,
                reason,
            });
            None
        };
        let delay = match retry_after {
            // `Duration::MAX`: "do not try again", capped or not.
            Some(asked)
                if asked == Duration::MAX
                    || config.max_wait_interval().is_some_and(|cap| asked > cap) =>
            {
                return give_up(GiveUpReason::Pushback(asked));
            }
            Some(asked) => delay.max(asked),
            None => delay,
        };
        if let Some(deadline) = deadline {
            let now = self.shared.context.clock().now();
            // The next attempt starts at `now + delay`, and needs more than
            // `min_attempt_time` left then.
            let starts = now
                .checked_add(delay)
                .and_then(|at| at.checked_add(config.min_attempt_time()));
            if starts.is_none_or(|starts| starts >= deadline) {
                return give_up(GiveUpReason::Deadline);
            }
        }
        Some(delay)
    }

    /// Records that the current attempt succeeded, publishing `Succeeded`
    /// if it was not the first.
    #[inline]
    pub fn on_success(self) {
        if self.attempt > 1 {
            self.publish(RetryEventKind::Succeeded {
                attempts: self.attempt,
            });
        }
    }

    fn publish(&self, kind: RetryEventKind) {
        let instance = self.shared.instance;
        self.shared
            .context
            .publish(|at| Event::Retry(RetryEvent::new(instance, kind, at)));
    }
}

impl fmt::Debug for RetryState<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryState")
            .field("instance", &self.shared.instance)
            .field("attempt", &self.attempt)
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::clock::{Clock, ManualClock};
    use crate::context::PolicyContext;
    use crate::events::{EventBus, EventStream};
    use crate::retry::{Retry, RetryConfig};

    fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    /// A retry on a manual clock, and a subscription to its events.
    fn retry(config: RetryConfig) -> (Retry, EventStream, ManualClock) {
        let clock = ManualClock::new();
        let bus = EventBus::default();
        let events = bus.subscribe();
        let context = PolicyContext::new(Arc::new(clock.clone())).with_events(bus);
        (
            Retry::with_context("retry-state", config, context),
            events,
            clock,
        )
    }

    fn kinds(events: &mut EventStream) -> Vec<RetryEventKind> {
        events
            .drain()
            .map(|event| match event {
                Event::Retry(event) => {
                    assert_eq!(event.instance, "retry-state");
                    event.kind
                }
                other => panic!("not a retry event: {other:?}"),
            })
            .collect()
    }

    const ERROR: AttemptFailure = AttemptFailure::Error { retryable: true };

    #[test]
    fn max_attempts_counts_the_first_call() {
        let config = RetryConfig::builder().max_attempts(3).build().unwrap();
        let (retry, _events, _clock) = retry(config);
        let mut state = retry.start();
        assert_eq!(state.attempt(), 1);
        assert_eq!(state.on_failure(ERROR), Some(ms(500)));
        assert_eq!(state.attempt(), 2);
        assert_eq!(state.on_failure(ERROR), Some(ms(500)));
        assert_eq!(state.attempt(), 3);
        assert_eq!(state.on_failure(ERROR), None);

        let once = RetryConfig::builder().max_attempts(1).build().unwrap();
        let (retry, _events, _clock) = self::retry(once);
        assert_eq!(retry.start().on_failure(ERROR), None);
    }

    #[test]
    fn a_fixed_wait_is_the_same_before_every_retry() {
        let config = RetryConfig::builder()
            .max_attempts(4)
            .wait(ms(250))
            .build()
            .unwrap();
        let (retry, _events, _clock) = retry(config);
        let mut state = retry.start();
        let delays: Vec<_> = std::iter::from_fn(|| state.on_failure(ERROR)).collect();
        assert_eq!(delays, [ms(250); 3]);
    }

    #[test]
    fn exponential_backoff_is_capped_by_max_wait_interval() {
        let config = RetryConfig::builder()
            .max_attempts(6)
            .wait(ms(100))
            .backoff_multiplier(3.0)
            .max_wait_interval(ms(1000))
            .build()
            .unwrap();
        let (retry, _events, _clock) = retry(config);
        let mut state = retry.start();
        let delays: Vec<_> = std::iter::from_fn(|| state.on_failure(ERROR)).collect();
        assert_eq!(delays, [ms(100), ms(300), ms(900), ms(1000), ms(1000)]);
    }

    #[test]
    fn jittered_delays_stay_within_bounds_and_vary() {
        let config = RetryConfig::builder()
            .max_attempts(2)
            .wait(ms(1000))
            .jitter(0.25)
            .build()
            .unwrap();
        let (retry, _events, _clock) = retry(config);
        let delays: Vec<_> = (0..1000)
            .map(|_| retry.start().on_failure(ERROR).unwrap())
            .collect();
        assert!(
            delays.iter().all(|d| (ms(750)..=ms(1250)).contains(d)),
            "a delay out of bounds"
        );
        assert!(
            delays.iter().any(|d| *d != delays[0]),
            "jitter did not vary"
        );
    }

    #[test]
    fn a_rejection_in_abort_on_aborts_and_others_are_retried() {
        let config = RetryConfig::builder()
            .abort_on([RejectionKind::BulkheadFull])
            .build()
            .unwrap();
        let (retry, mut events, _clock) = retry(config);
        let mut state = retry.start();
        assert!(state.on_failure(RejectionKind::Timeout.into()).is_some());
        assert_eq!(state.on_failure(RejectionKind::BulkheadFull.into()), None);
        assert_eq!(
            kinds(&mut events),
            [
                RetryEventKind::Retrying {
                    attempt: 1,
                    delay: ms(500),
                    rejection: Some(RejectionKind::Timeout),
                },
                RetryEventKind::Aborted {
                    attempts: 2,
                    rejection: Some(RejectionKind::BulkheadFull),
                },
            ]
        );
    }

    #[test]
    fn every_rejection_kind_but_deadline_exceeded_is_retried_by_default() {
        let (retry, _events, _clock) = retry(RetryConfig::default());
        for kind in RejectionKind::ALL {
            let retried = retry.start().on_failure(kind.into()).is_some();
            assert_eq!(retried, kind != RejectionKind::DeadlineExceeded, "{kind}");
        }
    }

    #[test]
    fn deadline_exceeded_is_never_retried_whatever_abort_on_says() {
        let config = RetryConfig::builder().abort_on([]).build().unwrap();
        let (retry, mut events, _clock) = retry(config);
        let mut state = retry.start();
        assert_eq!(
            state.on_failure(RejectionKind::DeadlineExceeded.into()),
            None
        );
        assert_eq!(
            kinds(&mut events),
            [RetryEventKind::Aborted {
                attempts: 1,
                rejection: Some(RejectionKind::DeadlineExceeded),
            }]
        );
    }

    #[test]
    fn an_error_retry_if_refused_aborts() {
        let (retry, mut events, _clock) = retry(RetryConfig::default());
        let mut state = retry.start();
        assert_eq!(
            state.on_failure(AttemptFailure::Error { retryable: false }),
            None
        );
        assert_eq!(
            kinds(&mut events),
            [RetryEventKind::Aborted {
                attempts: 1,
                rejection: None,
            }]
        );
    }

    #[test]
    fn events_follow_the_attempts_in_order() {
        let config = RetryConfig::builder()
            .max_attempts(2)
            .wait(ms(10))
            .build()
            .unwrap();
        let (retry, mut events, clock) = retry(config);

        let mut state = retry.start();
        let delay = state.on_failure(ERROR).unwrap();
        let retrying_at = clock.now();
        clock.advance(delay);
        state.on_success();

        let mut state = retry.start();
        state.on_failure(RejectionKind::RateLimited.into()).unwrap();
        assert_eq!(state.on_failure(ERROR), None);

        let all: Vec<_> = events.drain().collect();
        assert_eq!(all[0].at(), retrying_at);
        assert_eq!(all[1].at(), retrying_at + delay);
        let kinds: Vec<_> = all
            .into_iter()
            .map(|event| match event {
                Event::Retry(event) => event.kind,
                other => panic!("not a retry event: {other:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            [
                RetryEventKind::Retrying {
                    attempt: 1,
                    delay: ms(10),
                    rejection: None,
                },
                RetryEventKind::Succeeded { attempts: 2 },
                RetryEventKind::Retrying {
                    attempt: 1,
                    delay: ms(10),
                    rejection: Some(RejectionKind::RateLimited),
                },
                RetryEventKind::Exhausted {
                    attempts: 2,
                    rejection: None,
                },
            ]
        );
    }

    #[test]
    fn a_retry_the_budget_refuses_ends_the_call_and_says_so() {
        let config = RetryConfig::builder()
            .max_attempts(5)
            .wait(ms(0))
            .budget_ratio(0.5)
            .budget_min_per_second(0)
            .build()
            .unwrap();
        let (retry, mut events, _clock) = retry(config);
        retry.first_attempt();
        retry.first_attempt();
        // Two first attempts at a ratio of 0.5: room for one retry.
        let mut state = retry.start();
        assert_eq!(state.on_failure(ERROR), Some(ms(0)));
        assert_eq!(state.on_failure(RejectionKind::Timeout.into()), None);
        assert_eq!(
            kinds(&mut events),
            [
                RetryEventKind::Retrying {
                    attempt: 1,
                    delay: ms(0),
                    rejection: None,
                },
                RetryEventKind::BudgetExhausted {
                    attempts: 2,
                    rejection: Some(RejectionKind::Timeout),
                },
            ]
        );
        let budget = retry.budget().unwrap();
        assert_eq!(
            (budget.first_attempts, budget.retries, budget.available),
            (2, 1, 0)
        );
        assert!(!retry.hedge_allowed(), "hedges draw on the same budget");
    }

    #[test]
    fn without_a_budget_nothing_is_counted_and_hedges_are_allowed() {
        let (retry, _events, _clock) = retry(RetryConfig::default());
        retry.first_attempt();
        assert_eq!(retry.budget(), None);
        assert!(retry.hedge_allowed());
    }

    #[test]
    fn a_first_attempt_success_publishes_nothing() {
        let (retry, mut events, _clock) = retry(RetryConfig::default());
        for _ in 0..100 {
            let state = retry.start();
            assert_eq!(state.attempt(), 1);
            state.on_success();
        }
        assert_eq!(kinds(&mut events), []);
    }
}
