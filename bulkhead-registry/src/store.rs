//! How the registry keeps one kind of policy: its named configurations, its
//! per-instance overrides and its instances, resolved with one precedence
//! rule for every kind.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock};

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

/// Which open batch of declarations staged an instance.
pub(crate) type Batch = u64;

/// The configurations and instances of one kind of policy.
pub(crate) struct Store<K: Kind> {
    layers: RwLock<Layers<K>>,
    /// The registered instances, which lookups see.
    instances: DashMap<String, Declared<K>>,
    /// The instances open batches declared and have not committed, each
    /// with its batch. Used only under the registry's serialising lock, by
    /// the thread whose batches they are, so that what it does while a
    /// batch is open (declare in another batch, check a budget, reload)
    /// takes them into account.
    staged: Mutex<Vec<Staged<K>>>,
}

/// An instance declared by an open batch.
struct Staged<K: Kind> {
    batch: Batch,
    id: String,
    declared: Declared<K>,
}

impl<K: Kind> Store<K> {
    pub(crate) fn new(layers: Layers<K>) -> Self {
        Store {
            layers: RwLock::new(layers),
            instances: DashMap::new(),
            staged: Mutex::new(Vec::new()),
        }
    }

    fn layers(&self) -> std::sync::RwLockReadGuard<'_, Layers<K>> {
        self.layers.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn staged(&self) -> MutexGuard<'_, Vec<Staged<K>>> {
        self.staged.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The registered instance `id`.
    pub(crate) fn get(&self, id: &str) -> Result<K::Policy, RegistryError> {
        match self.instances.get(id) {
            Some(declared) => Ok(declared.policy.clone()),
            None => Err(self.unknown_instance(id)),
        }
    }

    /// Whether `id` is registered or staged by an open batch.
    pub(crate) fn is_declared(&self, id: &str) -> bool {
        self.instances.contains_key(id) || self.staged().iter().any(|s| s.id == id)
    }

    /// Resolves instance `id` under the current layers.
    pub(crate) fn resolve(&self, id: &str, spec: &K::Spec) -> Result<K::Config, RegistryError> {
        self.layers().resolve(id, spec)
    }

    /// Every registered instance with the configuration it runs with now.
    pub(crate) fn configs(&self) -> Vec<(String, K::Config)> {
        self.instances
            .iter()
            .map(|d| (d.key().clone(), K::live(&d.policy, &d.config)))
            .collect()
    }

    /// Every instance, registered or staged by an open batch, with the
    /// configuration it runs with now: what a budget must hold.
    pub(crate) fn declared_configs(&self) -> Vec<(String, K::Config)> {
        self.each_declared(|d| K::live(&d.policy, &d.config))
    }

    /// Every registered instance.
    pub(crate) fn policies(&self) -> Vec<K::Policy> {
        self.instances.iter().map(|d| d.policy.clone()).collect()
    }

    /// `f` of every instance, registered or staged, once each (an id two
    /// open batches staged, or one staged and registered since, is one
    /// instance).
    fn each_declared<T>(&self, f: impl Fn(&Declared<K>) -> T) -> Vec<(String, T)> {
        let mut all: Vec<(String, T)> = self
            .instances
            .iter()
            .map(|d| (d.key().clone(), f(d.value())))
            .collect();
        let mut seen = HashSet::new();
        for staged in self.staged().iter() {
            if !self.instances.contains_key(&staged.id) && seen.insert(staged.id.as_str()) {
                all.push((staged.id.clone(), f(&staged.declared)));
            }
        }
        all
    }

    /// Every instance, registered or staged, with the values its
    /// declaration gave in code.
    fn specs(&self) -> Vec<(String, K::Spec)> {
        self.each_declared(|d| d.spec.clone())
    }

    pub(crate) fn len(&self) -> usize {
        self.instances.len()
    }

