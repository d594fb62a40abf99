//! The tables agree with the builders: every key a builder takes is in its
//! table and back, each documented default is the built-in one, and each
//! range the table gives is the one the builder checks.

use std::time::Duration;

use super::*;
use crate::rejection::{RejectionKind, RejectionKinds};
use crate::{
    BulkheadConfig, ChaosConfig, CircuitBreakerConfig, FallbackConfig, HedgeConfig,
    RateLimiterConfig, RetryConfig, TimeoutConfig,
};
use crate::{ConfigError, parse_duration};

/// The configuration `kind`'s builder resolves with `key` set to `value`
/// (or with nothing set), as its `Display` writes it.
fn build(kind: PolicyKind, set: Option<(&str, KeyValue)>) -> Result<String, ConfigError> {
    macro_rules! build {
        ($config:ty) => {{
            let builder = <$config>::builder();
            let builder = match set {
                Some((key, value)) => builder.set_key(key, value)?,
                None => builder,
            };
            builder.build().map(|config| config.to_string())
        }};
    }
    match kind {
        PolicyKind::Bulkhead => build!(BulkheadConfig),
        PolicyKind::Retry => build!(RetryConfig),
        PolicyKind::CircuitBreaker => build!(CircuitBreakerConfig),
        PolicyKind::Timeout => build!(TimeoutConfig),
        PolicyKind::RateLimiter => build!(RateLimiterConfig),
        PolicyKind::Hedge => build!(HedgeConfig),
        PolicyKind::Fallback => build!(FallbackConfig),
        PolicyKind::Chaos => build!(ChaosConfig),
    }
}

/// A value of `kind` that the key takes, if it takes one, whatever the
/// other keys say (a limit of 1 keeps `min_concurrent` <=
/// `initial_concurrent` <= `max_concurrent`).
fn accepted(kind: ValueKind) -> Option<KeyValue> {
    Some(match kind {
        ValueKind::Limit { .. } => KeyValue::Integer(1),
        ValueKind::Count { min, .. } => KeyValue::Integer(min),
        ValueKind::Number { range, .. } => KeyValue::Number(range.example()),
        ValueKind::Duration { .. } => KeyValue::Duration(Duration::from_millis(1)),
        ValueKind::Bool => KeyValue::Bool(false),
        ValueKind::Choice { choices, .. } => KeyValue::Text(choices[choices.len() - 1].to_owned()),
        ValueKind::RejectionKinds => {
            KeyValue::RejectionKinds(RejectionKinds::EMPTY.with(RejectionKind::Timeout))
        }
        ValueKind::Name => KeyValue::Text("db".to_owned()),
        ValueKind::Delay => KeyValue::Delay(crate::HedgeDelay::percentile(99.0)),
        ValueKind::Latency => KeyValue::Latency(crate::ChaosLatency::range(
            Duration::from_millis(1),
            Duration::from_millis(2),
        )),
        ValueKind::Seed => KeyValue::Seed(u64::MAX),
        ValueKind::Priority => KeyValue::Priority(crate::Priority::Critical),
        ValueKind::ShedAt => KeyValue::ShedAt(crate::ShedAt::new(0.25, 0.5, 0.75).unwrap()),
        ValueKind::Predicate | ValueKind::Method => return None,
    })
}

/// A documented default, read as its kind.
fn documented(key: &Key) -> KeyValue {
    let text = key.default();
    let unquoted = text.trim_matches('"');
    match key.kind() {
        ValueKind::Limit { .. } | ValueKind::Count { .. } => {
            KeyValue::Integer(text.parse().unwrap())
        }
        ValueKind::Number { .. } => KeyValue::Number(text.parse().unwrap()),
        ValueKind::Duration { .. } => {
            KeyValue::Duration(parse_duration(key.name(), unquoted).unwrap())
        }
        ValueKind::Bool => KeyValue::Bool(text.parse().unwrap()),
        ValueKind::Choice { .. } | ValueKind::Name => KeyValue::Text(unquoted.to_owned()),
        ValueKind::Delay => {
            KeyValue::Delay(crate::HedgeDelay::parse(key.name(), unquoted).unwrap())
        }
        ValueKind::Latency => {
            KeyValue::Latency(crate::ChaosLatency::parse(key.name(), unquoted).unwrap())
        }
        ValueKind::Seed => KeyValue::Seed(text.parse().unwrap()),
        ValueKind::Priority => {
            KeyValue::Priority(crate::Priority::parse(key.name(), unquoted).unwrap())
        }
        ValueKind::ShedAt => KeyValue::ShedAt(crate::ShedAt::parse(key.name(), unquoted).unwrap()),
        ValueKind::RejectionKinds => KeyValue::RejectionKinds(
            text.trim_matches(['[', ']'])
                .split(',')
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .map(|name| RejectionKind::parse(key.name(), name).unwrap())
                .collect(),
        ),
        ValueKind::Predicate | ValueKind::Method => {
            unreachable!("a predicate or a method has no default value")
        }
    }
}

#[test]
fn a_builder_takes_every_key_configuration_takes_and_no_other() {
    for kind in PolicyKind::ALL {
        for key in kind.keys() {
            let taken = accepted(key.kind()).map(|value| build(kind, Some((key.name(), value))));
            if key.origin().in_configuration() {
                assert!(taken.unwrap().is_ok(), "{kind}.{}", key.name());
            } else {
                assert!(
                    taken.is_none(),
                    "{kind}.{}: only attributes take it",
                    key.name()
                );
            }
        }
        let err = build(kind, Some(("colour", KeyValue::Bool(true)))).unwrap_err();
        assert_eq!(err.code(), "CFG-001");
        assert_eq!(err.key(), "colour");
    }
    let err = build(
        PolicyKind::Bulkhead,
        Some(("max_concurrent", KeyValue::Bool(true))),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "CFG-001: max_concurrent is not a key of this policy that takes true"
    );
}

