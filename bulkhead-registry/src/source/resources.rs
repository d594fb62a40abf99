//! Resources in configuration: `[resources.<name>]` with a `budget`, and
//! the keys of a fleet, which the fleet kinds linked into the program read
//! (`fleet`, `lease`, `margin`, `prefix`, `on_unreachable` for
//! `bulkhead-fleet`'s, see [`crate::fleet`]); in the environment,
//! `<PREFIX>RESOURCES__<NAME>__<KEY>`.
//!
//! ```toml
//! [resources.db]
//! budget = 100
//! fleet = "redis://10.0.0.5:6379/0"
//! lease = "10s"
//! on_unreachable = "closed"
//! ```
//!
//! Each source gives [`ResourceSetting`]s, one per key, each value checked
//! on its own ([`check`]); [`specs`] merges them key by key (the
//! environment's over TOML's, later sources over earlier ones) and checks
//! each resource as a whole.

use std::sync::Arc;

use bulkhead_core::keys::did_you_mean;

use super::setting::normalize;
use super::value::Value;
use crate::error::{ConfigSourceError, RegistryError};
use crate::fleet::{FleetKind, FleetSpec, ResourceKeys, SettingValue, linked_kinds};
use crate::source::suggest;

/// The top-level table, and the first part of a variable's name.
pub(crate) const RESOURCES: &str = "resources";

/// The one key of a resource that is not a fleet's.
const BUDGET: &str = "budget";

/// What an unknown key's error adds when no fleet kind is linked.
const NO_FLEET_KIND: &str = "; a resource takes `budget`, and a fleet's keys (`fleet`, `lease`, ...) once a fleet crate is linked: the feature `redis` of bulkhead";

/// A resource as the sources declare it.
#[derive(Debug, Clone)]
pub(crate) struct ResourceSpec {
    pub(crate) name: String,
    pub(crate) budget: u32,
    /// Its fleet, if it has one.
    pub(crate) fleet: Option<Arc<dyn FleetSpec>>,
}

/// The fleet kind that reads `key`, if one does.
fn kind_of(key: &str) -> Option<&'static dyn FleetKind> {
    linked_kinds()
        .into_iter()
        .find(|kind| kind.keys().contains(&key))
}

/// Which resource a setting is for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ResourceName {
    /// By its name, as TOML gives it.
    Exact(String),
    /// By the name part of an environment variable: the resource a TOML
    /// source names whose [`normalize`]d name it is, or else the part in
    /// lower case.
    Env(String),
}

/// One key of a resource, as a source gives it. Its `Debug` shows a
/// fleet's Redis URL without its password.
#[derive(Clone, PartialEq)]
pub(crate) struct ResourceSetting {
    pub(crate) resource: ResourceName,
    pub(crate) key: &'static str,
    pub(crate) value: Value,
    /// The full key (`resources.db.lease`) or the variable, for messages.
    pub(crate) full_key: String,
    /// The source, for messages: `TOML`, a path, `environment`.
    pub(crate) source: String,
}

impl std::fmt::Debug for ResourceSetting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut debug = f.debug_struct("ResourceSetting");
        debug
            .field("resource", &self.resource)
            .field("key", &self.key);
        let value = SettingValue::new(&self.value, &self.full_key);
        match kind_of(self.key).and_then(|kind| kind.shown(self.key, value)) {
            Some(shown) => debug.field("value", &shown),
            None => debug.field("value", &self.value),
        };
        debug
            .field("full_key", &self.full_key)
            .field("source", &self.source)
            .finish()
    }
}

impl ResourceSetting {
    /// The setting of `key` (as written) for `resource`, its value checked.
    ///
    /// # Errors
    ///
    /// CFG-001 for an unknown key (a fleet's keys without a fleet crate
    /// linked included), CFG-002 for a budget that is not a number of
    /// slots; a fleet kind's code for its keys (ATR-001 for a duration
    /// that does not parse, REG-014 for a fleet value that cannot be
    /// used).
    pub(crate) fn new(
        resource: ResourceName,
        key: &str,
        value: Value,
        full_key: String,
        source: &str,
    ) -> Result<Self, RegistryError> {
        let kinds = linked_kinds();
        let known: Vec<&'static str> = std::iter::once(BUDGET)
            .chain(kinds.iter().flat_map(|kind| kind.keys().iter().copied()))
            .collect();
        let Some(&key) = known.iter().find(|k| **k == key) else {
            // Without a fleet kind, a key that is not a misspelt `budget`
            // is most likely a fleet's.
            let hint = if kinds.is_empty() && did_you_mean(key, [BUDGET]).is_none() {
                NO_FLEET_KIND.to_owned()
            } else {
                suggest(key, &known)
            };
            return Err(ConfigSourceError::UnknownKey {
                key: full_key,
                hint,
            }
            .into());
        };
        let setting = ResourceSetting {
            resource,
            key,
            value,
            full_key,
            source: source.to_owned(),
        };
        check(&setting)?;
        Ok(setting)
    }
}

/// The settings of the `resources` table of TOML `source`.
///
/// # Errors
///
/// CFG-002 for a table of the wrong shape; otherwise as for
/// [`ResourceSetting::new`].
pub(crate) fn from_table(
    table: &toml::Value,
    source: &str,
) -> Result<Vec<ResourceSetting>, RegistryError> {
    let malformed = |message: String| ConfigSourceError::Malformed {
        source_name: source.to_owned(),
        message,
    };
    let table = table
        .as_table()
        .ok_or_else(|| malformed("resources must be a table of resources".to_owned()))?;
    let mut settings = Vec::new();
    for (name, keys) in table {
        let keys = keys
            .as_table()
            .ok_or_else(|| malformed(format!("resources.{name} must be a table of keys")))?;
        if keys.is_empty() {
            return Err(malformed(format!("resources.{name} has no budget")).into());
        }
        for (key, value) in keys {
            let full_key = format!("resources.{name}.{key}");
            let value = super::toml::convert(value).ok_or_else(|| {
                malformed(format!("{full_key} has a value of an unsupported type"))
            })?;
            let resource = ResourceName::Exact(name.clone());
            settings.push(ResourceSetting::new(
                resource, key, value, full_key, source,
            )?);
        }
    }
    Ok(settings)
}

