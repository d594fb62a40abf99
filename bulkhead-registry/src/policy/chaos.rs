//! Chaos policies in a registry: [`ChaosHandle`], [`ChaosSnapshot`], and the
//! registry's methods named after them.

use bulkhead_core::{Chaos, ChaosConfig, ChaosConfigBuilder, ChaosEvent, ChaosFault, ChaosLatency};

use super::{Managed, Policy, inherent_methods, named_methods, policy_methods};
use crate::events::policy_event;
use crate::pipeline::PipelineBuilder;
use bulkhead_core::keys::PolicyKind;

impl Policy for Chaos {
    type Config = ChaosConfig;
    type Snapshot = ChaosSnapshot;
    type Event = ChaosEvent;

    inherent_methods!();

    fn snapshot(&self) -> ChaosSnapshot {
        let config = Self::config(self);
        ChaosSnapshot {
            instance: Self::instance(self).to_owned(),
            enabled: config.enabled(),
            fault_rate: config.fault_rate(),
            latency_rate: config.latency_rate(),
            latency: config.latency(),
            fault: config.fault(),
            seed: config.seed(),
        }
    }
}

impl Managed for Chaos {
    const KIND: PolicyKind = PolicyKind::Chaos;
    type Spec = ChaosConfigBuilder;

    policy_methods!(chaos, with_chaos);

    /// Every key changes live: a reload puts a running service under chaos
    /// and takes it out again.
    fn reconfigure(&self, _old: &ChaosConfig, new: &ChaosConfig) {
        self.set_config(*new);
    }
}

policy_event!(ChaosEvent => Chaos);

named_methods! {
    policy: Chaos, spec: ChaosConfigBuilder,
    handle: ChaosHandle, snapshot: ChaosSnapshot,
    method: chaos, instance: chaos_instance, list: chaos,
    words: "chaos", "chaos policy", "chaos policies",
    config: chaos_config,
}

/// A chaos policy's configuration at one moment, as it runs (every key
/// changes live).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ChaosSnapshot {
    /// The instance id.
    pub instance: String,
    /// Whether it injects anything.
    pub enabled: bool,
    /// The share of calls that fail with an injected fault.
    pub fault_rate: f64,
    /// The share of calls delayed by `latency`.
    pub latency_rate: f64,
    /// The latency injected.
    pub latency: ChaosLatency,
    /// What an injected fault is.
    pub fault: ChaosFault,
    /// The configured seed, if any.
    pub seed: Option<u64>,
}

impl PipelineBuilder<'_> {
    /// Adds a chaos policy (innermost, inside the bulkhead: an injected
    /// latency holds the slot and counts towards the timeout).
    pub fn chaos(self, f: impl FnOnce(ChaosConfigBuilder) -> ChaosConfigBuilder) -> Self {
        self.with::<Chaos>(f)
    }
}
