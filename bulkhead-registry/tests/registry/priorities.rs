//! A bulkhead's classes in a registry: `priority` and `shed_at` from TOML
//! and environment variables, reloaded live, bad values with their codes
//! naming the full key, and the snapshot and metrics per class.

use bulkhead_core::{ManualClock, Priority, ShedAt, priority};
use bulkhead_registry::{Pipeline, Registry};

fn guarded(registry: &Registry, id: &str) -> Pipeline {
    Pipeline::builder(registry, id)
        .bulkhead(|b| b.max_concurrent(4))
        .build()
        .unwrap()
}

#[test]
fn toml_and_environment_variables_give_a_bulkhead_its_classes() {
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .config_toml(
            "[bulkhead.configs.default]\nshed_at = \"sheddable=0.25, normal=0.75\"\n\
             [bulkhead.instances.search]\npriority = \"sheddable\"",
        )
        .unwrap()
        .config_vars(
            "APP_",
            [("APP_BULKHEAD__INSTANCES__PAY__PRIORITY", "Critical")],
        )
        .unwrap()
        .build();
    guarded(&registry, "search");
    guarded(&registry, "pay");
    let search = registry.bulkhead("search").unwrap();
    let config = search.bulkhead().config();
    assert_eq!(config.priority_set(), Some(Priority::Sheddable));
    assert_eq!(config.shed_at(), ShedAt::new(0.25, 0.75, 1.0).unwrap());
    let pay = registry.bulkhead("pay").unwrap().bulkhead().config();
    assert_eq!(pay.priority(), Priority::Critical);
    // Search's own calls are Sheddable: one slot of four.
    let held = search.bulkhead().try_enter().unwrap();
    assert!(search.bulkhead().try_enter().is_err());
    let snapshot = search.snapshot();
    let sheddable = snapshot.classes[Priority::Sheddable.index()];
    assert_eq!(
        (sheddable.held, sheddable.threshold, sheddable.shed),
        (1, 1, 1)
    );
    assert_eq!(snapshot.classes.map(|c| c.threshold), [1, 3, 4, 4]);
    drop(held);
}

#[test]
fn toml_writes_shares_as_an_inline_table_too() {
    let registry = Registry::builder()
        .config_toml("[bulkhead.instances.db]\nshed_at = { sheddable = 0.25, high = 1 }")
        .unwrap()
        .build();
    guarded(&registry, "db");
    let config = registry.bulkhead("db").unwrap().bulkhead().config();
    assert_eq!(config.shed_at(), ShedAt::new(0.25, 1.0, 1.0).unwrap());
    let err = registry
        .reload_toml("[bulkhead.instances.db]\nshed_at = { normal = 0.4 }")
        .unwrap_err();
    assert_eq!(err.code(), "ATR-018", "{err}");
    let err = registry
        .reload_toml("[bulkhead.instances.db]\nshed_at = { normal = \"most\" }")
        .unwrap_err();
    assert_eq!(err.code(), "CFG-002", "{err}");
}

#[test]
fn a_reload_puts_new_shares_and_a_new_class_in_force_on_a_live_bulkhead() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    guarded(&registry, "live");
    let handle = registry.bulkhead("live").unwrap();
    let bulkhead = handle.bulkhead();
    let held: Vec<_> = (0..2).map(|_| bulkhead.try_enter().unwrap()).collect();
    assert!(priority::with(Priority::Sheddable, || bulkhead.try_enter()).is_err());
    registry
        .reload_toml("[bulkhead.instances.live]\nshed_at = \"sheddable=0.75\"")
        .unwrap();
    let third = priority::with(Priority::Sheddable, || bulkhead.try_enter()).unwrap();
    registry
        .reload_toml(
            "[bulkhead.instances.live]\npriority = \"sheddable\"\nshed_at = \"sheddable=0.5\"",
        )
        .unwrap();
    assert!(
        bulkhead.try_enter().is_err(),
        "its own calls are Sheddable now"
    );
    assert_eq!(
        handle.snapshot().classes[0].beyond_share,
        1,
        "one past the new share"
    );
    registry.reload_toml("").unwrap();
    let fourth = bulkhead.try_enter().unwrap();
    assert_eq!(bulkhead.config().priority_set(), None);
    drop((held, third, fourth));
}

#[test]
fn bad_classes_and_shares_give_their_codes_naming_the_full_key() {
    let cases = [
        ("priority", "\"urgent\"", "ATR-017"),
        ("priority", "3", "ATR-017"),
        ("shed_at", "\"urgent=0.5\"", "ATR-017"),
        ("shed_at", "\"normal=1.5\"", "ATR-017"),
        ("shed_at", "\"normal=0\"", "ATR-017"),
        ("shed_at", "\"critical=0.5\"", "ATR-017"),
        ("shed_at", "\"normal=0.4\"", "ATR-018"),
        ("shed_at", "\"high=0.5, normal=0.6\"", "ATR-018"),
    ];
    for (key, value, code) in cases {
        let registry = Registry::new();
        guarded(&registry, "db");
        let err = registry
            .reload_toml(&format!("[bulkhead.instances.db]\n{key} = {value}"))
            .unwrap_err();
        assert_eq!(err.code(), code, "{key} = {value}: {err}");
        assert!(
            err.to_string().contains("bulkhead.instances.db.") || err.to_string().contains(key),
            "{err}"
        );
        let var = format!("APP_BULKHEAD__INSTANCES__DB__{}", key.to_uppercase());
        let built = Registry::builder()
            .config_vars("APP_", [(var.as_str(), value.trim_matches('"'))])
            .map(|builder| builder.build());
        let err = match built {
            Err(err) => err,
            Ok(registry) => Pipeline::builder(&registry, "db")
                .bulkhead(|b| b)
                .build()
                .unwrap_err(),
        };
        assert_eq!(err.code(), code, "{var}={value}: {err}");
    }
    let registry = Registry::new();
    let err = registry
        .reload_toml("[bulkhead.instances.db]\npriority = \"critcal\"")
        .unwrap_err();
    assert!(
        err.to_string().contains("did you mean \"critical\""),
        "{err}"
    );
}
