//! How the registry keeps one kind of policy: its named configurations, its
//! per-instance overrides and its instances, resolved with one precedence
//! rule for every kind.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{PoisonError, RwLock};

use bulkhead_core::{ConfigError, PolicyContext};
use dashmap::DashMap;

use crate::error::{Conflict, RegistryError};
use crate::source::{Setting, Target, Value, env_name, normalize, suggest};

/// The name of the configuration every instance starts from.
pub const DEFAULT_CONFIG: &str = "default";

/// One kind of policy, as the registry stores it.
pub(crate) trait Kind: 'static {
    /// The kind's name in messages and configuration keys (`bulkhead`).
    const NAME: &'static str;
    /// Its configuration keys.
    const KEYS: &'static [&'static str];
    /// A resolved configuration.
    type Config: Clone + PartialEq + fmt::Display + Default + Send + Sync;
    /// Explicit values laid over a base configuration (the config builder).
    type Spec: Clone + Default + Send + Sync;
    /// A live instance.
    type Policy: Clone + Send + Sync;

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
    fn create(id: &str, config: Self::Config, context: PolicyContext) -> Self::Policy;
    /// `spec` with `key` set from a configuration source.
    fn set(
        spec: Self::Spec,
        key: &str,
        value: &Value,
        full_key: &str,
    ) -> Result<Self::Spec, RegistryError>;
    /// Applies what it can of `new` to a live instance configured with
    /// `old`; whether all of it took effect.
    fn reconfigure(policy: &Self::Policy, old: &Self::Config, new: &Self::Config) -> bool;
    /// The configuration a live instance runs with now (a bulkhead's limit
    /// may have been changed since it was declared).
    fn live(policy: &Self::Policy, declared: &Self::Config) -> Self::Config;
}

/// An instance and what it was declared with.
pub(crate) struct Declared<K: Kind> {
    pub(crate) policy: K::Policy,
    pub(crate) config: K::Config,
    /// The values given in code, to resolve it again on a reload.
    pub(crate) spec: K::Spec,
    pub(crate) source: String,
}

impl<K: Kind> Clone for Declared<K> {
    fn clone(&self) -> Self {
        Declared {
            policy: self.policy.clone(),
            config: self.config.clone(),
            spec: self.spec.clone(),
            source: self.source.clone(),
        }
    }
}

/// The named configurations and per-instance overrides of one kind: from
/// code and from TOML by exact name, from the environment by normalized name
/// (applied after the others).
pub(crate) struct Layers<K: Kind> {
    configs: HashMap<String, K::Spec>,
    overrides: HashMap<String, K::Spec>,
    env_configs: HashMap<String, K::Spec>,
    env_overrides: HashMap<String, K::Spec>,
}

impl<K: Kind> Default for Layers<K> {
    fn default() -> Self {
        Layers {
            configs: HashMap::new(),
            overrides: HashMap::new(),
            env_configs: HashMap::new(),
            env_overrides: HashMap::new(),
        }
    }
}

impl<K: Kind> Clone for Layers<K> {
    fn clone(&self) -> Self {
        Layers {
            configs: self.configs.clone(),
            overrides: self.overrides.clone(),
            env_configs: self.env_configs.clone(),
            env_overrides: self.env_overrides.clone(),
        }
    }
}

impl<K: Kind> fmt::Debug for Layers<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Layers")
            .field("configs", &self.configs.keys())
            .field("instances", &self.overrides.keys())
            .field("env_configs", &self.env_configs.keys())
            .field("env_instances", &self.env_overrides.keys())
            .finish()
    }
}

impl<K: Kind> Layers<K> {
    /// Extends the named configuration `name` in code.
    pub(crate) fn config(&mut self, name: String, f: impl FnOnce(K::Spec) -> K::Spec) {
        let entry = self.configs.entry(name).or_default();
        *entry = f(std::mem::take(entry));
    }

    /// Extends the overrides of instance `id` in code.
    pub(crate) fn instance(&mut self, id: String, f: impl FnOnce(K::Spec) -> K::Spec) {
        let entry = self.overrides.entry(id).or_default();
        *entry = f(std::mem::take(entry));
    }

