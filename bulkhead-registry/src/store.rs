//! How the registry keeps one kind of policy: its named configurations, its
//! per-instance overrides and its instances, resolved with one precedence
//! rule for every kind.

use std::collections::HashMap;
use std::fmt;

use bulkhead_core::{ConfigError, PolicyContext};
use dashmap::DashMap;

use crate::error::{Conflict, RegistryError};

/// The name of the configuration every instance starts from.
pub const DEFAULT_CONFIG: &str = "default";

/// One kind of policy, as the registry stores it.
pub(crate) trait Kind: 'static {
    /// The kind's name in messages and configuration keys (`bulkhead`).
    const NAME: &'static str;
    /// A resolved configuration.
    type Config: Clone + PartialEq + fmt::Display + Default + Send + Sync;
    /// Explicit values laid over a base configuration (the config builder).
    type Spec: Clone + Default + Send + Sync;
    /// A live instance.
    type Policy: Clone + Send + Sync;

    /// The named base configuration `spec` chooses, if any.
    fn config_name(spec: &Self::Spec) -> Option<&str>;
    /// `spec`'s values over `base`, bad keys named with `key_prefix`.
    fn build(
        spec: &Self::Spec,
        base: &Self::Config,
        key_prefix: &str,
    ) -> Result<Self::Config, ConfigError>;
    /// A new instance.
    fn create(id: &str, config: Self::Config, context: PolicyContext) -> Self::Policy;
}

/// An instance and what it was declared with.
pub(crate) struct Declared<K: Kind> {
    pub(crate) policy: K::Policy,
    pub(crate) config: K::Config,
    pub(crate) source: String,
}

impl<K: Kind> Clone for Declared<K> {
    fn clone(&self) -> Self {
        Declared {
            policy: self.policy.clone(),
            config: self.config.clone(),
            source: self.source.clone(),
        }
    }
}

/// The configurations and instances of one kind of policy.
pub(crate) struct Store<K: Kind> {
    configs: HashMap<String, K::Spec>,
    overrides: HashMap<String, K::Spec>,
    instances: DashMap<String, Declared<K>>,
}

impl<K: Kind> Store<K> {
    pub(crate) fn new(
        configs: HashMap<String, K::Spec>,
        overrides: HashMap<String, K::Spec>,
    ) -> Self {
        Store {
            configs,
            overrides,
            instances: DashMap::new(),
        }
    }

    /// The instance `id`.
    pub(crate) fn get(&self, id: &str) -> Result<K::Policy, RegistryError> {
        match self.instances.get(id) {
            Some(declared) => Ok(declared.policy.clone()),
            None => Err(self.unknown_instance(id)),
        }
    }

    /// Every instance.
    pub(crate) fn policies(&self) -> Vec<K::Policy> {
        self.instances.iter().map(|d| d.policy.clone()).collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.instances.len()
    }

    /// Resolves the configuration of instance `id`, highest precedence
    /// first: the overrides for `id`; `spec`; the named config the override
    /// or `spec` chooses; `default`; the built-in defaults.
    pub(crate) fn resolve(&self, id: &str, spec: &K::Spec) -> Result<K::Config, RegistryError> {
        let overrides = self.overrides.get(id);
        let mut base = K::Config::default();
        if let Some(default) = self.configs.get(DEFAULT_CONFIG) {
            base = K::build(default, &base, &format!("{}.configs.default.", K::NAME))?;
        }
        let named = overrides
            .and_then(K::config_name)
            .or(K::config_name(spec))
            .filter(|name| *name != DEFAULT_CONFIG);
        if let Some(name) = named {
            let Some(config) = self.configs.get(name) else {
                return Err(RegistryError::UnknownConfig {
                    policy: K::NAME,
                    instance: id.to_owned(),
                    config: name.to_owned(),
                    known: known_configs(self.configs.keys()),
                });
            };
            base = K::build(config, &base, &format!("{}.configs.{name}.", K::NAME))?;
        }
        let mut config = K::build(spec, &base, "")?;
        if let Some(overrides) = overrides {
            config = K::build(overrides, &config, &format!("{}.instances.{id}.", K::NAME))?;
        }
        Ok(config)
    }

    /// Resolves `id` and returns the instance it names: one staged earlier
    /// in the same batch, one already registered, or a new one, which is
    /// staged.
    pub(crate) fn declare(
        &self,
        staged: &mut Staged<K>,
        context: &PolicyContext,
        id: &str,
        source: &str,
        spec: &K::Spec,
    ) -> Result<K::Policy, RegistryError> {
        let config = self.resolve(id, spec)?;
        let existing = match staged.0.iter().find(|(staged, _)| staged == id) {
            Some((_, declared)) => Some(declared.clone()),
            None => self.instances.get(id).map(|d| d.clone()),
        };
        match existing {
            Some(existing) if existing.config == config => Ok(existing.policy),
            Some(existing) => Err(RegistryError::Conflict(Box::new(Conflict {
                policy: K::NAME,
                instance: id.to_owned(),
                first_source: existing.source,
                first_config: existing.config.to_string(),
                second_source: source.to_owned(),
                second_config: config.to_string(),
            }))),
            None => {
                let policy = K::create(id, config.clone(), context.clone());
                staged.0.push((
                    id.to_owned(),
                    Declared {
                        policy: policy.clone(),
                        config,
                        source: source.to_owned(),
                    },
                ));
                Ok(policy)
            }
        }
    }

    /// Registers what was staged.
    pub(crate) fn commit(&self, staged: Staged<K>) {
        for (id, declared) in staged.0 {
            self.instances.insert(id, declared);
        }
    }

    fn unknown_instance(&self, id: &str) -> RegistryError {
        let mut ids: Vec<String> = self.instances.iter().map(|e| e.key().clone()).collect();
        let known = match ids.len() {
            0 => String::new(),
            1..=20 => {
                ids.sort_unstable();
                format!("; known: {}", ids.join(", "))
            }
            n => format!("; {n} exist, see registry.snapshot()"),
        };
        RegistryError::UnknownInstance {
            policy: K::NAME,
            instance: id.to_owned(),
            known,
        }
    }
}

/// Instances of one kind declared in a batch and not yet registered.
pub(crate) struct Staged<K: Kind>(Vec<(String, Declared<K>)>);

impl<K: Kind> Staged<K> {
    pub(crate) fn new() -> Self {
        Staged(Vec::new())
    }

    pub(crate) fn ids(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(id, _)| id.as_str())
    }
}

fn known_configs<'a>(names: impl Iterator<Item = &'a String>) -> String {
    let mut names: Vec<&str> = names.map(String::as_str).collect();
    if !names.contains(&DEFAULT_CONFIG) {
        names.push(DEFAULT_CONFIG);
    }
    names.sort_unstable();
    names.join(", ")
}
