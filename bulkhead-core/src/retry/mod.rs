//! The retry policy: a failed call is tried again, up to `max_attempts`
//! attempts in all, after a delay that can grow and be randomized.
//!
//! [`Retry`] decides and [`RetryState`] keeps one call's count; the waiting
//! itself is the caller's, with [`Retry::sleep`] (blocking) or
//! [`Retry::sleep_async`] (never blocking a thread) on the policy's clock.
//!
//! - `config.rs`: [`RetryConfig`] and its builder;
//! - `state.rs`: [`RetryState`] and [`AttemptFailure`], whether to try again;
//! - `backoff.rs`: how long to wait before the next attempt;
//! - `budget.rs`: the retry budget, shared by every caller of an instance;
//! - `random.rs`: the random numbers behind jitter.

mod backoff;
mod budget;
mod config;
mod pushback;
mod random;
mod state;

pub use budget::BudgetState;
pub use config::{RetryConfig, RetryConfigBuilder};
pub use pushback::Pushback;
pub use state::{AttemptFailure, RetryState};

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::clock::{Sleep, Timeline, sleep_blocking};
use crate::context::{PolicyContext, policy_getters};
use crate::intern::intern;
use budget::Budget;

/// A retry policy: how many times, and after what delays, a failed call is
/// tried again.
///
/// Cheap to clone; clones share one configuration. A call starts with
/// [`start`](Self::start) and reports each attempt's outcome to the returned
/// [`RetryState`].
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use bulkhead_core::{AttemptFailure, Retry, RetryConfig};
///
/// let config = RetryConfig::builder()
///     .wait(Duration::from_millis(100))
///     .backoff_multiplier(2.0)
///     .build()?;
/// let retry = Retry::new("inventory", config);
///
/// let mut state = retry.start();
/// let error = AttemptFailure::Error { retryable: true };
/// assert_eq!(state.on_failure(error), Some(Duration::from_millis(100)));
/// assert_eq!(state.on_failure(error), Some(Duration::from_millis(200)));
/// assert_eq!(state.on_failure(error), None); // 3 attempts made: give up
/// # Ok::<(), bulkhead_core::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct Retry {
    shared: Arc<Shared>,
}

struct Shared {
    instance: &'static str,
    config: RetryConfig,
    context: PolicyContext,
    /// The retry budget, if the configuration gives one.
    budget: Option<Budget>,
}

impl Retry {
    /// A retry policy on the system clock that publishes no events.
    ///
    /// The instance id is interned: each distinct id is kept for the life of
    /// the process. Ids are meant to name the dependencies of a program, a
    /// bounded set; do not build one per request.
    pub fn new(instance: &str, config: RetryConfig) -> Self {
        Retry::with_context(instance, config, PolicyContext::default())
    }

    /// A retry policy waiting on the context's clock and publishing its
    /// events to the context's bus.
    pub fn with_context(instance: &str, config: RetryConfig, context: PolicyContext) -> Self {
        let budget = config.budget_ratio().map(|ratio| {
            Budget::new(
                Timeline::new(Arc::clone(context.clock())),
                ratio,
                config.budget_min_per_second(),
                config.budget_window(),
            )
        });
        Retry {
            shared: Arc::new(Shared {
                instance: intern(instance),
                config,
                context,
                budget,
            }),
        }
    }