    /// Applies one setting of this kind from a source, checking its value
    /// on its own so that a bad one is reported with the source's key.
    pub(crate) fn apply(&mut self, setting: &Setting) -> Result<(), RegistryError> {
        let (map, name, instance) = match &setting.target {
            Target::Config(name) => (&mut self.configs, name.clone(), false),
            Target::Instance(id) => (&mut self.overrides, id.clone(), true),
            Target::EnvConfig(name) => (&mut self.env_configs, normalize(name), false),
            Target::EnvInstance(id) => (&mut self.env_overrides, normalize(id), true),
        };
        let key = setting.key.as_str();
        let full_key = setting.full_key.as_str();
        let single = if key == "base_config" && instance {
            let Some(base) = setting.value.text().filter(|t| !t.is_empty()) else {
                return Err(RegistryError::Malformed {
                    source_name: full_key.to_owned(),
                    message: format!("base_config must name a config, got {}", setting.value),
                });
            };
            K::with_config_name(K::Spec::default(), base)
        } else {
            let single =
                K::set(K::Spec::default(), key, &setting.value, full_key).map_err(|error| {
                    match error {
                        // An instance also takes `base_config`: suggest it too.
                        RegistryError::UnknownKey { key: full, .. } if instance => {
                            RegistryError::UnknownKey {
                                key: full,
                                hint: suggest(key, &[K::KEYS, &["base_config"]].concat()),
                            }
                        }
                        error => error,
                    }
                })?;
            K::build(&single, &K::Config::default(), "").map_err(|e| e.with_key(full_key))?;
            single
        };
        let entry = map.entry(name).or_default();
        *entry = if key == "base_config" {
            K::with_config_name(
                std::mem::take(entry),
                K::config_name(&single).unwrap_or_default(),
            )
        } else {
            K::set(std::mem::take(entry), key, &setting.value, full_key)?
        };
        Ok(())
    }

    /// The named configuration `name`, from code/TOML and the environment.
    fn named(&self, name: &str) -> (Option<&K::Spec>, Option<&K::Spec>) {
        (
            self.configs.get(name),
            env_name(name).and_then(|n| self.env_configs.get(&n)),
        )
    }

    /// The environment's overrides for instance `id`.
    fn env_override(&self, id: &str) -> Option<&K::Spec> {
        env_name(id).and_then(|n| self.env_overrides.get(&n))
    }

    /// The named configuration instance `id`, declared with `spec`, starts
    /// from: the one its overrides or `spec` choose, else `default`.
    fn base_name<'a>(&'a self, id: &str, spec: &'a K::Spec) -> &'a str {
        self.env_override(id)
            .and_then(K::config_name)
            .or(self.overrides.get(id).and_then(K::config_name))
            .or(K::config_name(spec))
            .unwrap_or(DEFAULT_CONFIG)
    }

    /// Refuses a match through the environment that is not one to one
    /// (CFG-004): variables name the normalized form of `id`, and another
    /// id among `declared` has the same form; or they name the form of a
    /// config `id` uses (`default`, or its base config), and another config
    /// name (given in code or TOML, or used by an instance among `declared`)
    /// has it too. `declared` (the other instances of this kind, with their
    /// specs) is called only when variables name such a form.
    pub(crate) fn check_env_names(
        &self,
        id: &str,
        spec: &K::Spec,
        declared: impl Fn() -> Vec<(String, K::Spec)>,
    ) -> Result<(), RegistryError> {
        let ambiguous =
            |section, name, first: &str, second: &str| RegistryError::AmbiguousEnvName {
                policy: K::NAME,
                section,
                name,
                first: first.to_owned(),
                second: second.to_owned(),
            };
        if let Some(name) = env_name(id).filter(|n| self.env_overrides.contains_key(n)) {
            let others = declared();
            if let Some((other, _)) = others
                .iter()
                .find(|(other, _)| other != id && normalize(other) == name)
            {
                return Err(ambiguous("instances", name, other, id));
            }
        }
        let base = self.base_name(id, spec);
        for used in [DEFAULT_CONFIG, base] {
            let Some(name) = env_name(used).filter(|n| self.env_configs.contains_key(n)) else {
                continue;
            };
            let others = declared();
            let known = self
                .configs
                .keys()
                .map(String::as_str)
                .chain([DEFAULT_CONFIG])
                .chain(
                    others
                        .iter()
                        .map(|(other, spec)| self.base_name(other, spec)),
                );
            if let Some(other) = known
                .filter(|other| *other != used)
                .find(|other| normalize(other) == name)
            {
                return Err(ambiguous("configs", name, other, used));
            }
        }
        Ok(())
    }

    fn known_configs(&self) -> String {
        let mut names: Vec<String> = self.configs.keys().cloned().collect();
        names.extend(
            self.env_configs
                .keys()
                .map(|n| format!("{n} (environment)")),
        );
        if !names.iter().any(|n| n == DEFAULT_CONFIG) {
            names.push(DEFAULT_CONFIG.to_owned());
        }
        names.sort_unstable();
        names.join(", ")
    }

