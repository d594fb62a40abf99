//! What the registry needs to know of each policy: the [`Policy`] trait,
//! implemented for the policies of `bulkhead-core` in the files beside
//! this one. Their configuration keys are the core crate's tables
//! ([`PolicyKind::keys`]): a key from a source is looked up there, its
//! value read by its kind ([`Value::read`]) and given to the config
//! builder's `set_key`, so that a new key needs nothing here.

mod bulkhead;
mod circuit_breaker;
mod fallback;
mod hedge;
mod rate_limiter;
mod retry;
mod timeout;

use std::fmt;

use bulkhead_core::keys::{Key, KeyValue};
use bulkhead_core::{ConfigError, PolicyContext};

use crate::error::{ConfigSourceError, RegistryError};
use crate::kind::PolicyKind;
use crate::source::Value;
use crate::suggest::suggest;

/// A policy the registry keeps: how it is configured, built, and
/// reconfigured by a reload. Implemented by the policy types themselves
/// (`Bulkhead`, `Retry`, ...).
pub(crate) trait Policy: Clone + Send + Sync + 'static {
    /// Which policy it is.
    const KIND: PolicyKind;
    /// A resolved configuration.
    type Config: Clone + PartialEq + fmt::Display + Default + Send + Sync;
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
    /// The configuration the instance holds.
    fn running(&self) -> Self::Config;

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
        self.running()
    }

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

/// The keys of `P` that configuration sets on its config builder (an
/// instance's `base_config` aside).
fn configured<P: Policy>() -> impl Iterator<Item = &'static Key> {
    P::KIND
        .keys()
        .iter()
        .filter(|key| key.origin().in_configuration())
}

/// The names of `P`'s configuration keys (an instance's `base_config`
/// aside).
pub(crate) fn key_names<P: Policy>() -> Vec<&'static str> {
    configured::<P>().map(Key::name).collect()
}

/// The policy `P` built on its own from `spec` over the built-in defaults,
/// on `context`: outside any registry.
///
/// # Errors
///
/// The ATR code of a value `spec` gives.
pub(crate) fn standalone<P: Policy>(
    id: &str,
    spec: &P::Spec,
    context: &PolicyContext,
) -> Result<P, ConfigError> {
    let config = P::build(spec, &P::Config::default(), "")?;
    P::check(&config, "")?;
    Ok(P::create(id, config, context.clone()))
}

/// The parts of [`Policy`] that each policy of `bulkhead-core` implements
/// alike, with the inherent methods of the same names it has.
macro_rules! builder_methods {
    () => {
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

        fn running(&self) -> Self::Config {
            self.config()
        }
    };
}
use builder_methods;

#[cfg(test)]
mod tests {
    use bulkhead_core::keys::ValueKind;
    use bulkhead_core::{Bulkhead, CircuitBreaker, Fallback, Hedge, RateLimiter, Retry, Timeout};

    use super::*;

    /// A value of `kind` as a source writes it.
    fn written(kind: ValueKind) -> Value {
        match kind {
            ValueKind::Limit { .. } | ValueKind::Count { .. } => Value::Integer(1),
            ValueKind::Number { range, .. } => Value::Float(range.example()),
            ValueKind::Duration { .. } => Value::Text("1s".to_owned()),
            ValueKind::Delay => Value::Text("p90".to_owned()),
            ValueKind::Bool => Value::Bool(false),
            ValueKind::Choice { choices, .. } => Value::Text(choices[0].to_owned()),
            ValueKind::RejectionKinds => Value::Text("Timeout, BulkheadFull".to_owned()),
            ValueKind::Name => Value::Text("db".to_owned()),
            ValueKind::Predicate | ValueKind::Method => {
                unreachable!("configuration takes no predicate and no method")
            }
        }
    }

    fn every_configuration_key_is_set<P: Policy>() {
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

    #[test]
    fn every_policy_reads_each_configuration_key_by_its_kind() {
        for kind in PolicyKind::ALL {
            match kind {
                PolicyKind::Bulkhead => every_configuration_key_is_set::<Bulkhead>(),
                PolicyKind::Retry => every_configuration_key_is_set::<Retry>(),
                PolicyKind::CircuitBreaker => every_configuration_key_is_set::<CircuitBreaker>(),
                PolicyKind::Timeout => every_configuration_key_is_set::<Timeout>(),
                PolicyKind::RateLimiter => every_configuration_key_is_set::<RateLimiter>(),
                PolicyKind::Hedge => every_configuration_key_is_set::<Hedge>(),
                PolicyKind::Fallback => every_configuration_key_is_set::<Fallback>(),
            }
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
