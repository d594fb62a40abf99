//! What a [`FleetKind`](super::FleetKind) reads of configuration: one
//! value ([`SettingValue`]) and a resource's keys ([`ResourceKeys`]).

use std::fmt;
use std::time::Duration;

use crate::error::RegistryError;
use crate::source::{ResourceSetting, Value};

/// A value of a resource's key as a configuration source gave it (typed
/// from TOML, text from the environment), with the key or variable that
/// gave it, for messages.
#[derive(Clone, Copy)]
pub struct SettingValue<'a> {
    value: &'a Value,
    full_key: &'a str,
}

impl<'a> SettingValue<'a> {
    pub(crate) fn new(value: &'a Value, full_key: &'a str) -> Self {
        SettingValue { value, full_key }
    }

    /// The full key (`resources.db.lease`) or the variable that gave it.
    pub fn full_key(&self) -> &'a str {
        self.full_key
    }

    /// The value if it is text, trimmed.
    pub fn text(&self) -> Option<&'a str> {
        self.value.text()
    }

    /// The value if it is a whole number (or text that reads as one).
    pub fn integer(&self) -> Option<i64> {
        self.value.integer()
    }

    /// Whether the source gave a whole number (TOML's `5`, not `"5"`).
    pub fn is_integer(&self) -> bool {
        matches!(self.value, Value::Integer(_))
    }

    /// The value read as a duration (`"250ms"`, `"10s"`, or `0`).
    ///
    /// # Errors
    ///
    /// ATR-001 naming the key if it is not one.
    pub fn duration(&self) -> Result<Duration, RegistryError> {
        self.value.duration(self.full_key).map_err(Into::into)
    }
}

impl fmt::Display for SettingValue<'_> {
    /// The value as written: text quoted, numbers as they are.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.value, f)
    }
}

impl fmt::Debug for SettingValue<'_> {
    /// The key only: a value may hold a secret.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SettingValue")
            .field("full_key", &self.full_key)
            .finish_non_exhaustive()
    }
}

/// The keys one resource is given, merged over every source (the
/// environment's over TOML's, a later source's over an earlier one's).
#[derive(Clone, Copy)]
pub struct ResourceKeys<'a> {
    name: &'a str,
    settings: &'a [&'a ResourceSetting],
}

impl<'a> ResourceKeys<'a> {
    pub(crate) fn new(name: &'a str, settings: &'a [&'a ResourceSetting]) -> Self {
        ResourceKeys { name, settings }
    }

    /// The value of `key`, if the resource is given one.
    pub fn get(&self, key: &str) -> Option<SettingValue<'a>> {
        self.settings
            .iter()
            .rev()
            .find(|s| s.key == key)
            .map(|s| SettingValue::new(&s.value, &s.full_key))
    }

    /// The full key `key` of this resource has in TOML
    /// (`resources.<name>.<key>`), to name a key that was not given.
    pub fn full_key(&self, key: &str) -> String {
        format!("resources.{}.{key}", self.name)
    }
}

impl fmt::Debug for ResourceKeys<'_> {
    /// The resource and its keys, without their values.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceKeys")
            .field("resource", &self.name)
            .field(
                "keys",
                &self.settings.iter().map(|s| s.key).collect::<Vec<_>>(),
            )
            .finish()
    }
}
