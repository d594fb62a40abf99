//! The named configurations and per-instance overrides of one policy, and
//! the one precedence rule that resolves an instance's configuration from
//! them.

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::fmt;

use bulkhead_core::ConfigError;
use bulkhead_core::keys::BASE_CONFIG;

use super::{AnyStore, Change, Store};
use crate::budget::Budgets;
use crate::error::{ConfigSourceError, RegistryError};
use crate::policy::{Managed, key_names};
use crate::source::suggest;
use crate::source::{Setting, Target, env_name, normalize};
use crate::store::Stores;

/// The name of the configuration every instance starts from.
pub const DEFAULT_CONFIG: &str = "default";

/// The named configurations and per-instance overrides of one kind: from
/// code and from TOML by exact name, from the environment by normalized name
/// (applied after the others).
#[derive(Clone)]
pub(crate) struct Layers<P: Managed> {
    configs: HashMap<String, P::Spec>,
    overrides: HashMap<String, P::Spec>,
    env_configs: HashMap<String, P::Spec>,
    env_overrides: HashMap<String, P::Spec>,
}

impl<P: Managed> Default for Layers<P> {
    fn default() -> Self {
        Layers {
            configs: HashMap::new(),
            overrides: HashMap::new(),
            env_configs: HashMap::new(),
            env_overrides: HashMap::new(),
        }
    }
}

impl<P: Managed> fmt::Debug for Layers<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Layers")
            .field("configs", &self.configs.keys())
            .field("instances", &self.overrides.keys())
            .field("env_configs", &self.env_configs.keys())
            .field("env_instances", &self.env_overrides.keys())
            .finish()
    }
}

impl<P: Managed> Layers<P> {
    /// Extends the named configuration `name` in code.
    pub(crate) fn config(&mut self, name: String, f: impl FnOnce(P::Spec) -> P::Spec) {
        let entry = self.configs.entry(name).or_default();
        *entry = f(std::mem::take(entry));
    }

    /// Extends the overrides of instance `id` in code.
    pub(crate) fn instance(&mut self, id: String, f: impl FnOnce(P::Spec) -> P::Spec) {
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
        let base_config = key == BASE_CONFIG.name();
        let single = if base_config && instance {
            let Some(base) = setting.value.text().filter(|t| !t.is_empty()) else {
                return Err(ConfigSourceError::Malformed {
                    source_name: full_key.to_owned(),
                    message: format!(
                        "{} must name a config, got {}",
                        BASE_CONFIG.name(),
                        setting.value
                    ),
                }
                .into());
            };
            P::with_config_name(P::Spec::default(), base)
        } else {
            let single =
                P::set(P::Spec::default(), key, &setting.value, full_key).map_err(|error| {
                    match error {
                        // An instance also takes `base_config`: suggest it too.
                        RegistryError::ConfigSource(ConfigSourceError::UnknownKey {
                            key: full,
                            ..
                        }) if instance => ConfigSourceError::UnknownKey {
                            key: full,
                            hint: suggest(
                                key,
                                &[key_names::<P>(), vec![BASE_CONFIG.name()]].concat(),
                            ),
                        }
                        .into(),
                        error => error,
                    }
                })?;
            P::build(&single, &P::Config::default(), "").map_err(|e| e.with_key(full_key))?;
            single
        };
        let entry = map.entry(name).or_default();
        *entry = if base_config {
            P::with_config_name(
                std::mem::take(entry),
                P::config_name(&single).unwrap_or_default(),
            )
        } else {
            P::set(std::mem::take(entry), key, &setting.value, full_key)?
        };
        Ok(())
    }

    /// The named configuration `name`, from code/TOML and the environment.
    fn named(&self, name: &str) -> (Option<&P::Spec>, Option<&P::Spec>) {
        (
            self.configs.get(name),
            env_name(name).and_then(|n| self.env_configs.get(&n)),
        )
    }

    /// The environment's overrides for instance `id`.
    fn env_override(&self, id: &str) -> Option<&P::Spec> {
        env_name(id).and_then(|n| self.env_overrides.get(&n))
    }

