//! Resources in configuration: `[resources.<name>]` with a `budget`, and,
//! with the feature `redis`, the keys of a fleet (`fleet`, `lease`,
//! `margin`, `prefix`, `on_unreachable`).
//!
//! ```toml
//! [resources.db]
//! budget = 100
//! fleet = "redis://10.0.0.5:6379/0"
//! lease = "10s"
//! on_unreachable = "closed"
//! ```

use super::value::Value;
use crate::error::{ConfigSourceError, RegistryError};
use crate::suggest::suggest;

/// The keys of a resource, the fleet's last.
const KEYS: &[&str] = &[
    "budget",
    "fleet",
    "lease",
    "margin",
    "prefix",
    "on_unreachable",
];

/// A resource as a source declares it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ResourceSpec {
    pub(crate) name: String,
    pub(crate) budget: u32,
    /// Its fleet, if it has one.
    #[cfg(feature = "redis")]
    pub(crate) fleet: Option<crate::fleet::FleetConfig>,
}

/// The resources of the `resources` table of `source`.
///
/// # Errors
///
/// CFG-002 for a table of the wrong shape or a missing `budget`, CFG-001
/// for an unknown key (the fleet's keys without the feature `redis`
/// included), ATR-003 for a budget out of range, REG-014 for a fleet that
/// cannot be used, each naming the full key.
pub(crate) fn from_table(
    table: &toml::Value,
    source: &str,
) -> Result<Vec<ResourceSpec>, RegistryError> {
    let malformed = |message: String| ConfigSourceError::Malformed {
        source_name: source.to_owned(),
        message,
    };
    let table = table
        .as_table()
        .ok_or_else(|| malformed("resources must be a table of resources".to_owned()))?;
    let mut resources = Vec::new();
    for (name, keys) in table {
        let keys = keys
            .as_table()
            .ok_or_else(|| malformed(format!("resources.{name} must be a table of keys")))?;
        let mut budget = None;
        let mut fleet = Fleet::default();
        for (key, value) in keys {
            let full_key = format!("resources.{name}.{key}");
            let value = super::toml::convert(value).ok_or_else(|| {
                malformed(format!("{full_key} has a value of an unsupported type"))
            })?;
            match key.as_str() {
                "budget" => {
                    let n = value
                        .integer()
                        .and_then(|n| u32::try_from(n).ok())
                        .ok_or_else(|| {
                            malformed(format!("{full_key} must be a number of slots, got {value}"))
                        })?;
                    budget = Some(n);
                }
                other if KEYS.contains(&other) => fleet.set(other, value, &full_key, source)?,
                other => {
                    return Err(ConfigSourceError::UnknownKey {
                        key: full_key,
                        hint: suggest(other, KEYS),
                    }
                    .into());
                }
            }
        }
        let budget = budget.ok_or_else(|| malformed(format!("resources.{name} has no budget")))?;
        resources.push(ResourceSpec {
            #[cfg(feature = "redis")]
            fleet: fleet.build(name)?,
            name: name.clone(),
            budget,
        });
        #[cfg(not(feature = "redis"))]
        let _ = fleet;
    }
    Ok(resources)
}

/// The fleet keys of one resource, as given.
#[derive(Default)]
struct Fleet {
    #[cfg(feature = "redis")]
    values: Vec<(String, Value, String)>,
}

impl Fleet {
    #[cfg(not(feature = "redis"))]
    fn set(&mut self, key: &str, _: Value, full_key: &str, _: &str) -> Result<(), RegistryError> {
        let _ = key;
        Err(ConfigSourceError::UnknownKey {
            key: full_key.to_owned(),
            hint: "; the fleet keys need the feature `redis` of bulkhead".to_owned(),
        }
        .into())
    }

    #[cfg(feature = "redis")]
    fn set(
        &mut self,
        key: &str,
        value: Value,
        full_key: &str,
        _: &str,
    ) -> Result<(), RegistryError> {
        self.values
            .push((key.to_owned(), value, full_key.to_owned()));
        Ok(())
    }

    /// The fleet configuration, if `fleet` is given.
    #[cfg(feature = "redis")]
    fn build(self, resource: &str) -> Result<Option<crate::fleet::FleetConfig>, RegistryError> {
        use crate::fleet::{FleetConfig, OnUnreachable};
        let Some((_, url, full_key)) = self.values.iter().find(|(k, ..)| k == "fleet") else {
            if let Some((_, _, full_key)) = self.values.first() {
                return Err(RegistryError::FleetConfig {
                    resource: resource.to_owned(),
                    message: format!("{full_key} is given without resources.{resource}.fleet"),
                });
            }
            return Ok(None);
        };
        let fail = |full_key: &str, what: &str| RegistryError::FleetConfig {
            resource: resource.to_owned(),
            message: format!("{full_key} must be {what}"),
        };
        let url = url.text().ok_or_else(|| fail(full_key, "a Redis URL"))?;
        let mut config = FleetConfig::redis(url)?;
        for (key, value, full_key) in &self.values {
            config = match key.as_str() {
                "lease" => config.lease(value.duration(full_key)?),
                "margin" => config.margin(value.duration(full_key)?),
                "prefix" => config.prefix(value.text().ok_or_else(|| fail(full_key, "text"))?),
                "on_unreachable" => {
                    let text = match value {
                        Value::Integer(n) => n.to_string(),
                        other => other.text().unwrap_or_default().to_owned(),
                    };
                    config.on_unreachable(OnUnreachable::parse(&text).ok_or_else(|| {
                        fail(full_key, "\"closed\", \"even_share\" or a number of slots")
                    })?)
                }
                _ => config,
            };
        }
        config.check(resource)?;
        Ok(Some(config))
    }
}
