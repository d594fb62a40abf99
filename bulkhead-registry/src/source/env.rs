//! Environment variable sources.
//!
//! `<PREFIX><POLICY>__<CONFIGS|INSTANCES>__<NAME>__<KEY>=<value>`, all parts
//! separated by two underscores, for example (prefix `BULKHEAD_`):
//!
//! ```text
//! BULKHEAD_BULKHEAD__CONFIGS__SLOW__MAX_CONCURRENT=3
//! BULKHEAD_BULKHEAD__INSTANCES__THUMBNAILS_ASYNC__MAX_WAIT=2s
//! BULKHEAD_RETRY__INSTANCES__SHOP_THUMBS_RESIZE_STR_U32__ABORT_ON=BulkheadFull,Timeout
//! ```
//!
//! `<NAME>` is an id or config name in [`normalize`]d
//! form (letters and digits upper-cased, every run of other characters one
//! `_`): it applies to the id or name that normalizes to it. A name part
//! that normalizes to nothing (empty, or without an ASCII letter or digit)
//! is CFG-002; two ids or names that normalize alike, when a variable names
//! them, are CFG-004 where they meet (see `Layers::check_env_names`). Keys
//! are matched without regard to case. Values are text: durations in
//! humantime form, lists comma-separated.
//!
//! A variable with the prefix that neither has a `__` after it nor starts
//! with a policy's name and `_` (`BULKHEAD_LOG`) is not in this shape and
//! is left alone; any other is ours, and a part that names nothing is an
//! error (CFG-001 with a did-you-mean, or CFG-002).
//!
//! Resources are `<PREFIX>RESOURCES__<NAME>__<KEY>=<value>` (see
//! `resources.rs`), for example `BULKHEAD_RESOURCES__DB__BUDGET=100`.

use std::ffi::OsString;

use super::resources::{self, ResourceSetting};
use super::setting::{Setting, Target, normalize};
use super::value::Value;
use crate::error::{ConfigSourceError, RegistryError};
use crate::source::suggest;
use bulkhead_core::keys::PolicyKind;

/// Every setting among `vars` whose name starts with `prefix`.
pub(crate) fn from_env(
    prefix: &str,
    vars: impl IntoIterator<Item = (OsString, OsString)>,
) -> Result<Vec<Setting>, ConfigSourceError> {
    let mut settings = Vec::new();
    for (name, value) in vars {
        // Variables that are not valid Unicode cannot be ours.
        let (Some(name), Some(value)) = (name.to_str(), value.to_str()) else {
            continue;
        };
        // Only variables in our shape are read: parts separated by `__`, or
        // starting with a policy's name. `BULKHEAD_LOG` belongs to someone
        // else, while a typo in `BULKHEAD_BULKHEAD__CONFIG__SLOW__MAX_WAIT`
        // or `BULKHEAD_BULKHEAD_MAX_WAIT` is reported.
        let Some(rest) = name.strip_prefix(prefix).filter(|rest| ours(rest)) else {
            continue;
        };
        if resources::is_resource_variable(rest) {
            continue;
        }
        settings.push(setting(name, rest, value)?);
    }
    Ok(settings)
}

/// The resources' settings among `vars`: `<prefix>RESOURCES__<NAME>__<KEY>`.
pub(crate) fn resources_from_env(
    prefix: &str,
    vars: impl IntoIterator<Item = (OsString, OsString)>,
) -> Result<Vec<ResourceSetting>, RegistryError> {
    let mut settings = Vec::new();
    for (name, value) in vars {
        let (Some(name), Some(value)) = (name.to_str(), value.to_str()) else {
            continue;
        };
        if let Some(rest) = name
            .strip_prefix(prefix)
            .filter(|rest| resources::is_resource_variable(rest))
        {
            settings.push(resources::from_variable(name, rest, value)?);
        }
    }
    // The environment has no order of its own: by name, so that a result
    // never depends on it.
    settings.sort_by(|a, b| a.full_key.cmp(&b.full_key));
    Ok(settings)
}

/// Whether the part of a variable's name after the prefix is meant for us.
fn ours(rest: &str) -> bool {
    let lower = rest.to_ascii_lowercase();
    rest.contains("__")
        || PolicyKind::ALL.iter().any(|policy| {
            lower
                .strip_prefix(policy.name())
                .is_some_and(|r| r.starts_with('_'))
        })
}

fn setting(variable: &str, rest: &str, value: &str) -> Result<Setting, ConfigSourceError> {
    let malformed = |message: String| ConfigSourceError::Malformed {
        source_name: format!("environment variable {variable}"),
        message,
    };
    let parts: Vec<&str> = rest.split("__").collect();
    if let [_, _, _, keys, _, _] = parts[..]
        && keys.eq_ignore_ascii_case(super::keys::KEYS)
    {
        return Err(malformed(
            "a keyed bulkhead's keys are read from TOML only ([bulkhead.instances.<id>.keys.\"<key>\"]): a variable's name cannot hold a key as written".to_owned(),
        ));
    }
    let [policy, section, name, key] = parts[..] else {
        return Err(malformed(
            "expected <POLICY>__<CONFIGS|INSTANCES>__<NAME>__<KEY> after the prefix".to_owned(),
        ));
    };
    let policy = super::parse_policy(&policy.to_ascii_lowercase(), variable)?;
    let target = match section.to_ascii_lowercase().as_str() {
        "configs" => Target::EnvConfig(name.to_owned()),
        "instances" => Target::EnvInstance(name.to_owned()),
        other => {
            return Err(ConfigSourceError::UnknownKey {
                key: variable.to_owned(),
                hint: suggest(other, &["configs", "instances"]),
            });
        }
    };
    // Matched in normalized form: a name part with no ASCII letter or digit
    // would match every id that has none either (`ÄÖ`, `日本`), not one.
    if normalize(name).is_empty() {
        return Err(malformed(if name.is_empty() {
            "the name part is empty".to_owned()
        } else {
            format!(
                "the name part {name:?} has no ASCII letter or digit, so it names no id or config; set such ids in TOML or code by their exact name"
            )
        }));
    }
    Ok(Setting {
        policy,
        target,
        key: key.to_ascii_lowercase(),
        value: Value::Text(value.to_owned()),
        full_key: variable.to_owned(),
    })
}
