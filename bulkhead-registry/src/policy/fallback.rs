//! Fallback policies in a registry: [`FallbackHandle`], [`FallbackSnapshot`], and the
//! registry's methods named after them.

use bulkhead_core::{
    Fallback, FallbackConfig, FallbackConfigBuilder, FallbackEvent, RejectionKinds,
};

use super::{Managed, Policy, inherent_methods, named_methods, policy_methods};
use crate::events::policy_event;
use bulkhead_core::keys::PolicyKind;

impl Policy for Fallback {
    type Config = FallbackConfig;
    type Snapshot = FallbackSnapshot;
    type Event = FallbackEvent;

    inherent_methods!();

    fn snapshot(&self) -> FallbackSnapshot {
        let config = Self::config(self);
        FallbackSnapshot {
            instance: Self::instance(self).to_owned(),
            on: config.on(),
            on_error: config.on_error(),
        }
    }
}

impl Managed for Fallback {
    const KIND: PolicyKind = PolicyKind::Fallback;
    type Spec = FallbackConfigBuilder;

    policy_methods!(fallbacks, with_fallback);
}

policy_event!(FallbackEvent => Fallback);

named_methods! {
    policy: Fallback, spec: FallbackConfigBuilder,
    handle: FallbackHandle, snapshot: FallbackSnapshot,
    method: fallback, instance: fallback_instance, list: fallbacks,
    words: "fallback", "fallback policy", "fallback policies",
    /// Its keys say which outcomes the fallback answers: `on`, `on_error`.
    ///
    /// # Examples
    ///
    /// ```
    /// use bulkhead_core::{FallbackConfig, RejectionKind};
    /// use bulkhead_registry::Registry;
    ///
    /// let registry = Registry::builder()
    ///     .fallback_config("lenient", |f| f.on_error(true))
    ///     .fallback_instance("thumbs", |f| f.on([RejectionKind::BulkheadFull]))
    ///     .build();
    /// let mut declarations = registry.declare();
    /// let thumbs =
    ///     declarations.fallback("thumbs", "t", &FallbackConfig::builder().config("lenient"))?;
    /// declarations.commit();
    /// assert!(thumbs.config().on_error());
    /// assert_eq!(thumbs.config().on().to_string(), "[BulkheadFull]");
    /// # Ok::<(), bulkhead_registry::RegistryError>(())
    /// ```
    config: fallback_config,
}

/// A fallback policy's configuration at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct FallbackSnapshot {
    /// The instance id.
    pub instance: String,
    /// The rejections the fallback answers.
    pub on: RejectionKinds,
    /// Whether it answers the method's own errors too.
    pub on_error: bool,
}
