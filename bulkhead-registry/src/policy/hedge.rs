//! Hedge policies in a registry: [`HedgeHandle`], [`HedgeSnapshot`], and the
//! registry's methods named after them.

use std::time::Duration;

use bulkhead_core::{Hedge, HedgeConfig, HedgeConfigBuilder, HedgeDelay, HedgeEvent};

use super::{Managed, Policy, inherent_methods, named_methods, policy_methods};
use crate::events::policy_event;
use crate::pipeline::PipelineBuilder;
use bulkhead_core::keys::PolicyKind;

impl Policy for Hedge {
    type Config = HedgeConfig;
    type Snapshot = HedgeSnapshot;
    type Event = HedgeEvent;

    inherent_methods!();

    fn snapshot(&self) -> HedgeSnapshot {
        let config = Self::config(self);
        HedgeSnapshot {
            instance: Self::instance(self).to_owned(),
            max_hedged: config.max_hedged(),
            delay: config.delay(),
            current_delay: self.delay(),
        }
    }
}

impl Managed for Hedge {
    const KIND: PolicyKind = PolicyKind::Hedge;
    type Spec = HedgeConfigBuilder;

    policy_methods!(hedges, with_hedge);
}

policy_event!(HedgeEvent => Hedge);

named_methods! {
    policy: Hedge, spec: HedgeConfigBuilder,
    handle: HedgeHandle, snapshot: HedgeSnapshot,
    method: hedge, instance: hedge_instance, list: hedges,
    words: "hedge", "hedge policy", "hedge policies",
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use bulkhead_core::{HedgeConfig, HedgeDelay};
    /// use bulkhead_registry::Registry;
    ///
    /// let registry = Registry::builder()
    ///     .hedge_config("eager", |h| h.max_hedged(2).delay(Duration::from_millis(5)))
    ///     .hedge_instance("search", |h| h.delay(HedgeDelay::percentile(90.0)))
    ///     .build();
    /// let mut declarations = registry.declare();
    /// let search = declarations.hedge("search", "t", &HedgeConfig::builder().config("eager"))?;
    /// declarations.commit();
    /// assert_eq!(search.config().max_hedged(), 2);
    /// assert_eq!(search.config().delay(), HedgeDelay::percentile(90.0));
    /// # Ok::<(), bulkhead_registry::RegistryError>(())
    /// ```
    config: hedge_config,
}

/// A hedge policy's configuration at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HedgeSnapshot {
    /// The instance id.
    pub instance: String,
    /// How many extra attempts a call may start.
    pub max_hedged: u32,
    /// How long the attempts of a call run before another is started: a
    /// duration, or a percentile of the first attempts' latency.
    pub delay: HedgeDelay,
    /// The delay a call's hedges would wait now: `delay`, or the estimate
    /// of its percentile (`None` while that warms up).
    pub current_delay: Option<Duration>,
}

impl PipelineBuilder<'_> {
    /// Adds a hedge (inside the retry, around the circuit breaker): an
    /// async call ([`Pipeline::execute_async`](crate::Pipeline::execute_async))
    /// whose attempt has not finished after `delay` gets another, up to
    /// `max_hedged`; the first success wins. Sync calls are not hedged.
    pub fn hedge(self, f: impl FnOnce(HedgeConfigBuilder) -> HedgeConfigBuilder) -> Self {
        self.with::<Hedge>(f)
    }
}
