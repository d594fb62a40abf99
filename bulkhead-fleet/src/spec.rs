//! The fleet on Redis as the registry sees it: [`FleetConfig`] as a
//! `FleetSpec`, and the kind `redis` ([`Redis`]), which reads the fleet's
//! keys of `[resources.<name>]` and gives each registry its backend.
//!
//! ```toml
//! [resources.db]
//! budget = 100
//! fleet = "redis://10.0.0.5:6379/0"
//! lease = "10s"
//! margin = "2500ms"
//! prefix = "shop"
//! on_unreachable = "closed"
//! ```
//!
//! `fleet` takes every form of `FleetConfig::redis`: one server, a primary
//! that Sentinels name, a Redis Cluster.
//!
//! ```toml
//! [resources.db]
//! budget = 100
//! fleet = "redis+sentinel://app:s3cr3t@10.0.0.1,10.0.0.2,10.0.0.3/mymaster?sentinel_password=t0ps3cr3t"
//!
//! [resources.cache]
//! budget = 40
//! fleet = "redis+cluster://10.0.1.1:7000,10.0.1.2:7000,10.0.1.3:7000"
//! ```

use std::any::Any;
use std::sync::Arc;

use bulkhead_core::PolicyContext;
use bulkhead_registry::RegistryError;
use bulkhead_registry::fleet::{
    FleetBackend, FleetKind, FleetSpec, LinkedKind, ResourceKeys, SettingValue,
};

use crate::backend::Fleets;
use crate::config::{FleetConfig, OnUnreachable};
use crate::url::RedisUrl;

/// The key that selects the fleet: its Redis URL.
const FLEET: &str = "fleet";

/// The fleet's keys, `fleet` first.
const KEYS: &[&str] = &[FLEET, "lease", "margin", "prefix", "on_unreachable"];

/// The kind of the fleets on Redis.
pub(crate) struct Redis;

/// The one kind of this crate.
pub(crate) static REDIS: Redis = Redis;

inventory::submit! { LinkedKind(&REDIS) }

impl FleetSpec for FleetConfig {
    fn kind(&self) -> &'static dyn FleetKind {
        &REDIS
    }

    fn check(&self, resource: &str) -> Result<(), RegistryError> {
        FleetConfig::check(self, resource)
    }

    fn same(&self, other: &dyn FleetSpec) -> bool {
        other.as_any().downcast_ref::<FleetConfig>() == Some(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl FleetKind for Redis {
    fn name(&self) -> &'static str {
        "redis"
    }

    fn keys(&self) -> &'static [&'static str] {
        KEYS
    }

    fn check_key(
        &self,
        resource: &str,
        key: &str,
        value: SettingValue<'_>,
    ) -> Result<(), RegistryError> {
        match key {
            FLEET => redis(resource, value).map(drop),
            "lease" | "margin" => value.duration().map(drop),
            "prefix" => value
                .text()
                .map(drop)
                .ok_or_else(|| fail(resource, value, "text")),
            _ => on_unreachable(resource, value).map(drop),
        }
    }

    fn shown(&self, key: &str, value: SettingValue<'_>) -> Option<String> {
        (key == FLEET)
            .then(|| value.text())
            .flatten()
            .map(|url| match FleetConfig::redis(url) {
                // Sentinel and Cluster in their full form, every port given.
                Ok(config) => config.redis_url(),
                Err(_) => RedisUrl::new(url).to_string(),
            })
    }

    fn spec(
        &self,
        resource: &str,
        keys: &ResourceKeys<'_>,
    ) -> Result<Option<Arc<dyn FleetSpec>>, RegistryError> {
        let Some(url) = keys.get(FLEET) else {
            if let Some(given) = KEYS[1..].iter().find_map(|k| keys.get(k)) {
                return Err(RegistryError::FleetConfig {
                    resource: resource.to_owned(),
                    message: format!(
                        "{} is given without resources.{resource}.fleet",
                        given.full_key()
                    ),
                });
            }
            return Ok(None);
        };
        let mut config = redis(resource, url)?;
        if let Some(value) = keys.get("lease") {
            config = config.lease(value.duration()?);
        }
        if let Some(value) = keys.get("margin") {
            config = config.margin(value.duration()?);
        }
        if let Some(value) = keys.get("prefix") {
            config = config.prefix(value.text().ok_or_else(|| fail(resource, value, "text"))?);
        }
        if let Some(value) = keys.get("on_unreachable") {
            config = config.on_unreachable(on_unreachable(resource, value)?);
        }
        if let Some((key, message)) = config.problem(resource) {
            // The key that gave the value, or, for a default that does
            // not fit (none does, so far), the key to give.
            let full_key = keys
                .get(key)
                .map_or_else(|| keys.full_key(key), |v| v.full_key().to_owned());
            return Err(at(resource, &full_key, &message));
        }
        Ok(Some(Arc::new(config)))
    }

    fn backend(&'static self, context: &PolicyContext) -> Arc<dyn FleetBackend> {
        Arc::new(Fleets::new(context.clone()))
    }
}

/// REG-014: `value` must be `what`.
fn fail(resource: &str, value: SettingValue<'_>, what: &str) -> RegistryError {
    RegistryError::FleetConfig {
        resource: resource.to_owned(),
        message: format!("{} must be {what}", value.full_key()),
    }
}

/// REG-014 `message` about the value of `full_key` (a key, or a
/// variable), named first.
fn at(resource: &str, full_key: &str, message: &str) -> RegistryError {
    RegistryError::FleetConfig {
        resource: resource.to_owned(),
        message: format!("{full_key}: {message}"),
    }
}

/// The fleet of the Redis URL `value`.
fn redis(resource: &str, value: SettingValue<'_>) -> Result<FleetConfig, RegistryError> {
    let url = value
        .text()
        .ok_or_else(|| fail(resource, value, "a Redis URL"))?;
    FleetConfig::redis(url).map_err(|error| match error {
        RegistryError::FleetConfig { message, .. } => at(resource, value.full_key(), &message),
        other => other,
    })
}

fn on_unreachable(resource: &str, value: SettingValue<'_>) -> Result<OnUnreachable, RegistryError> {
    let text = match value.integer() {
        Some(n) if value.is_integer() => n.to_string(),
        _ => value.text().unwrap_or_default().to_owned(),
    };
    OnUnreachable::parse(&text).ok_or_else(|| {
        fail(
            resource,
            value,
            "\"closed\", \"even_share\" or a number of slots",
        )
    })
}
