//! The policies a registry keeps, and what it needs of each: the public
//! [`Policy`] (what a [`Handle`](crate::Handle) shows of one) and the
//! crate's [`Managed`] (how the registry configures, makes, reconfigures,
//! declares and composes one). Their configuration keys are the core
//! crate's tables ([`PolicyKind::keys`]): a key from a source is looked up
//! there, its value read by its kind ([`Value::read`]) and given to the
//! config builder's `set_key`, so that a new key needs nothing here.
//!
//! Each file beside this one is one policy's: its impls, and everything
//! the registry names after it (its handle's own methods, its snapshot,
//! `registry.retry(id)`, `RegistryBuilder::retry_config`, ...). What the
//! registry does for every policy alike is generic over [`Managed`];
//! [`for_kind`] is the one place that goes from a [`PolicyKind`] to a
//! policy's type.

mod bulkhead;
mod chaos;
mod circuit_breaker;
mod fallback;
mod hedge;
mod rate_limiter;
mod retry;
mod timeout;

use std::fmt;

use bulkhead_core::keys::{Key, KeyValue};
use bulkhead_core::{
    Bulkhead, Chaos, CircuitBreaker, ConfigError, Fallback, Hedge, Policies, PolicyContext,
    RateLimiter, Retry, Timeout,
};

use crate::budget::Budgets;
use crate::error::{ConfigSourceError, RegistryError};
use crate::events::PolicyEvent;
use crate::registry::declare::Declarations;
use crate::snapshot::RegistrySnapshot;
use crate::source::Value;
use crate::source::suggest;
use crate::store::Store;
use bulkhead_core::keys::PolicyKind;

pub use bulkhead::{BulkheadHandle, BulkheadSnapshot};
pub use chaos::{ChaosHandle, ChaosSnapshot};
pub use circuit_breaker::{CircuitBreakerHandle, CircuitBreakerSnapshot};
pub use fallback::{FallbackHandle, FallbackSnapshot};
pub use hedge::{HedgeHandle, HedgeSnapshot};
pub use rate_limiter::{RateLimiterHandle, RateLimiterSnapshot};
pub use retry::{RetryHandle, RetrySnapshot};
pub use timeout::{TimeoutHandle, TimeoutSnapshot};

/// A policy a registry keeps by instance id: [`Bulkhead`], [`Retry`],
/// [`CircuitBreaker`], [`Timeout`], [`RateLimiter`], [`Hedge`],
/// [`Fallback`] or [`Chaos`], with what its [`Handle`](crate::Handle) shows of it.
///
/// Sealed: the registry implements it for those policies only.
pub trait Policy: Clone + fmt::Debug + Send + Sync + 'static + sealed::Sealed {
    /// Its resolved configuration (`RetryConfig` for [`Retry`]).
    type Config: Clone + PartialEq + fmt::Display + fmt::Debug + Default + Send + Sync;
    /// Its state at one moment ([`RetrySnapshot`] for [`Retry`]), as
    /// [`Handle::snapshot`](crate::Handle::snapshot) and
    /// [`RegistrySnapshot`] show it.
    type Snapshot: Clone + fmt::Debug + Send + Sync;
    /// Its events (`RetryEvent` for [`Retry`]), which
    /// [`Handle::subscribe`](crate::Handle::subscribe) keeps.
    type Event: PolicyEvent;

    /// The instance id.
    fn instance(&self) -> &str;
    /// The configuration it runs with.
    fn config(&self) -> Self::Config;
    /// Its state now.
    fn snapshot(&self) -> Self::Snapshot;
}

pub(crate) mod sealed {
    /// Implemented by the policies the registry manages only.
    pub trait Sealed {}

    impl<P: super::Managed> Sealed for P {}
}

/// What the registry does with a policy: how it is configured, made,
/// reconfigured by a reload, declared and composed.
pub(crate) trait Managed: Policy {
    /// Which policy it is.
    const KIND: PolicyKind;
    /// The values given in code, laid over a base configuration: the
    /// policy's config builder.
    type Spec: Clone + Default + fmt::Debug + Send + Sync;