/// Whether `rest`, a variable's name after the prefix, is a resource's:
/// `RESOURCES__...`, in any case.
pub(crate) fn is_resource_variable(rest: &str) -> bool {
    rest.split_once("__")
        .is_some_and(|(first, _)| first.eq_ignore_ascii_case(RESOURCES))
}

/// The setting of the variable `variable` (`rest` after the prefix:
/// `RESOURCES__<NAME>__<KEY>`), whose value is `value`.
///
/// # Errors
///
/// CFG-002 for a name of another shape, or whose name part normalizes to
/// nothing; otherwise as for [`ResourceSetting::new`].
pub(crate) fn from_variable(
    variable: &str,
    rest: &str,
    value: &str,
) -> Result<ResourceSetting, RegistryError> {
    let source = format!("environment variable {variable}");
    let malformed = |message: &str| ConfigSourceError::Malformed {
        source_name: source.clone(),
        message: message.to_owned(),
    };
    let parts: Vec<&str> = rest.split("__").collect();
    let [_, name, key] = parts[..] else {
        return Err(malformed("expected RESOURCES__<NAME>__<KEY> after the prefix").into());
    };
    if normalize(name).is_empty() {
        return Err(malformed(
            "the name part has no ASCII letter or digit, so it names no resource; declare it in TOML",
        )
        .into());
    }
    ResourceSetting::new(
        ResourceName::Env(normalize(name)),
        &key.to_ascii_lowercase(),
        Value::Text(value.to_owned()),
        variable.to_owned(),
        &source,
    )
}

/// Checks one value on its own.
fn check(setting: &ResourceSetting) -> Result<(), RegistryError> {
    let ResourceSetting {
        resource,
        key,
        value,
        full_key,
        source,
    } = setting;
    if *key == BUDGET {
        return budget(value).map(drop).ok_or_else(|| {
            ConfigSourceError::Malformed {
                source_name: source.clone(),
                message: format!("{full_key} must be a number of slots, got {value}"),
            }
            .into()
        });
    }
    let (ResourceName::Exact(name) | ResourceName::Env(name)) = resource;
    match kind_of(key) {
        Some(kind) => kind.check_key(name, key, SettingValue::new(value, full_key)),
        None => Ok(()),
    }
}

fn budget(value: &Value) -> Option<u32> {
    value.integer().and_then(|n| u32::try_from(n).ok())
}

/// The resources `settings` declare (TOML's first, then the
/// environment's, each in the order of its sources), a later value of a
/// key replacing an earlier one.
///
/// # Errors
///
/// CFG-002 for a resource without a budget, or a variable that names two
/// resources of TOML whose names normalize alike; REG-014 for a fleet that
/// cannot be used (a fleet key without `fleet`, a lease under 100 ms, ...).
pub(crate) fn specs(settings: &[&ResourceSetting]) -> Result<Vec<ResourceSpec>, RegistryError> {
    let mut exact: Vec<&str> = Vec::new();
    for setting in settings {
        if let ResourceName::Exact(name) = &setting.resource
            && !exact.contains(&name.as_str())
        {
            exact.push(name);
        }
    }
    // Each resource by name, with its settings in order.
    let mut resources: Vec<(String, Vec<&ResourceSetting>)> = Vec::new();
    for &setting in settings {
        let name = match &setting.resource {
            ResourceName::Exact(name) => name.clone(),
            ResourceName::Env(part) => {
                let mut matching = exact.iter().filter(|n| normalize(n) == *part);
                match (matching.next(), matching.next()) {
                    (Some(first), Some(second)) => {
                        return Err(ConfigSourceError::Malformed {
                            source_name: setting.source.clone(),
                            message: format!(
                                "{part} names both resources {first:?} and {second:?}, which normalize alike; set their keys in TOML"
                            ),
                        }
                        .into());
                    }
                    (Some(name), None) => (*name).to_owned(),
                    _ => part.to_ascii_lowercase(),
                }
            }
        };
        match resources.iter_mut().find(|(n, _)| *n == name) {
            Some((_, keys)) => keys.push(setting),
            None => resources.push((name, vec![setting])),
        }
    }
    resources
        .into_iter()
        .map(|(name, settings)| spec(name, &settings))
        .collect()
}

/// One resource from its settings, the last of each key winning.
fn spec(name: String, settings: &[&ResourceSetting]) -> Result<ResourceSpec, RegistryError> {
    let last = |key: &str| settings.iter().rev().find(|s| s.key == key).copied();
    let Some(budget) = last(BUDGET).and_then(|s| self::budget(&s.value)) else {
        return Err(ConfigSourceError::Malformed {
            source_name: settings[0].source.clone(),
            message: format!("resources.{name} has no budget"),
        }
        .into());
    };
    let keys = ResourceKeys::new(&name, settings);
    let mut fleet = None;
    for kind in linked_kinds() {
        fleet = kind.spec(&name, &keys)?;
        if fleet.is_some() {
            break;
        }
    }
    Ok(ResourceSpec {
        fleet,
        name,
        budget,
    })
}
