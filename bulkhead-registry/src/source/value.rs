//! A configuration value as a source gives it, read as the kind of value
//! its key takes ([`Value::read`]), with the key's code when it does not
//! fit.

use std::fmt;
use std::time::Duration;

use bulkhead_core::keys::{Key, KeyValue, ValueKind};
use bulkhead_core::{
    ChaosLatency, ConfigError, HedgeDelay, Priority, RejectionKind, ShedAt, parse_bool,
    parse_duration,
};

/// A value from TOML (typed) or the environment (always text).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Text(String),
    Integer(i64),
    Float(f64),
    Bool(bool),
    List(Vec<Value>),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Text(text) => write!(f, "{text:?}"),
            Value::Integer(n) => write!(f, "{n}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::List(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    item.fmt(f)?;
                }
                f.write_str("]")
            }
        }
    }
}

impl Value {
    /// The value for `key`, read as the kind of value it takes and named
    /// `full_key` in errors. Numbers are checked against the key's range
    /// when the configuration is built, limits and counts here (they must
    /// fit the builder's integer).
    ///
    /// # Errors
    ///
    /// The code of the key's kind: ATR-001 for a duration that does not
    /// parse, ATR-003 for a limit out of range, and so on; ATR-010 for an
    /// empty name (`resource = ""`).
    pub(crate) fn read(&self, key: &Key, full_key: &str) -> Result<KeyValue, ConfigError> {
        Ok(match key.kind() {
            ValueKind::Limit { max } => KeyValue::Integer(self.limit(full_key, max)?),
            ValueKind::Count { min, max } => KeyValue::Integer(self.count(full_key, min, max)?),
            ValueKind::Number { .. } => KeyValue::Number(self.number(full_key)?),
            ValueKind::Duration { .. } => KeyValue::Duration(self.duration(full_key)?),
            ValueKind::Delay => match self {
                Value::Text(text) => KeyValue::Delay(HedgeDelay::parse(full_key, text)?),
                _ => KeyValue::Duration(self.duration(full_key)?),
            },
            ValueKind::Latency => match self {
                Value::Text(text) => KeyValue::Latency(ChaosLatency::parse(full_key, text)?),
                _ => KeyValue::Duration(self.duration(full_key)?),
            },
            ValueKind::Seed => KeyValue::Seed(self.seed(full_key)?),
            ValueKind::Priority => KeyValue::Priority(Priority::parse(full_key, &self.as_text())?),
            // Text alone: `"sheddable=0.5, normal=0.8"`.
            ValueKind::ShedAt => KeyValue::ShedAt(ShedAt::parse(full_key, &self.as_text())?),
            ValueKind::Bool => KeyValue::Bool(self.boolean(full_key)?),
            ValueKind::Choice { choices, .. } => {
                KeyValue::Text(self.choice(full_key, choices)?.to_owned())
            }
            ValueKind::RejectionKinds => {
                KeyValue::RejectionKinds(self.kinds(full_key)?.into_iter().collect())
            }
            ValueKind::Name => match self.text().filter(|t| !t.is_empty()) {
                Some(name) => KeyValue::Text(name.to_owned()),
                None => {
                    return Err(ConfigError::InvalidChoice {
                        key: full_key.to_owned(),
                        value: self.as_text(),
                        choices: format!("a {} name", key.name()),
                    });
                }
            },
            // Only attributes name functions and methods.
            ValueKind::Predicate | ValueKind::Method => {
                return Err(ConfigError::NoSuchKey {
                    key: full_key.to_owned(),
                    value: self.to_string(),
                });
            }
        })
    }

    /// A duration: humantime text, or `0`.
    pub(crate) fn duration(&self, key: &str) -> Result<Duration, ConfigError> {
        match self {
            Value::Text(text) => parse_duration(key, text),
            Value::Integer(0) => Ok(Duration::ZERO),
            other => Err(ConfigError::InvalidDuration {
                key: key.to_owned(),
                value: other.to_string(),
                reason: "a duration is written as text".to_owned(),
            }),
        }
    }

    /// A concurrency limit (ATR-003 when it is not a whole number in
    /// `1..=max`).
    fn limit(&self, key: &str, max: u32) -> Result<u32, ConfigError> {
        let out_of_range = || ConfigError::LimitOutOfRange {
            key: key.to_owned(),
            value: self.to_string(),
            max: max.into(),
        };
        let n = self.integer().ok_or_else(out_of_range)?;
        u32::try_from(n)
            .ok()
            .filter(|n| (1..=max).contains(n))
            .ok_or_else(out_of_range)
    }

