//! Reloads of every policy: one loop over [`PolicyKind::ALL`], reloading
//! each configuration key of each policy in turn, so that a policy whose
//! new configuration a reload does not install (or whose report, live
//! change or later declarations miss it) fails here, and a new policy does
//! not compile until the loop covers it.

use bulkhead_core::keys::{Key, ValueKind};

use super::Registry;
use crate::policy::{ForKind, Managed, for_kind};
use crate::store::KeyChange;
use bulkhead_core::keys::PolicyKind;

/// A value of `key` other than its built-in default, as TOML writes it;
/// `None` for a key whose value needs more than itself (a resource, which
/// needs a budget) or that configuration does not take.
fn other_value(key: &Key) -> Option<String> {
    let default = key.default().trim_matches('"');
    let other = |a: &str, b: &str| if default == a { b } else { a }.to_owned();
    Some(match key.kind() {
        ValueKind::Limit { .. } => other("2", "3"),
        ValueKind::Count { min, max } => {
            let (a, b) = (min.saturating_add(1), min.saturating_add(2));
            assert!(b <= max, "{}", key.name());
            other(&a.to_string(), &b.to_string())
        }
        ValueKind::Number { range, .. } => {
            let example = range.example();
            [example, example / 2.0, example * 0.75]
                .into_iter()
                .find(|x| range.contains(*x) && default.parse::<f64>().ok() != Some(*x))?
                .to_string()
        }
        ValueKind::Duration { .. } => format!("\"{}\"", other("3s", "4s")),
        ValueKind::Delay => format!("\"{}\"", other("p90", "p50")),
        ValueKind::Latency => format!("\"{}\"", other("100ms..200ms", "3s")),
        ValueKind::Seed => other("7", "8"),
        ValueKind::Priority => format!("\"{}\"", other("critical", "sheddable")),
        ValueKind::ShedAt => format!("\"{}\"", other("sheddable=0.25", "normal=0.75")),
        ValueKind::Bool => other("true", "false"),
        ValueKind::Choice { choices, .. } => {
            format!("\"{}\"", choices.iter().find(|c| **c != default)?)
        }
        ValueKind::RejectionKinds => other("[Timeout]", "[BulkheadFull]")
            .replace('[', "[\"")
            .replace(']', "\"]"),
        ValueKind::Name | ValueKind::Predicate | ValueKind::Method => return None,
    })
}

/// The value of `key` in `values`.
fn value_of(values: &[(&'static str, String)], key: &str) -> String {
    let found = values.iter().find(|(name, _)| *name == key);
    found.map(|(_, value)| value.clone()).unwrap_or_default()
}

/// Declares instance `id` of `P` with nothing given in code.
fn declare<P: Managed>(registry: &Registry, id: &str) -> P {
    let declarations = registry.declare();
    let policy = declarations
        .stage(id, "reload test", &P::Spec::default())
        .unwrap();
    declarations.commit();
    policy
}

/// Reloads `key = value` into the `default` configuration of `P`
/// (in a registry where nothing else is declared) and checks what it did
/// to a live instance, to the report and to later declarations.
struct Reloads {
    key: &'static str,
    value: String,
}

impl ForKind for Reloads {
    type Output = ();

    fn run<P: Managed>(self) {
        reloads::<P>(self.key, &self.value);
    }
}

fn reloads<P: Managed>(key: &'static str, value: &str) {
    let registry = &Registry::new();
    let store = registry.stores().of::<P>();
    let kind = P::KIND;
    let id = format!("{kind}-live");
    let policy: P = declare(registry, &id);
    let before = P::values(&policy.config());
    let toml = format!("[{kind}.configs.default]\n{key} = {value}\n");
    let changes = registry.reload_toml(&toml).unwrap();

    // What a fresh declaration resolves to now is what the reload
    // installed.
    let installed = P::values(&declare::<P>(registry, &format!("{kind}-new")).config());
    let (from, to) = (value_of(&before, key), value_of(&installed, key));
    assert_ne!(from, to, "{kind}.{key} = {value}: not installed");
    // Only a bulkhead's limit and reservation, and every key of a chaos
    // policy, change live.
    let live = kind == PolicyKind::Chaos
        || kind == PolicyKind::Bulkhead && matches!(key, "max_concurrent" | "reserved");
    let now = value_of(&P::values(&store.get(&id).unwrap().config()), key);
    assert_eq!(&now, if live { &to } else { &from }, "{kind}.{key} now");

    let [change] = changes.as_slice() else {
        panic!("{kind}.{key}: one change expected, got {changes:?}");
    };
    assert_eq!(
        (change.policy, change.instance.as_str()),
        (kind.name(), id.as_str())
    );
    assert_eq!(change.applied, live, "{change:?}");
    let expected = KeyChange {
        key,
        from: from.clone(),
        to: to.clone(),
        applied: live,
    };
    assert_eq!(change.keys, [expected], "{kind}.{key}");

    // A key that did not take effect is listed again, one that did is not.
    let again = registry.reload_toml(&toml).unwrap();
    assert_eq!(again.len(), usize::from(!live), "{kind}.{key}: {again:?}");
}

#[test]
fn a_reload_installs_every_key_of_every_policy_and_reports_it() {
    let mut reloaded = Vec::new();
    for kind in PolicyKind::ALL {
        let keys = kind.keys().iter().filter(|k| k.origin().in_configuration());
        for key in keys {
            let Some(value) = other_value(key) else {
                continue;
            };
            let key = key.name();
            for_kind(kind, Reloads { key, value });
            reloaded.push(kind);
        }
    }
    // Every policy had a key to reload.
    for kind in PolicyKind::ALL {
        assert!(reloaded.contains(&kind), "{kind}: no key reloaded");
    }
}
