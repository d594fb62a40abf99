//! TOML sources.
//!
//! ```toml
//! [bulkhead.configs.default]
//! max_wait = "10ms"
//!
//! [bulkhead.configs.slow]
//! max_concurrent = 3
//!
//! [bulkhead.instances.thumbnails]
//! base_config = "slow"
//! max_concurrent = 8
//!
//! [bulkhead.instances."shop::Thumbs#resize(&str, u32)"]
//! enabled = false
//! ```

use super::resources::{RESOURCES, ResourceSetting};
use super::setting::{Setting, Target};
use super::value::Value;
use crate::error::{ConfigSourceError, RegistryError};
use crate::source::suggest;
use bulkhead_core::keys::{PolicyKind, ValueKind};

/// Every setting in `text`; `source` names it in messages.
pub(crate) fn from_toml(text: &str, source: &str) -> Result<Vec<Setting>, ConfigSourceError> {
    let malformed = |message: String| ConfigSourceError::Malformed {
        source_name: source.to_owned(),
        message,
    };
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| malformed(parse_error(&e, text)))?;
    let mut settings = Vec::new();
    for (policy, sections) in &table {
        if policy == RESOURCES {
            continue;
        }
        let kind = super::parse_policy(policy, policy)?;
        let sections = sections.as_table().ok_or_else(|| {
            malformed(format!("{policy} must be a table of configs and instances"))
        })?;
        for (section, entries) in sections {
            let target: fn(String) -> Target = match section.as_str() {
                "configs" => Target::Config,
                "instances" => Target::Instance,
                _ => {
                    return Err(ConfigSourceError::UnknownKey {
                        key: format!("{policy}.{section}"),
                        hint: suggest(section, &["configs", "instances"]),
                    });
                }
            };
            let entries = entries
                .as_table()
                .ok_or_else(|| malformed(format!("{policy}.{section} must be a table of names")))?;
            for (name, keys) in entries {
                if name.is_empty() {
                    return Err(malformed(format!(
                        "{policy}.{section}.\"\" has an empty name, which names no id or config"
                    )));
                }
                let keys = keys.as_table().ok_or_else(|| {
                    malformed(format!("{policy}.{section}.{name} must be a table of keys"))
                })?;
                for (key, value) in keys {
                    // A keyed bulkhead's keys: read by `keys.rs`.
                    if section == "instances" && super::keys::is_keys_table(kind, key, value) {
                        continue;
                    }
                    let full_key = format!("{policy}.{section}.{name}.{key}");
                    settings.push(Setting {
                        policy: kind,
                        target: target(name.clone()),
                        key: key.clone(),
                        value: convert_for(kind, key, value).ok_or_else(|| {
                            malformed(format!("{full_key} has a value of an unsupported type"))
                        })?,
                        full_key,
                    });
                }
            }
        }
    }
    Ok(settings)
}

/// The settings of the resources `text` declares (see `resources.rs`);
/// `source` names it in messages.
pub(crate) fn resources_from_toml(
    text: &str,
    source: &str,
) -> Result<Vec<ResourceSetting>, RegistryError> {
    let table: toml::Table =
        text.parse()
            .map_err(|e: toml::de::Error| ConfigSourceError::Malformed {
                source_name: source.to_owned(),
                message: parse_error(&e, text),
            })?;
    match table.get(RESOURCES) {
        Some(resources) => super::resources::from_table(resources, source),
        None => Ok(Vec::new()),
    }
}

/// What a syntax error in `text` says: where it is and what is wrong,
/// without the line the parser quotes, which may hold a secret (a fleet's
/// Redis URL, whose password may be what broke the line).
fn parse_error(error: &toml::de::Error, text: &str) -> String {
    let message = error.message().trim().replace('\n', " ");
    let before = error.span().and_then(|span| text.get(..span.start));
    match before {
        Some(before) => {
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("TOML parse error at line {line}, column {column}: {message}")
        }
        None => format!("TOML parse error: {message}"),
    }
}

/// [`convert`], and for a key whose value is fractions per class
/// (`shed_at`), an inline table of them, `{ sheddable = 0.5, normal = 0.8 }`,
/// read as the text `"sheddable=0.5, normal=0.8"`.
fn convert_for(kind: PolicyKind, key: &str, value: &toml::Value) -> Option<Value> {
    match value {
        toml::Value::Table(table)
            if kind
                .key(key)
                .is_some_and(|key| key.kind() == ValueKind::ShedAt) =>
        {
            let entries = table.iter().map(|(class, fraction)| match fraction {
                toml::Value::Float(x) => Some(format!("{class}={x}")),
                toml::Value::Integer(n) => Some(format!("{class}={n}")),
                _ => None,
            });
            Some(Value::Text(entries.collect::<Option<Vec<_>>>()?.join(", ")))
        }
        value => convert(value),
    }
}

pub(crate) fn convert(value: &toml::Value) -> Option<Value> {
    Some(match value {
        toml::Value::String(s) => Value::Text(s.clone()),
        toml::Value::Integer(n) => Value::Integer(*n),
        toml::Value::Float(x) => Value::Float(*x),
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Array(items) => Value::List(items.iter().map(convert).collect::<Option<_>>()?),
        _ => return None,
    })
}
