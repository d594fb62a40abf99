//! Timeout policies in a registry: [`TimeoutHandle`], [`TimeoutSnapshot`], and the
//! registry's methods named after them.

use std::time::Duration;

use bulkhead_core::{Timeout, TimeoutConfig, TimeoutConfigBuilder, TimeoutEvent};

use super::{Managed, Policy, inherent_methods, named_methods, policy_methods};
use crate::events::policy_event;
use crate::pipeline::PipelineBuilder;
use bulkhead_core::keys::PolicyKind;

impl Policy for Timeout {
    type Config = TimeoutConfig;
    type Snapshot = TimeoutSnapshot;
    type Event = TimeoutEvent;

    inherent_methods!();

    fn snapshot(&self) -> TimeoutSnapshot {
        TimeoutSnapshot {
            instance: Self::instance(self).to_owned(),
            duration: self.duration(),
        }
    }
}

impl Managed for Timeout {
    const KIND: PolicyKind = PolicyKind::Timeout;
    type Spec = TimeoutConfigBuilder;

    policy_methods!(timeouts, with_timeout);
}

policy_event!(TimeoutEvent => Timeout);

named_methods! {
    policy: Timeout, spec: TimeoutConfigBuilder,
    handle: TimeoutHandle, snapshot: TimeoutSnapshot,
    method: timeout, instance: timeout_instance, list: timeouts,
    words: "timeout", "timeout policy", "timeout policies",
    config: timeout_config,
}

/// A timeout policy's configuration at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TimeoutSnapshot {
    /// The instance id.
    pub instance: String,
    /// How long a call may take.
    pub duration: Duration,
}

impl PipelineBuilder<'_> {
    /// Adds a timeout (inside the rate limiter, around the bulkhead).
    pub fn timeout(self, f: impl FnOnce(TimeoutConfigBuilder) -> TimeoutConfigBuilder) -> Self {
        self.with::<Timeout>(f)
    }
}