    /// The named configuration instance `id`, declared with `spec`, starts
    /// from: the one its overrides or `spec` choose, else `default`.
    fn base_name<'a>(&'a self, id: &str, spec: &'a P::Spec) -> &'a str {
        self.env_override(id)
            .and_then(P::config_name)
            .or(self.overrides.get(id).and_then(P::config_name))
            .or(P::config_name(spec))
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
        spec: &P::Spec,
        declared: impl Fn() -> Vec<(String, P::Spec)>,
    ) -> Result<(), RegistryError> {
        let ambiguous =
            |section, name, first: &str, second: &str| ConfigSourceError::AmbiguousEnvName {
                policy: P::KIND.name(),
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
                return Err(ambiguous("instances", name, other, id).into());
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
                return Err(ambiguous("configs", name, other, used).into());
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
    pub(crate) fn resolve(&self, id: &str, spec: &P::Spec) -> Result<P::Config, RegistryError> {
        let exact = self.overrides.get(id);
        let env = self.env_override(id);
        let mut config = P::Config::default();
        let (default, env_default) = self.named(DEFAULT_CONFIG);
        config = layer::<P>(
            config,
            default,
            &format!("{}.configs.default.", P::KIND.name()),
        )?;
        config = layer::<P>(
            config,
            env_default,
            &format!("{}.configs.default.", P::KIND.name()),
        )?;
        let name = self.base_name(id, spec);
        if name != DEFAULT_CONFIG {
            let (base, env_base) = self.named(name);
            if base.is_none() && env_base.is_none() {
                return Err(RegistryError::UnknownConfig {
                    policy: P::KIND.name(),
                    instance: id.to_owned(),
                    config: name.to_owned(),
                    known: self.known_configs(),
                });
            }
            let prefix = format!("{}.configs.{name}.", P::KIND.name());
            config = layer::<P>(config, base, &prefix)?;
            config = layer::<P>(config, env_base, &prefix)?;
        }
        config = P::build(spec, &config, "")?;
        let prefix = format!("{}.instances.{id}.", P::KIND.name());
        config = layer::<P>(config, exact, &prefix)?;
        config = layer::<P>(config, env, &prefix)?;
        P::check(&config, &prefix)?;
        Ok(config)
    }

    /// Checks what can be checked before any instance exists: every named
    /// config and override builds, the values an instance's overrides
    /// write agree with each other (a bulkhead's limits in order), every
    /// `base_config` names a config, and no variable names a config whose
    /// name normalizes like another's (CFG-004).
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
                return Err(ConfigSourceError::AmbiguousEnvName {
                    policy: P::KIND.name(),
                    section: "configs",
                    name: env,
                    first: first.to_owned(),
                    second: name.to_owned(),
                }
                .into());
            }
        }
        let default = P::Config::default();
        for (name, spec) in self.configs.iter().chain(&self.env_configs) {
            P::build(
                spec,
                &default,
                &format!("{}.configs.{name}.", P::KIND.name()),
            )?;
        }
        for (id, spec) in self.overrides.iter().chain(&self.env_overrides) {
            P::build(
                spec,
                &default,
                &format!("{}.instances.{id}.", P::KIND.name()),
            )?;
            if let Some(name) = P::config_name(spec).filter(|n| *n != DEFAULT_CONFIG)
                && let (None, None) = self.named(name)
            {
                return Err(RegistryError::UnknownConfig {
                    policy: P::KIND.name(),
                    instance: id.clone(),
                    config: name.to_owned(),
                    known: self.known_configs(),
                });
            }
        }
        // An instance's overrides, the environment's over the others', are
        // above every other layer: what they write together is final.
        for (id, spec) in &self.overrides {
            let specs: Vec<&P::Spec> = [Some(spec), self.env_override(id)]
                .into_iter()
                .flatten()
                .collect();
            P::check_overrides(&specs, &format!("{}.instances.{id}.", P::KIND.name()))?;
        }
        for (name, spec) in &self.env_overrides {
            if !self
                .overrides
                .keys()
                .any(|id| env_name(id).as_ref() == Some(name))
            {
                P::check_overrides(&[spec], &format!("{}.instances.{name}.", P::KIND.name()))?;
            }
        }
        Ok(())
    }
}

fn layer<P: Managed>(
    config: P::Config,
    spec: Option<&P::Spec>,
    prefix: &str,
) -> Result<P::Config, ConfigError> {
    match spec {
        Some(spec) => P::build(spec, &config, prefix),
        None => Ok(config),
    }
}

/// The layers of any policy, for what configuration and reloads do to
/// every policy alike.
pub(crate) trait AnyLayers: Any + Send + Sync + fmt::Debug {
    /// A copy.
    fn clone_box(&self) -> Box<dyn AnyLayers>;
    /// See [`Layers::apply`].
    fn apply(&mut self, setting: &Setting) -> Result<(), RegistryError>;
    /// See [`Layers::validate`].
    fn validate(&self) -> Result<(), RegistryError>;
    /// A store starting with these layers.
    fn into_store(self: Box<Self>) -> Box<dyn AnyStore>;
    /// Plans putting these layers in place of their policy's in `stores`
    /// ([`Store::plan`], and the policy's checks of the plan against
    /// `budgets`), and returns what installs them and adds what it
    /// changed ([`Store::install`]).
    fn plan<'s>(
        self: Box<Self>,
        stores: &'s Stores,
        budgets: &Budgets,
    ) -> Result<Install<'s>, RegistryError>;
}

/// What installs planned layers: see [`AnyLayers::plan`].
pub(crate) type Install<'s> = Box<dyn FnOnce(&mut Vec<Change>) + 's>;

impl<P: Managed> AnyLayers for Layers<P> {
    fn clone_box(&self) -> Box<dyn AnyLayers> {
        Box::new(self.clone())
    }

    fn apply(&mut self, setting: &Setting) -> Result<(), RegistryError> {
        Layers::apply(self, setting)
    }

    fn validate(&self) -> Result<(), RegistryError> {
        Layers::validate(self)
    }

    fn into_store(self: Box<Self>) -> Box<dyn AnyStore> {
        Box::new(Store::new(*self))
    }

    fn plan<'s>(
        self: Box<Self>,
        stores: &'s Stores,
        budgets: &Budgets,
    ) -> Result<Install<'s>, RegistryError> {
        let store = stores.of::<P>();
        let plan = store.plan(&self)?;
        P::check_plan(store, &plan, budgets)?;
        Ok(Box::new(move |changes| store.install(*self, plan, changes)))
    }
}
