//! Fallback policies in a registry: [`FallbackHandle`], [`FallbackSnapshot`], and the
//! registry's methods named after them.

use bulkhead_core::{
    Fallback, FallbackConfig, FallbackConfigBuilder, FallbackEvent, RejectionKinds,
};

use super::{Managed, Policy, inherent_methods, policy_methods};
use crate::error::RegistryError;
use crate::events::policy_event;
use crate::handle::Handle;
use crate::kind::PolicyKind;
use crate::registry::Registry;
use crate::registry::builder::RegistryBuilder;
use crate::registry::declare::Declarations;
use crate::snapshot::RegistrySnapshot;
use crate::specs::PolicySpecs;

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

/// A view of one fallback policy of a registry, from
/// [`Registry::fallback`].
pub type FallbackHandle = Handle<Fallback>;

impl Handle<Fallback> {
    /// The policy itself.
    pub fn fallback(&self) -> &Fallback {
        &self.policy
    }
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

impl Registry {
    /// The fallback policy with this instance id.
    ///
    /// # Errors
    ///
    /// REG-009 if no fallback policy has this id.
    pub fn fallback(&self, id: &str) -> Result<FallbackHandle, RegistryError> {
        self.handle(id)
    }
}

impl RegistryBuilder {
    /// Defines (or extends) the named fallback configuration `name` (which
    /// outcomes the fallback answers: `on`, `on_error`); see
    /// [`bulkhead_config`](Self::bulkhead_config).
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
    pub fn fallback_config(
        self,
        name: impl Into<String>,
        f: impl FnOnce(FallbackConfigBuilder) -> FallbackConfigBuilder,
    ) -> Self {
        self.policy_config::<Fallback>(name, f)
    }

    /// Overrides values of the fallback instance `id`; see
    /// [`bulkhead_instance`](Self::bulkhead_instance).
    pub fn fallback_instance(
        self,
        id: impl Into<String>,
        f: impl FnOnce(FallbackConfigBuilder) -> FallbackConfigBuilder,
    ) -> Self {
        self.policy_instance::<Fallback>(id, f)
    }
}

impl Declarations<'_> {
    /// Declares fallback `id`, as [`bulkhead`](Self::bulkhead) does.
    ///
    /// # Errors
    ///
    /// REG-004, REG-008, CFG-004 or the ATR code of an invalid value.
    pub fn fallback(
        &mut self,
        id: &str,
        source: &str,
        spec: &FallbackConfigBuilder,
    ) -> Result<Fallback, RegistryError> {
        Fallback::declare(self, id, source, spec)
    }
}

impl PolicySpecs {
    /// Adds the fallback, with instance id `name` if given. (Its method is
    /// the caller's to call: see [`Fallback`].)
    pub fn fallback(self, name: Option<&str>, spec: FallbackConfigBuilder) -> Self {
        self.with::<Fallback>(name, spec)
    }
}

impl RegistrySnapshot {
    /// The fallback policies, sorted by instance id.
    pub fn fallbacks(&self) -> &[FallbackSnapshot] {
        &self.fallbacks
    }
}