    /// Resolves the configuration of instance `id`, highest precedence
    /// first: the overrides for `id`; `spec`; the named config the overrides
    /// or `spec` choose; `default`; the built-in defaults. At each level the
    /// environment's values come after the others.
    pub(crate) fn resolve(&self, id: &str, spec: &K::Spec) -> Result<K::Config, RegistryError> {
        let exact = self.overrides.get(id);
        let env = self.env_override(id);
        let mut config = K::Config::default();
        let (default, env_default) = self.named(DEFAULT_CONFIG);
        config = layer::<K>(config, default, &format!("{}.configs.default.", K::NAME))?;
        config = layer::<K>(
            config,
            env_default,
            &format!("{}.configs.default.", K::NAME),
        )?;
        let name = self.base_name(id, spec);
        if name != DEFAULT_CONFIG {
            let (base, env_base) = self.named(name);
            if base.is_none() && env_base.is_none() {
                return Err(RegistryError::UnknownConfig {
                    policy: K::NAME,
                    instance: id.to_owned(),
                    config: name.to_owned(),
                    known: self.known_configs(),
                });
            }
            let prefix = format!("{}.configs.{name}.", K::NAME);
            config = layer::<K>(config, base, &prefix)?;
            config = layer::<K>(config, env_base, &prefix)?;
        }
        config = K::build(spec, &config, "")?;
        let prefix = format!("{}.instances.{id}.", K::NAME);
        config = layer::<K>(config, exact, &prefix)?;
        Ok(layer::<K>(config, env, &prefix)?)
    }

    /// Checks what can be checked before any instance exists: every named
    /// config and override builds, every `base_config` names a config, and
    /// no variable names a config whose name normalizes like another's
    /// (CFG-004).
    pub(crate) fn validate(&self) -> Result<(), RegistryError> {
        let mut by_env_name: BTreeMap<String, &str> = BTreeMap::new();
        let mut names: Vec<&str> = self.configs.keys().map(String::as_str).collect();
        names.push(DEFAULT_CONFIG);
        names.sort_unstable();
        names.dedup();
        for name in names {
            let Some(env) = env_name(name).filter(|n| self.env_configs.contains_key(n)) else {
                continue;
            };
            if let Some(first) = by_env_name.insert(env.clone(), name) {
                return Err(RegistryError::AmbiguousEnvName {
                    policy: K::NAME,
                    section: "configs",
                    name: env,
                    first: first.to_owned(),
                    second: name.to_owned(),
                });
            }
        }
        let default = K::Config::default();
        for (name, spec) in self.configs.iter().chain(&self.env_configs) {
            K::build(spec, &default, &format!("{}.configs.{name}.", K::NAME))?;
        }
        for (id, spec) in self.overrides.iter().chain(&self.env_overrides) {
            K::build(spec, &default, &format!("{}.instances.{id}.", K::NAME))?;
            if let Some(name) = K::config_name(spec).filter(|n| *n != DEFAULT_CONFIG) {
                if let (None, None) = self.named(name) {
                    return Err(RegistryError::UnknownConfig {
                        policy: K::NAME,
                        instance: id.clone(),
                        config: name.to_owned(),
                        known: self.known_configs(),
                    });
                }
            }
        }
        Ok(())
    }
}

fn layer<K: Kind>(
    config: K::Config,
    spec: Option<&K::Spec>,
    prefix: &str,
) -> Result<K::Config, ConfigError> {
    match spec {
        Some(spec) => K::build(spec, &config, prefix),
        None => Ok(config),
    }
}

/// What a reload changed in one instance.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Change {
    /// The kind of policy, such as `"bulkhead"`.
    pub policy: &'static str,
    /// The instance id.
    pub instance: String,
    /// The configuration the live instance ran with before.
    pub from: String,
    /// The configuration resolved now.
    pub to: String,
    /// Whether the live instance now works with the new configuration.
    /// Only a bulkhead's `max_concurrent` changes live; any other change
    /// takes effect for instances created from now on (a new registry, or
    /// a new id), and the instance keeps its old values: every later reload
    /// lists it again while the two differ.
    pub applied: bool,
}

/// The configurations and instances of one kind of policy.
pub(crate) struct Store<K: Kind> {
    layers: RwLock<Layers<K>>,
    instances: DashMap<String, Declared<K>>,
}

impl<K: Kind> Store<K> {
    pub(crate) fn new(layers: Layers<K>) -> Self {
        Store {
            layers: RwLock::new(layers),
            instances: DashMap::new(),
        }
    }