#[test]
fn every_documented_default_is_the_built_in_one() {
    for kind in PolicyKind::ALL {
        let default = build(kind, None).unwrap();
        for key in kind.keys().iter().filter(|key| !key.default().is_empty()) {
            let set = build(kind, Some((key.name(), documented(key))));
            assert_eq!(set.unwrap(), default, "{kind}.{}", key.name());
        }
    }
}

#[test]
fn builders_check_the_ranges_of_their_tables() {
    for kind in PolicyKind::ALL {
        for key in kind.keys() {
            let refused = match key.kind() {
                // A limit up to u32::MAX (`max_keys`) has no value above it.
                ValueKind::Limit { max } => [Some(0), max.checked_add(1)]
                    .into_iter()
                    .flatten()
                    .map(KeyValue::Integer)
                    .collect(),
                ValueKind::Count { min, max } => {
                    let refused: Vec<KeyValue> = [min.checked_sub(1), max.checked_add(1)]
                        .into_iter()
                        .flatten()
                        .map(KeyValue::Integer)
                        .collect();
                    if refused.is_empty() {
                        // Every whole number is a value of the key.
                        continue;
                    }
                    refused
                }
                ValueKind::Number { range, .. } => [-1e9, -0.5, 0.0, 1.0, 100.5, 1e39]
                    .into_iter()
                    .filter(|x| !range.contains(*x))
                    .map(KeyValue::Number)
                    .collect(),
                ValueKind::Duration { positive: true } => vec![KeyValue::Duration(Duration::ZERO)],
                ValueKind::Latency => vec![KeyValue::Latency(crate::ChaosLatency::range(
                    Duration::from_millis(2),
                    Duration::from_millis(1),
                ))],
                _ => continue,
            };
            assert!(!refused.is_empty(), "{kind}.{}", key.name());
            for value in refused {
                let err = build(kind, Some((key.name(), value.clone()))).unwrap_err();
                let code = match key.kind() {
                    ValueKind::Duration { .. } => "ATR-008",
                    other => other.code(),
                };
                assert_eq!((err.code(), err.key()), (code, key.name()), "{value}");
            }
        }
    }
}

/// The values of the configuration `kind`'s builder resolves with `key`
/// set to `value` (or with nothing set).
fn values(kind: PolicyKind, set: Option<(&str, KeyValue)>) -> Vec<(&'static str, String)> {
    macro_rules! values {
        ($config:ty) => {{
            let builder = <$config>::builder();
            let builder = match set {
                Some((key, value)) => builder.set_key(key, value).unwrap(),
                None => builder,
            };
            builder.build().unwrap().values()
        }};
    }
    match kind {
        PolicyKind::Bulkhead => values!(BulkheadConfig),
        PolicyKind::Retry => values!(RetryConfig),
        PolicyKind::CircuitBreaker => values!(CircuitBreakerConfig),
        PolicyKind::Timeout => values!(TimeoutConfig),
        PolicyKind::RateLimiter => values!(RateLimiterConfig),
        PolicyKind::Hedge => values!(HedgeConfig),
        PolicyKind::Fallback => values!(FallbackConfig),
        PolicyKind::Chaos => values!(ChaosConfig),
    }
}

#[test]
fn a_configs_values_name_every_key_configuration_sets_and_show_what_it_was_set_to() {
    for kind in PolicyKind::ALL {
        let default = values(kind, None);
        let names: Vec<&str> = default.iter().map(|(name, _)| *name).collect();
        let configured: Vec<&str> = kind
            .keys()
            .iter()
            .filter(|key| key.origin().in_configuration())
            .map(Key::name)
            .collect();
        assert_eq!(names, configured, "{kind}: every key, in the table's order");
        for key in kind.keys().iter().filter(|k| k.origin().in_configuration()) {
            let value = accepted(key.kind()).unwrap();
            let set = values(kind, Some((key.name(), value.clone())));
            for ((name, before), (_, after)) in default.iter().zip(&set) {
                if *name != key.name() {
                    assert_eq!(before, after, "{kind}.{}: {name} moved", key.name());
                } else if before == after {
                    // The value accepted is the default: written alike.
                    assert_eq!(before, &value.to_string(), "{kind}.{name}");
                }
            }
        }
    }
    let bulkhead = BulkheadConfig::builder()
        .max_wait(Duration::from_millis(250))
        .reserved(2)
        .build()
        .unwrap()
        .values();
    let value = |name: &str| bulkhead.iter().find(|(key, _)| *key == name).unwrap();
    assert_eq!(value("max_wait"), &("max_wait", "250ms".to_owned()));
    assert_eq!(value("resource"), &("resource", "none".to_owned()));
    assert_eq!(value("reserved"), &("reserved", "2".to_owned()));
    assert_eq!(value("queue"), &("queue", "fifo".to_owned()));
}

#[test]
fn every_choice_of_a_table_is_a_variant_of_its_type() {
    for kind in PolicyKind::ALL {
        for key in kind.keys() {
            let ValueKind::Choice { choices, .. } = key.kind() else {
                continue;
            };
            for choice in choices {
                let set = values(kind, Some((key.name(), KeyValue::Text(choice.to_string()))));
                let written = set.iter().find(|(name, _)| *name == key.name());
                assert_eq!(written.map(|(_, value)| value.as_str()), Some(*choice));
            }
        }
    }
}