    /// Resolves `id` for `batch` and returns the instance it names: one
    /// staged earlier by this or another open batch, one already
    /// registered, or a new one, which is staged. An instance staged by
    /// another batch is staged for this one too, so that whichever commits
    /// first registers it.
    pub(crate) fn declare(
        &self,
        batch: Batch,
        context: &PolicyContext,
        id: &str,
        source: &str,
        spec: &K::Spec,
    ) -> Result<K::Policy, RegistryError> {
        let layers = self.layers();
        let config = layers.resolve(id, spec)?;
        layers.check_env_names(id, spec, || self.specs())?;
        drop(layers);
        let mut staged = self.staged();
        let own = staged.iter().any(|s| s.batch == batch && s.id == id);
        let existing = match staged.iter().find(|s| s.id == id) {
            Some(other) => Some((!own, other.declared.clone())),
            None => self.instances.get(id).map(|d| (false, d.clone())),
        };
        match existing {
            Some((share, existing)) if existing.config == config => {
                let policy = existing.policy.clone();
                if share {
                    staged.push(Staged {
                        batch,
                        id: id.to_owned(),
                        declared: existing,
                    });
                }
                Ok(policy)
            }
            Some((_, existing)) => Err(RegistryError::Conflict(Box::new(Conflict {
                policy: K::NAME,
                instance: id.to_owned(),
                first_source: existing.source,
                first_config: existing.config.to_string(),
                second_source: source.to_owned(),
                second_config: config.to_string(),
            }))),
            None => {
                let policy = K::create(id, config.clone(), context.clone());
                staged.push(Staged {
                    batch,
                    id: id.to_owned(),
                    declared: Declared {
                        policy: policy.clone(),
                        config,
                        spec: spec.clone(),
                        source: source.to_owned(),
                    },
                });
                Ok(policy)
            }
        }
    }

    /// The ids `batch` staged.
    pub(crate) fn staged_ids(&self, batch: Batch) -> Vec<String> {
        self.staged()
            .iter()
            .filter(|s| s.batch == batch)
            .map(|s| s.id.clone())
            .collect()
    }

    /// Removes what `batch` staged, and returns its instances.
    pub(crate) fn take(&self, batch: Batch) -> Vec<(String, Declared<K>)> {
        let mut staged = self.staged();
        let (taken, kept) = std::mem::take(&mut *staged)
            .into_iter()
            .partition(|s| s.batch == batch);
        *staged = kept;
        taken
            .into_iter()
            .map(|s: Staged<K>| (s.id, s.declared))
            .collect()
    }

    /// Registers instances [`take`](Self::take)n from a batch.
    pub(crate) fn register(&self, declared: Vec<(String, Declared<K>)>) {
        for (id, declared) in declared {
            self.instances.insert(id, declared);
        }
    }

    /// Resolves every instance, registered or staged, under `layers`
    /// without changing anything: the new configuration of each instance
    /// that does not run with it (compared with what it runs with now, so
    /// that a reload also puts back a limit changed by
    /// `set_max_concurrent`).
    pub(crate) fn plan(
        &self,
        layers: &Layers<K>,
    ) -> Result<Vec<(String, K::Config)>, RegistryError> {
        let declared = self.each_declared(Declared::clone);
        let specs = || {
            declared
                .iter()
                .map(|(id, d)| (id.clone(), d.spec.clone()))
                .collect()
        };
        let mut changes = Vec::new();
        for (id, declared) in &declared {
            let config = layers.resolve(id, &declared.spec)?;
            layers.check_env_names(id, &declared.spec, specs)?;
            if config != K::live(&declared.policy, &declared.config) {
                changes.push((id.clone(), config));
            }
        }
        Ok(changes)
    }

    /// Installs `layers` and reconfigures the instances `plan` found,
    /// registered or staged.
    pub(crate) fn install(
        &self,
        layers: Layers<K>,
        plan: Vec<(String, K::Config)>,
        changes: &mut Vec<Change>,
    ) {
        *self.layers.write().unwrap_or_else(PoisonError::into_inner) = layers;
        let mut staged = self.staged();
        for (id, config) in plan {
            let declared = match self.instances.get(&id) {
                Some(declared) => declared.clone(),
                None => match staged.iter().find(|s| s.id == id) {
                    Some(staged) => staged.declared.clone(),
                    None => continue,
                },
            };
            let live = K::live(&declared.policy, &declared.config);
            let applied = K::reconfigure(&declared.policy, &live, &config);
            changes.push(Change {
                policy: K::NAME,
                instance: id.clone(),
                from: live.to_string(),
                to: config.to_string(),
                applied,
            });
            for staged in staged.iter_mut().filter(|s| s.id == id) {
                staged.declared.config = config.clone();
            }
            if let Some(mut registered) = self.instances.get_mut(&id) {
                registered.config = config;
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
        for id in ["a-b", "a.b"] {
            store
                .declare(1, &context, id, "t", &Default::default())
                .unwrap();
        }
        store.register(store.take(1));
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
