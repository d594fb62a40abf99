//! Retry policies in a registry: [`RetryHandle`], [`RetrySnapshot`], and the
//! registry's methods named after them.

use std::time::Duration;

use bulkhead_core::{
    BudgetState, RejectionKinds, Retry, RetryConfig, RetryConfigBuilder, RetryEvent,
};

use super::{Managed, Policy, inherent_methods, named_methods, policy_methods};
use crate::events::policy_event;
use crate::pipeline::PipelineBuilder;
use bulkhead_core::keys::PolicyKind;

impl Policy for Retry {
    type Config = RetryConfig;
    type Snapshot = RetrySnapshot;
    type Event = RetryEvent;

    inherent_methods!();

    fn snapshot(&self) -> RetrySnapshot {
        let config = Self::config(self);
        RetrySnapshot {
            instance: Self::instance(self).to_owned(),
            max_attempts: config.max_attempts(),
            wait: config.wait(),
            backoff_multiplier: config.backoff_multiplier(),
            max_wait_interval: config.max_wait_interval(),
            jitter: config.jitter(),
            abort_on: config.abort_on(),
            min_attempt_time: config.min_attempt_time(),
            budget_ratio: config.budget_ratio(),
            budget_min_per_second: config.budget_min_per_second(),
            budget_window: config.budget_window(),
            budget: self.budget(),
        }
    }
}

impl Managed for Retry {
    const KIND: PolicyKind = PolicyKind::Retry;
    type Spec = RetryConfigBuilder;

    policy_methods!(retries, with_retry);
}

policy_event!(RetryEvent => Retry);

named_methods! {
    policy: Retry, spec: RetryConfigBuilder,
    handle: RetryHandle, snapshot: RetrySnapshot,
    method: retry, instance: retry_instance, list: retries,
    words: "retry", "retry policy", "retry policies",
    config: retry_config,
}

/// A retry policy's configuration at one moment.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RetrySnapshot {
    /// The instance id.
    pub instance: String,
    /// Attempts allowed, the first call included.
    pub max_attempts: u32,
    /// The wait before the first retry.
    pub wait: Duration,
    /// The factor each further wait is multiplied by.
    pub backoff_multiplier: f64,
    /// The cap on any wait, if any.
    pub max_wait_interval: Option<Duration>,
    /// The randomization factor of waits.
    pub jitter: f64,
    /// Rejection kinds that are not retried.
    pub abort_on: RejectionKinds,
    /// Under a deadline, no attempt starts with this much time left or
    /// less.
    pub min_attempt_time: Duration,
    /// The retry budget's ratio, if the instance has a budget.
    pub budget_ratio: Option<f64>,
    /// The retries per second of the window a budget allows whatever the
    /// first attempts.
    pub budget_min_per_second: u32,
    /// The window a budget counts over.
    pub budget_window: Duration,
    /// The budget's counts over its current window (first attempts,
    /// retries and hedges made, and how many more it allows now), if the
    /// instance has a budget.
    pub budget: Option<BudgetState>,
}

impl PipelineBuilder<'_> {
    /// Adds a retry policy (outermost).
    pub fn retry(self, f: impl FnOnce(RetryConfigBuilder) -> RetryConfigBuilder) -> Self {
        self.with::<Retry>(f)
    }
}