    /// The named base configuration `spec` chooses, if any.
    fn config_name(spec: &Self::Spec) -> Option<&str>;
    /// `spec` choosing the named base configuration `name`.
    fn with_config_name(spec: Self::Spec, name: &str) -> Self::Spec;
    /// `spec` with the key named `key` set to `value`.
    fn set_key(spec: Self::Spec, key: &str, value: KeyValue) -> Result<Self::Spec, ConfigError>;
    /// `spec`'s values over `base`, bad keys named with `key_prefix`.
    fn build(
        spec: &Self::Spec,
        base: &Self::Config,
        key_prefix: &str,
    ) -> Result<Self::Config, ConfigError>;
    /// Checks a configuration once every layer is laid: the rules between
    /// keys that a layer alone cannot be held to (a bulkhead's limits in
    /// order), bad keys named with `key_prefix`.
    fn check(config: &Self::Config, key_prefix: &str) -> Result<(), ConfigError> {
        let _ = (config, key_prefix);
        Ok(())
    }

    /// Checks the values the overrides of one instance write (`specs`,
    /// lowest first: code and TOML's, then the environment's) against each
    /// other, as an attribute's are (a bulkhead's limits in order among
    /// those they write), bad keys named with `key_prefix`. Nothing is
    /// above them, so what they write together is final; a value they
    /// leave out comes from a layer below and is not checked here.
    fn check_overrides(specs: &[&Self::Spec], key_prefix: &str) -> Result<(), ConfigError> {
        let _ = (specs, key_prefix);
        Ok(())
    }

    /// Every key configuration sets, with its value in `config`, in the
    /// order of the policy's keys: what a reload reports key by key.
    fn values(config: &Self::Config) -> Vec<(&'static str, String)>;

    /// A new instance.
    fn create(id: &str, config: Self::Config, context: PolicyContext) -> Self;

    /// Applies what it can of `new` to a live instance configured with
    /// `old` (nothing, unless the policy can change live); what it took
    /// shows in [`live`](Self::live).
    fn reconfigure(&self, old: &Self::Config, new: &Self::Config) {
        let _ = (old, new);
    }

    /// The configuration a live instance runs with now, where `declared` is
    /// what the registry last resolved for it (a bulkhead's limit may have
    /// changed since).
    fn live(&self, declared: &Self::Config) -> Self::Config {
        let _ = declared;
        self.config()
    }

    /// Checks what a reload would resolve for the instances of `store`
    /// (`plan`: the id and new configuration of each that changes) before
    /// anything is installed: a bulkhead's resource budgets.
    fn check_plan(
        store: &Store<Self>,
        plan: &[(String, Self::Config)],
        budgets: &Budgets,
    ) -> Result<(), RegistryError> {
        let _ = (store, plan, budgets);
        Ok(())
    }

    /// Declares instance `id` in the batch `declarations` (a bulkhead
    /// also takes its place on its resource).
    ///
    /// # Errors
    ///
    /// As for [`Declarations::stage`].
    fn declare(
        declarations: &Declarations<'_>,
        id: &str,
        source: &str,
        spec: &Self::Spec,
    ) -> Result<Self, RegistryError> {
        declarations.stage(id, source, spec)
    }

    /// `policies` with this policy at its place in the fixed order.
    fn compose(self, policies: Policies) -> Policies;

    /// Its list in a registry's snapshot.
    fn snapshots(snapshot: &mut RegistrySnapshot) -> &mut Vec<Self::Snapshot>;

    /// `spec` with `key` set from a configuration source, named `full_key`
    /// in messages.
    ///
    /// # Errors
    ///
    /// CFG-001 for an unknown key, with the closest one; the ATR code of a
    /// bad value.
    fn set(
        spec: Self::Spec,
        key: &str,
        value: &Value,
        full_key: &str,
    ) -> Result<Self::Spec, RegistryError> {
        match configured::<Self>().find(|known| known.name() == key) {
            Some(known) => {
                let value = value.read(known, full_key)?;
                Ok(Self::set_key(spec, known.name(), value).map_err(|e| e.with_key(full_key))?)
            }
            None => Err(ConfigSourceError::UnknownKey {
                key: full_key.to_owned(),
                hint: suggest(key, &key_names::<Self>()),
            }
            .into()),
        }
    }
}

/// Something done with one policy's type, for a [`PolicyKind`] known only
/// as a value: see [`for_kind`].
pub(crate) trait ForKind {
    /// What it gives.
    type Output;
    /// Does it with `P`.
    fn run<P: Managed>(self) -> Self::Output;
}

/// `f` run with the policy of `kind`: the one place that goes from a kind
/// to its type (a new policy is one arm here and its `impl Managed`).
pub(crate) fn for_kind<F: ForKind>(kind: PolicyKind, f: F) -> F::Output {
    match kind {
        PolicyKind::Bulkhead => f.run::<Bulkhead>(),
        PolicyKind::Retry => f.run::<Retry>(),
        PolicyKind::CircuitBreaker => f.run::<CircuitBreaker>(),
        PolicyKind::Timeout => f.run::<Timeout>(),
        PolicyKind::RateLimiter => f.run::<RateLimiter>(),
        PolicyKind::Hedge => f.run::<Hedge>(),
        PolicyKind::Fallback => f.run::<Fallback>(),
        PolicyKind::Chaos => f.run::<Chaos>(),
    }
}

/// The keys of `P` that configuration sets on its config builder (an
/// instance's `base_config` aside).
fn configured<P: Managed>() -> impl Iterator<Item = &'static Key> {
    P::KIND
        .keys()
        .iter()
        .filter(|key| key.origin().in_configuration())
}