    /// Starts a call: its first attempt is about to run.
    ///
    /// Costs nothing but the returned value; nothing is published unless an
    /// attempt fails. The first attempt is not counted in a retry budget
    /// here: see [`first_attempt`](Self::first_attempt).
    #[inline]
    pub fn start(&self) -> RetryState<'_> {
        RetryState::new(&self.shared)
    }

    /// Counts a call's first attempt in the retry budget, if the instance
    /// has one (a load and an atomic add; nothing without a budget). The
    /// composition calls it once per call, whatever the call's outcome.
    #[inline]
    pub fn first_attempt(&self) {
        if let Some(budget) = &self.shared.budget {
            budget.deposit();
        }
    }

    /// Takes one unit from the retry budget for a hedge (an extra attempt
    /// made while the first is still running), if there is room; always
    /// true without a budget. The hedge reports a refusal itself.
    pub fn hedge_allowed(&self) -> bool {
        self.shared
            .budget
            .as_ref()
            .is_none_or(|budget| budget.withdraw())
    }

    /// The retry budget's counts over its current window, if the instance
    /// has a budget.
    pub fn budget(&self) -> Option<BudgetState> {
        self.shared.budget.as_ref().map(Budget::state)
    }

    /// Blocks the current thread for `delay` on the policy's clock.
    ///
    /// On a [`ManualClock`](crate::ManualClock) it returns once the clock has
    /// been advanced by `delay`, however long that takes in real time. A
    /// delay too large to add to the clock's time never ends.
    ///
    /// This blocks the calling thread: from async code, use
    /// [`sleep_async`](Self::sleep_async).
    pub fn sleep(&self, delay: Duration) {
        if delay.is_zero() {
            return;
        }
        let clock = &**self.shared.context.clock();
        match clock.now().checked_add(delay) {
            Some(deadline) => sleep_blocking(clock, deadline),
            None => loop {
                std::thread::park();
            },
        }
    }

    /// A future that completes once `delay` has passed on the policy's clock,
    /// without blocking a thread.
    ///
    /// The delay is measured from this call, not from the first poll. A
    /// delay too large to add to the clock's time never completes.
    pub fn sleep_async(&self, delay: Duration) -> Sleep {
        let clock = self.shared.context.clock();
        match clock.now().checked_add(delay) {
            Some(deadline) => clock.sleep_until(deadline),
            None => Sleep::new(std::future::pending()),
        }
    }
}

policy_getters!(Retry: RetryConfig, Debug);

#[cfg(all(test, not(loom)))]
mod tests {
    use std::future::Future;
    use std::pin::Pin;
    use std::task::{Context, Waker};

    use super::*;
    use crate::clock::{Clock, ManualClock};

    fn on_manual_clock() -> (Retry, ManualClock) {
        let clock = ManualClock::new();
        let context = PolicyContext::new(Arc::new(clock.clone()));
        let retry = Retry::with_context("retry-sleep", RetryConfig::default(), context);
        (retry, clock)
    }

    #[test]
    fn policies_are_send_sync_and_cheap_to_clone() {
        fn bounds<T: Send + Sync + Clone + 'static>() {}
        bounds::<Retry>();
        bounds::<RetryConfig>();
        fn state_bounds<T: Send + Sync>() {}
        state_bounds::<RetryState<'_>>();
    }

    #[test]
    fn an_async_sleep_ends_when_the_clock_passes_the_delay() {
        let (retry, clock) = on_manual_clock();
        let mut sleep = retry.sleep_async(Duration::from_millis(500));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(Pin::new(&mut sleep).poll(&mut cx).is_pending());
        clock.advance(Duration::from_millis(499));
        assert!(Pin::new(&mut sleep).poll(&mut cx).is_pending());
        clock.advance(Duration::from_millis(1));
        assert!(Pin::new(&mut sleep).poll(&mut cx).is_ready());
    }

    #[test]
    fn a_blocking_sleep_waits_for_the_clock_not_real_time() {
        let (retry, clock) = on_manual_clock();
        let start = clock.now();
        let sleeper = {
            let retry = retry.clone();
            std::thread::spawn(move || retry.sleep(Duration::from_secs(3600)))
        };
        while clock.sleepers() == 0 {
            std::thread::yield_now();
        }
        assert!(!sleeper.is_finished());
        clock.advance(Duration::from_secs(3600));
        sleeper.join().unwrap();
        assert_eq!(clock.now() - start, Duration::from_secs(3600));
    }

    #[test]
    fn a_zero_delay_does_not_wait() {
        let (retry, _clock) = on_manual_clock();
        retry.sleep(Duration::ZERO);
        let mut sleep = retry.sleep_async(Duration::ZERO);
        let mut cx = Context::from_waker(Waker::noop());
        assert!(Pin::new(&mut sleep).poll(&mut cx).is_ready());
    }

    #[test]
    fn the_instance_id_is_interned() {
        let (retry, _clock) = on_manual_clock();
        assert_eq!(retry.instance(), "retry-sleep");
        assert!(std::ptr::eq(retry.instance(), intern("retry-sleep")));
        assert_eq!(retry.config(), RetryConfig::default());
    }
}
