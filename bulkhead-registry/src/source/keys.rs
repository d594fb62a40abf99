//! The limits of single keys of a keyed bulkhead, from TOML:
//!
//! ```toml
//! [bulkhead.instances.api.keys."tenant-42"]
//! per_key = 10
//! reserved = 5
//! ```
//!
//! Only under `instances` (a key belongs to one instance), only in TOML:
//! an environment variable's name parts are normalized (upper-cased,
//! punctuation to `_`), which would not give a key back as written.

use std::collections::BTreeMap;

use bulkhead_core::ConfigError;
use bulkhead_core::keys::{PolicyKind, ValueKind};

use crate::error::{ConfigSourceError, RegistryError};
use crate::source::suggest;

/// The table of an instance that holds its keys' limits.
pub(crate) const KEYS: &str = "keys";

/// The fields of one key's table.
const FIELDS: [&str; 2] = ["per_key", "reserved"];

/// What configuration says of one key: each field it gives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct KeySetting {
    pub(crate) per_key: Option<u32>,
    pub(crate) reserved: Option<u32>,
}

/// Each instance's keys, by instance id then key as written: the later
/// sources' fields over the earlier ones'.
pub(crate) type KeySettings = BTreeMap<String, BTreeMap<String, KeySetting>>;

/// Whether `key` of an instance of `kind` is the table of its keys'
/// limits (the policies with a `per_key` key, when written as a table).
pub(crate) fn is_keys_table(kind: PolicyKind, key: &str, value: &toml::Value) -> bool {
    key == KEYS && value.is_table() && kind.key("per_key").is_some()
}

/// The keys' limits in `text`; `source` names it in messages.
///
/// # Errors
///
/// CFG-002 for TOML that does not parse or a value that is not a whole
/// number, CFG-001 for a field other than `per_key` and `reserved` (with a
/// did-you-mean), ATR-003 for `per_key` out of 1 to 2^24 - 1 or `reserved`
/// out of 0 to 2^24 - 1; each naming the full key.
pub(crate) fn from_toml(text: &str, source: &str) -> Result<KeySettings, RegistryError> {
    let malformed = |message: String| ConfigSourceError::Malformed {
        source_name: source.to_owned(),
        message,
    };
    // Parse errors are reported by the settings' own reading, first.
    let Ok(table) = text.parse::<toml::Table>() else {
        return Ok(KeySettings::new());
    };
    let mut out = KeySettings::new();
    for (policy, sections) in &table {
        let Ok(kind) = super::parse_policy(policy, policy) else {
            continue;
        };
        let Some(instances) = sections.get("instances").and_then(toml::Value::as_table) else {
            continue;
        };
        for (id, keys) in instances {
            let Some((_, table)) = keys
                .as_table()
                .and_then(|keys| keys.get_key_value(KEYS))
                .filter(|(name, value)| is_keys_table(kind, name, value))
            else {
                continue;
            };
            let prefix = format!("{policy}.instances.{id}.{KEYS}");
            for (key, fields) in table.as_table().into_iter().flatten() {
                let at = format!("{prefix}.{}", quoted(key));
                let fields = fields.as_table().ok_or_else(|| {
                    malformed(format!("{at} must be a table with per_key and reserved"))
                })?;
                let entry: &mut KeySetting = out
                    .entry(id.clone())
                    .or_default()
                    .entry(key.clone())
                    .or_default();
                for (field, value) in fields {
                    let full_key = format!("{at}.{field}");
                    let n = value.as_integer().ok_or_else(|| {
                        malformed(format!(
                            "{full_key} must be a whole number, not a {}",
                            value.type_str()
                        ))
                    })?;
                    match field.as_str() {
                        "per_key" => entry.per_key = Some(limit(&full_key, n, 1)?),
                        "reserved" => entry.reserved = Some(limit(&full_key, n, 0)?),
                        _ => {
                            return Err(ConfigSourceError::UnknownKey {
                                key: full_key,
                                hint: suggest(field, &FIELDS),
                            }
                            .into());
                        }
                    }
                }
            }
        }
    }
    Ok(out)
}

/// The most a `per_key` may be, as its row says (2^24 - 1).
pub(crate) fn max_per_key() -> u32 {
    PolicyKind::ALL
        .iter()
        .find_map(|kind| kind.key("per_key"))
        .and_then(|key| match key.kind() {
            ValueKind::Limit { max } => Some(max),
            _ => None,
        })
        .unwrap_or(u32::MAX)
}

/// `n` if it is in `min` to the most a `per_key` may be (ATR-003 if not).
fn limit(full_key: &str, n: i64, min: u32) -> Result<u32, ConfigError> {
    let max = max_per_key();
    u32::try_from(n)
        .ok()
        .filter(|n| (min..=max).contains(n))
        .ok_or_else(|| ConfigError::LimitOutOfRange {
            key: full_key.to_owned(),
            value: n.to_string(),
            max: max.into(),
        })
}

/// A key as TOML writes it in a dotted key: bare when it can be, else
/// quoted.
pub(crate) fn quoted(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        key.to_owned()
    } else {
        format!("{key:?}")
    }
}

/// Lays `next` over `settings`, field by field.
pub(crate) fn merge(settings: &mut KeySettings, next: KeySettings) {
    for (id, keys) in next {
        let mine = settings.entry(id).or_default();
        for (key, setting) in keys {
            let entry = mine.entry(key).or_default();
            entry.per_key = setting.per_key.or(entry.per_key);
            entry.reserved = setting.reserved.or(entry.reserved);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_read_with_their_fields_and_full_names() {
        let text = r#"
            [bulkhead.instances.api.keys."tenant-42"]
            per_key = 10
            reserved = 5
            [bulkhead.instances.api.keys."a b"]
            per_key = 2
        "#;
        let settings = from_toml(text, "TOML").unwrap();
        assert_eq!(
            settings["api"]["tenant-42"],
            KeySetting {
                per_key: Some(10),
                reserved: Some(5)
            }
        );
        assert_eq!(settings["api"]["a b"].per_key, Some(2));
        let err =
            from_toml("[bulkhead.instances.api.keys.\"t 1\"]\nper_kye = 1", "TOML").unwrap_err();
        assert_eq!(err.code(), "CFG-001");
        assert!(
            err.to_string()
                .contains("bulkhead.instances.api.keys.\"t 1\".per_kye; did you mean \"per_key\"?"),
            "{err}"
        );
        let err = from_toml("[bulkhead.instances.api.keys.t]\nper_key = 0", "TOML").unwrap_err();
        assert_eq!(err.code(), "ATR-003");
        assert!(
            err.to_string()
                .contains("bulkhead.instances.api.keys.t.per_key")
        );
        let err = from_toml("[bulkhead.instances.api.keys]\nt = 3", "TOML").unwrap_err();
        assert_eq!(err.code(), "CFG-002");
    }

    #[test]
    fn later_fields_lay_over_earlier_ones() {
        let mut settings = from_toml(
            "[bulkhead.instances.a.keys.t]\nper_key = 4\nreserved = 1",
            "TOML",
        )
        .unwrap();
        merge(
            &mut settings,
            from_toml("[bulkhead.instances.a.keys.t]\nper_key = 6", "TOML").unwrap(),
        );
        assert_eq!(
            settings["a"]["t"],
            KeySetting {
                per_key: Some(6),
                reserved: Some(1)
            }
        );
    }
}