/// The names of `P`'s configuration keys (an instance's `base_config`
/// aside).
pub(crate) fn key_names<P: Managed>() -> Vec<&'static str> {
    configured::<P>().map(Key::name).collect()
}

/// The policy `P` built on its own from `spec` over the built-in defaults,
/// on `context`: outside any registry.
///
/// # Errors
///
/// The ATR code of a value `spec` gives.
pub(crate) fn standalone<P: Managed>(
    id: &str,
    spec: &P::Spec,
    context: &PolicyContext,
) -> Result<P, ConfigError> {
    let config = P::build(spec, &P::Config::default(), "")?;
    P::check(&config, "")?;
    Ok(P::create(id, config, context.clone()))
}

/// The parts of [`Policy`] and [`Managed`] that each policy of
/// `bulkhead-core` implements alike, with the inherent methods of the same
/// names it has; `$field` is its list in a [`RegistrySnapshot`], `$with`
/// the method of `Policies` that composes it.
macro_rules! policy_methods {
    ($field:ident, $with:ident) => {
        fn config_name(spec: &Self::Spec) -> Option<&str> {
            spec.config_name()
        }

        fn with_config_name(spec: Self::Spec, name: &str) -> Self::Spec {
            spec.config(name)
        }

        fn set_key(
            spec: Self::Spec,
            key: &str,
            value: bulkhead_core::keys::KeyValue,
        ) -> Result<Self::Spec, bulkhead_core::ConfigError> {
            spec.set_key(key, value)
        }

        fn build(
            spec: &Self::Spec,
            base: &Self::Config,
            key_prefix: &str,
        ) -> Result<Self::Config, bulkhead_core::ConfigError> {
            spec.build_keyed(base, key_prefix)
        }

        fn values(config: &Self::Config) -> Vec<(&'static str, String)> {
            config.values()
        }

        fn create(id: &str, config: Self::Config, context: bulkhead_core::PolicyContext) -> Self {
            Self::with_context(id, config, context)
        }

        fn compose(self, policies: bulkhead_core::Policies) -> bulkhead_core::Policies {
            policies.$with(self)
        }

        fn snapshots(snapshot: &mut crate::snapshot::RegistrySnapshot) -> &mut Vec<Self::Snapshot> {
            &mut snapshot.$field
        }
    };
}
use policy_methods;

