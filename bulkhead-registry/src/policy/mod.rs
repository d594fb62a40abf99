//! What the registry needs to know of each policy: the [`Policy`] trait,
//! implemented for the five policies of `bulkhead-core` in the files beside
//! this one, each with its table of configuration keys.

mod bulkhead;
mod circuit_breaker;
mod rate_limiter;
mod retry;
mod timeout;

use std::fmt;

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
    /// Its configuration keys, each with how a configuration value sets it.
    const KEYS: &'static [Key<Self::Spec>];
    /// A resolved configuration.
    type Config: Clone + PartialEq + fmt::Display + Default + Send + Sync;
    /// The values given in code, laid over a base configuration: the
    /// policy's config builder.
    type Spec: Clone + Default + fmt::Debug + Send + Sync;

    /// The named base configuration `spec` chooses, if any.
    fn config_name(spec: &Self::Spec) -> Option<&str>;
    /// `spec` choosing the named base configuration `name`.
    fn with_config_name(spec: Self::Spec, name: &str) -> Self::Spec;
    /// `spec`'s values over `base`, bad keys named with `key_prefix`.
    fn build(
        spec: &Self::Spec,
        base: &Self::Config,
        key_prefix: &str,
    ) -> Result<Self::Config, ConfigError>;
    /// A new instance.
    fn create(id: &str, config: Self::Config, context: PolicyContext) -> Self;
    /// The configuration the instance holds.
    fn running(&self) -> Self::Config;

    /// Applies what it can of `new` to a live instance configured with
    /// `old`; whether all of it took effect. Only an equal configuration,
    /// unless the policy can change live.
    fn reconfigure(&self, old: &Self::Config, new: &Self::Config) -> bool {
        old == new
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
        match Self::KEYS.iter().find(|known| known.name == key) {
            Some(known) => Ok((known.set)(spec, value, full_key)?),
            None => Err(ConfigSourceError::UnknownKey {
                key: full_key.to_owned(),
                hint: suggest(key, &key_names::<Self>()),
            }
            .into()),
        }
    }
}

/// The names of `P`'s configuration keys.
pub(crate) fn key_names<P: Policy>() -> Vec<&'static str> {
    P::KEYS.iter().map(|key| key.name).collect()
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
    Ok(P::create(id, config, context.clone()))
}

/// One configuration key of a policy whose config builder is `S`.
pub(crate) struct Key<S> {
    /// As written in configuration: `max_concurrent`.
    pub(crate) name: &'static str,
    /// Sets it on the builder from a value, naming the full key in errors.
    set: fn(S, &Value, &str) -> Result<S, ConfigError>,
}

impl<S> Key<S> {
    /// The key `name`, set with `set`.
    pub(crate) const fn new(
        name: &'static str,
        set: fn(S, &Value, &str) -> Result<S, ConfigError>,
    ) -> Self {
        Key { name, set }
    }
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

        fn build(
            spec: &Self::Spec,
            base: &Self::Config,
            key_prefix: &str,
        ) -> Result<Self::Config, bulkhead_core::ConfigError> {
            spec.build_keyed(base, key_prefix)
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
    use bulkhead_core::{Bulkhead, CircuitBreaker, RateLimiter, Retry, Timeout};

    use super::*;

    fn names_are_unique<P: Policy>() {
        let mut names = key_names::<P>();
        names.sort_unstable();
        let count = names.len();
        names.dedup();
        assert_eq!(names.len(), count, "{}", P::KIND);
        assert!(!names.contains(&"base_config"), "{}", P::KIND);
    }

    #[test]
    fn every_policy_names_each_key_once() {
        for kind in PolicyKind::ALL {
            match kind {
                PolicyKind::Bulkhead => names_are_unique::<Bulkhead>(),
                PolicyKind::Retry => names_are_unique::<Retry>(),
                PolicyKind::CircuitBreaker => names_are_unique::<CircuitBreaker>(),
                PolicyKind::Timeout => names_are_unique::<Timeout>(),
                PolicyKind::RateLimiter => names_are_unique::<RateLimiter>(),
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