    fn layers(&self) -> std::sync::RwLockReadGuard<'_, Layers<K>> {
        self.layers.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// The instance `id`.
    pub(crate) fn get(&self, id: &str) -> Result<K::Policy, RegistryError> {
        match self.instances.get(id) {
            Some(declared) => Ok(declared.policy.clone()),
            None => Err(self.unknown_instance(id)),
        }
    }

    /// Resolves instance `id` under the current layers.
    pub(crate) fn resolve(&self, id: &str, spec: &K::Spec) -> Result<K::Config, RegistryError> {
        self.layers().resolve(id, spec)
    }

    /// Every instance with the configuration it runs with now.
    pub(crate) fn configs(&self) -> Vec<(String, K::Config)> {
        self.instances
            .iter()
            .map(|d| (d.key().clone(), K::live(&d.policy, &d.config)))
            .collect()
    }

    /// Every instance.
    pub(crate) fn policies(&self) -> Vec<K::Policy> {
        self.instances.iter().map(|d| d.policy.clone()).collect()
    }

    /// Every instance with the values its declaration gave in code.
    fn specs(&self) -> Vec<(String, K::Spec)> {
        self.instances
            .iter()
            .map(|d| (d.key().clone(), d.spec.clone()))
            .collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.instances.len()
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
        let layers = self.layers();
        let config = layers.resolve(id, spec)?;
        layers.check_env_names(id, spec, || {
            let mut declared = self.specs();
            declared.extend(staged.0.iter().map(|(id, d)| (id.clone(), d.spec.clone())));
            declared
        })?;
        drop(layers);
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
                        spec: spec.clone(),
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

    /// Resolves every instance under `layers` without changing anything:
    /// the new configuration of each instance that does not run with it
    /// (compared with what it runs with now, so that a reload also puts back
    /// a limit changed by `set_max_concurrent`).
    pub(crate) fn plan(
        &self,
        layers: &Layers<K>,
    ) -> Result<Vec<(String, K::Config)>, RegistryError> {
        let mut changes = Vec::new();
        let specs = self.specs();
        for declared in self.instances.iter() {
            let config = layers.resolve(declared.key(), &declared.spec)?;
            layers.check_env_names(declared.key(), &declared.spec, || specs.clone())?;
            if config != K::live(&declared.policy, &declared.config) {
                changes.push((declared.key().clone(), config));
            }
        }
        Ok(changes)
    }

    /// Installs `layers` and reconfigures the instances `plan` found.
    pub(crate) fn install(
        &self,
        layers: Layers<K>,
        plan: Vec<(String, K::Config)>,
        changes: &mut Vec<Change>,
    ) {
        *self.layers.write().unwrap_or_else(PoisonError::into_inner) = layers;
        for (id, config) in plan {
            if let Some(mut declared) = self.instances.get_mut(&id) {
                let live = K::live(&declared.policy, &declared.config);
                let applied = K::reconfigure(&declared.policy, &live, &config);
                changes.push(Change {
                    policy: K::NAME,
                    instance: id.clone(),
                    from: live.to_string(),
                    to: config.to_string(),
                    applied,
                });
                declared.config = config;
            }
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

    pub(crate) fn policies(&self) -> impl Iterator<Item = &K::Policy> {
        self.0.iter().map(|(_, declared)| &declared.policy)
    }

    pub(crate) fn configs(&self) -> impl Iterator<Item = (&str, &K::Config)> {
        self.0
            .iter()
            .map(|(id, declared)| (id.as_str(), &declared.config))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bulkhead_core::SystemClock;

    use super::*;
    use crate::kinds::Bulkheads;
    use crate::source::from_env;

    #[test]
    fn a_reload_whose_variables_would_match_two_live_ids_is_cfg_004() {
        let store = Store::<Bulkheads>::new(Layers::default());
        let context = PolicyContext::new(Arc::new(SystemClock));
        let mut staged = Staged::new();
        for id in ["a-b", "a.b"] {
            store
                .declare(&mut staged, &context, id, "t", &Default::default())
                .unwrap();
        }
        store.commit(staged);
        let variable = "APP_BULKHEAD__INSTANCES__A_B__MAX_CONCURRENT";
        let mut layers = Layers::default();
        for setting in from_env("APP_", [(variable.into(), "3".into())]).unwrap() {
            layers.apply(&setting).unwrap();
        }
        let err = store.plan(&layers).unwrap_err();
        assert_eq!(err.code(), "CFG-004");
        assert!(err.to_string().contains("\"a-b\""), "{err}");
        assert!(err.to_string().contains("\"a.b\""), "{err}");
    }
}