/// What the registry names after a policy, alike for every policy but the
/// bulkhead (whose methods are the ones the others' docs point to) but for
/// the words: `$handle`, the name of its [`Handle`](crate::Handle), and its
/// method lending the policy; `registry.$method(id)`, `$config` and
/// `$instance` of `RegistryBuilder`, `Declarations::$method`,
/// `PolicySpecs::$method` and `RegistrySnapshot::$list`. Its
/// configurations are called `$word` configurations, one instance is a
/// `$one`, several are `$many`; the docs written before `config` go on
/// `$config`.
macro_rules! named_methods {
    (
        policy: $policy:ident, spec: $spec:ident, handle: $handle:ident, snapshot: $snapshot:ident,
        method: $method:ident, instance: $instance:ident, list: $list:ident,
        words: $word:literal, $one:literal, $many:literal,
        $(#[$config_doc:meta])*
        config: $config:ident $(,)?
    ) => {
        #[doc = concat!("A view of one ", $one, " of a registry, from [`Registry::", stringify!($method), "`](crate::Registry::", stringify!($method), ").")]
        pub type $handle = crate::Handle<$policy>;

        impl crate::Handle<$policy> {
            /// The policy itself.
            pub fn $method(&self) -> &$policy {
                &self.policy
            }
        }

        impl crate::Registry {
            #[doc = concat!("The ", $one, " with this instance id.")]
            ///
            /// # Errors
            ///
            #[doc = concat!("REG-009 if no ", $one, " has this id.")]
            pub fn $method(&self, id: &str) -> Result<$handle, crate::RegistryError> {
                self.handle(id)
            }
        }

        impl crate::RegistryBuilder {
            #[doc = concat!("Defines (or extends) the named ", $word, " configuration `name`; see")]
            /// [`bulkhead_config`](Self::bulkhead_config).
            $(#[$config_doc])*
            pub fn $config(self, name: impl Into<String>, f: impl FnOnce($spec) -> $spec) -> Self {
                self.policy_config::<$policy>(name, f)
            }

            #[doc = concat!("Overrides values of the ", $word, " instance `id`; see")]
            /// [`bulkhead_instance`](Self::bulkhead_instance).
            pub fn $instance(self, id: impl Into<String>, f: impl FnOnce($spec) -> $spec) -> Self {
                self.policy_instance::<$policy>(id, f)
            }
        }

        impl crate::Declarations<'_> {
            #[doc = concat!("Declares ", $one, " `id`, as [`bulkhead`](Self::bulkhead) does.")]
            ///
            /// # Errors
            ///
            /// REG-004, REG-008, CFG-004 or the ATR code of an invalid value.
            pub fn $method(
                &mut self,
                id: &str,
                source: &str,
                spec: &$spec,
            ) -> Result<$policy, crate::RegistryError> {
                <$policy as crate::policy::Managed>::declare(self, id, source, spec)
            }
        }

        impl crate::PolicySpecs {
            #[doc = concat!("Adds the ", $one, ", with instance id `name` if given.")]
            pub fn $method(self, name: Option<&str>, spec: $spec) -> Self {
                self.with::<$policy>(name, spec)
            }
        }

        impl crate::RegistrySnapshot {
            #[doc = concat!("The ", $many, ", sorted by instance id.")]
            pub fn $list(&self) -> &[$snapshot] {
                &self.$list
            }
        }
    };
}
use named_methods;

/// The methods of [`Policy`] that each policy of `bulkhead-core` has as
/// inherent methods of the same names.
macro_rules! inherent_methods {
    () => {
        fn instance(&self) -> &str {
            Self::instance(self)
        }

        fn config(&self) -> Self::Config {
            Self::config(self)
        }
    };
}
use inherent_methods;

#[cfg(test)]
mod tests {
    use bulkhead_core::keys::ValueKind;

    use super::*;

    /// A value of `kind` as a source writes it.
    fn written(kind: ValueKind) -> Value {
        match kind {
            ValueKind::Limit { .. } | ValueKind::Count { .. } => Value::Integer(1),
            ValueKind::Number { range, .. } => Value::Float(range.example()),
            ValueKind::Duration { .. } => Value::Text("1s".to_owned()),
            ValueKind::Delay => Value::Text("p90".to_owned()),
            ValueKind::Latency => Value::Text("100ms..500ms".to_owned()),
            ValueKind::Seed => Value::Integer(42),
            ValueKind::Bool => Value::Bool(false),
            ValueKind::Choice { choices, .. } => Value::Text(choices[0].to_owned()),
            ValueKind::RejectionKinds => Value::Text("Timeout, BulkheadFull".to_owned()),
            ValueKind::Name => Value::Text("db".to_owned()),
            ValueKind::Priority => Value::Text("critical".to_owned()),
            ValueKind::ShedAt => Value::Text("sheddable=0.25, normal=0.9".to_owned()),
            ValueKind::Predicate | ValueKind::Method => {
                unreachable!("configuration takes no predicate and no method")
            }
        }
    }

    /// Sets each configuration key of `P` to a value of its kind.
    struct EveryKeySet;

    impl ForKind for EveryKeySet {
        type Output = ();

        fn run<P: Managed>(self) {
            for key in configured::<P>() {
                let value = written(key.kind());
                let spec = P::set(P::Spec::default(), key.name(), &value, "k").unwrap();
                assert!(
                    P::build(&spec, &P::Config::default(), "").is_ok(),
                    "{}.{} = {value}",
                    P::KIND,
                    key.name()
                );
            }
            assert!(!key_names::<P>().contains(&"base_config"), "{}", P::KIND);
        }
    }

    #[test]
    fn every_policy_reads_each_configuration_key_by_its_kind() {
        for kind in PolicyKind::ALL {
            for_kind(kind, EveryKeySet);
        }
    }

    #[test]
    fn an_unknown_key_is_cfg_001_with_the_closest_one() {
        let err = Bulkhead::set(
            Default::default(),
            "max_concurent",
            &Value::Integer(3),
            "bulkhead.configs.x.max_concurent",
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "CFG-001: unknown configuration key bulkhead.configs.x.max_concurent; did you mean \"max_concurrent\"?"
        );
    }
}