    /// Any other count (ATR-008 when it is not a whole number in `min..=max`).
    fn count(&self, key: &str, min: u32, max: u32) -> Result<u32, ConfigError> {
        let out_of_range = || ConfigError::NumberOutOfRange {
            key: key.to_owned(),
            value: self.to_string(),
            range: format!("a whole number between {min} and {max}"),
        };
        let n = self.integer().ok_or_else(out_of_range)?;
        u32::try_from(n)
            .ok()
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(out_of_range)
    }

    /// A seed: a whole number from 0 to 2^64 - 1, as an integer (TOML's
    /// reach up to 2^63 - 1) or as text (ATR-008 otherwise).
    fn seed(&self, key: &str) -> Result<u64, ConfigError> {
        let parsed = match self {
            Value::Integer(n) => u64::try_from(*n).ok(),
            Value::Text(text) => text.trim().parse().ok(),
            _ => None,
        };
        parsed.ok_or_else(|| ConfigError::NumberOutOfRange {
            key: key.to_owned(),
            value: self.to_string(),
            range: "a whole number between 0 and 18446744073709551615".to_owned(),
        })
    }

    /// A number (ATR-008 when it is not one; its range is the builder's to
    /// check).
    fn number(&self, key: &str) -> Result<f64, ConfigError> {
        let parsed = match self {
            Value::Integer(n) => Some(*n as f64),
            Value::Float(x) => Some(*x),
            Value::Text(text) => text.trim().parse::<f64>().ok(),
            _ => None,
        };
        parsed
            .filter(|x| x.is_finite())
            .ok_or_else(|| ConfigError::NumberOutOfRange {
                key: key.to_owned(),
                value: self.to_string(),
                range: "a finite number".to_owned(),
            })
    }

    /// `true` or `false` (ATR-006 otherwise).
    fn boolean(&self, key: &str) -> Result<bool, ConfigError> {
        match self {
            Value::Bool(b) => Ok(*b),
            Value::Text(text) => parse_bool(key, text),
            other => Err(ConfigError::InvalidBool {
                key: key.to_owned(),
                value: other.to_string(),
            }),
        }
    }

    /// A list of rejection kinds, each alone (`Timeout`) or as
    /// `RejectionKind::Timeout`: a TOML array, or comma-separated text
    /// (ATR-009 for an unknown kind or one listed twice, as in an
    /// attribute).
    fn kinds(&self, key: &str) -> Result<Vec<RejectionKind>, ConfigError> {
        let parse = |text: &str| RejectionKind::parse(key, text);
        let kinds: Vec<RejectionKind> = match self {
            Value::Text(text) => text
                .split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(parse)
                .collect::<Result<_, _>>()?,
            Value::List(items) => items
                .iter()
                .map(|item| match item {
                    Value::Text(text) => parse(text),
                    other => parse(&other.to_string()),
                })
                .collect::<Result<_, _>>()?,
            other => vec![parse(&other.to_string())?],
        };
        for (i, kind) in kinds.iter().enumerate() {
            if kinds[..i].contains(kind) {
                return Err(ConfigError::DuplicateRejectionKind {
                    key: key.to_owned(),
                    value: kind.name().to_owned(),
                });
            }
        }
        Ok(kinds)
    }

    /// One of `choices` (ATR-010 otherwise).
    fn choice(&self, key: &str, choices: &[&'static str]) -> Result<&'static str, ConfigError> {
        let text = self.as_text();
        choices
            .iter()
            .find(|choice| **choice == text.trim())
            .copied()
            .ok_or_else(|| ConfigError::InvalidChoice {
                key: key.to_owned(),
                value: text,
                choices: choices.join(", "),
            })
    }

    /// A name (a `base_config`, a `resource`).
    pub(crate) fn text(&self) -> Option<&str> {
        match self {
            Value::Text(text) => Some(text.trim()),
            _ => None,
        }
    }

    /// The value as text, as a message quotes it: text trimmed, anything
    /// else as TOML writes it.
    fn as_text(&self) -> String {
        self.text().map_or_else(|| self.to_string(), str::to_owned)
    }

    pub(crate) fn integer(&self) -> Option<i64> {
        match self {
            Value::Integer(n) => Some(*n),
            Value::Text(text) => text.trim().parse().ok(),
            Value::Float(x) if x.fract() == 0.0 && x.abs() < 9.0e15 => Some(*x as i64),
            _ => None,
        }
    }
}
