//! Timeout policies in a registry: [`TimeoutHandle`], [`TimeoutSnapshot`], and the
//! registry's methods named after them.

use std::time::Duration;

use bulkhead_core::{Timeout, TimeoutConfig, TimeoutConfigBuilder, TimeoutEvent};

use super::{Managed, Policy, inherent_methods, policy_methods};
use crate::error::RegistryError;
use crate::events::policy_event;
use crate::handle::Handle;
use crate::kind::PolicyKind;
use crate::pipeline::PipelineBuilder;
use crate::registry::Registry;
use crate::registry::builder::RegistryBuilder;
use crate::registry::declare::Declarations;
use crate::snapshot::RegistrySnapshot;
use crate::specs::PolicySpecs;

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

/// A view of one timeout policy of a registry, from
/// [`Registry::timeout`].
pub type TimeoutHandle = Handle<Timeout>;

impl Handle<Timeout> {
    /// The policy itself.
    pub fn timeout(&self) -> &Timeout {
        &self.policy
    }
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

impl Registry {
    /// The timeout policy with this instance id.
    ///
    /// # Errors
    ///
    /// REG-009 if no timeout policy has this id.
    pub fn timeout(&self, id: &str) -> Result<TimeoutHandle, RegistryError> {
        self.handle(id)
    }
}

impl RegistryBuilder {
    /// Defines (or extends) the named timeout configuration `name`; see
    /// [`bulkhead_config`](Self::bulkhead_config).
    pub fn timeout_config(
        self,
        name: impl Into<String>,
        f: impl FnOnce(TimeoutConfigBuilder) -> TimeoutConfigBuilder,
    ) -> Self {
        self.policy_config::<Timeout>(name, f)
    }

    /// Overrides values of the timeout instance `id`; see
    /// [`bulkhead_instance`](Self::bulkhead_instance).
    pub fn timeout_instance(
        self,
        id: impl Into<String>,
        f: impl FnOnce(TimeoutConfigBuilder) -> TimeoutConfigBuilder,
    ) -> Self {
        self.policy_instance::<Timeout>(id, f)
    }
}

impl Declarations<'_> {
    /// Declares timeout policy `id`, as [`bulkhead`](Self::bulkhead) does.
    ///
    /// # Errors
    ///
    /// REG-004, REG-008, CFG-004 or the ATR code of an invalid value.
    pub fn timeout(
        &mut self,
        id: &str,
        source: &str,
        spec: &TimeoutConfigBuilder,
    ) -> Result<Timeout, RegistryError> {
        Timeout::declare(self, id, source, spec)
    }
}

impl PolicySpecs {
    /// Adds the timeout, with instance id `name` if given.
    pub fn timeout(self, name: Option<&str>, spec: TimeoutConfigBuilder) -> Self {
        self.with::<Timeout>(name, spec)
    }
}

impl RegistrySnapshot {
    /// The timeout policies, sorted by instance id.
    pub fn timeouts(&self) -> &[TimeoutSnapshot] {
        &self.timeouts
    }
}

impl PipelineBuilder<'_> {
    /// Adds a timeout (inside the rate limiter, around the bulkhead).
    pub fn timeout(self, f: impl FnOnce(TimeoutConfigBuilder) -> TimeoutConfigBuilder) -> Self {
        self.with::<Timeout>(f)
    }
}
