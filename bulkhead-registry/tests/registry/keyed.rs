//! Keyed bulkheads in a registry (SPEC section 12): made on first use
//! from the bulkhead's configuration layers, per-key limits from code and
//! TOML with every coded error, conflicts of declarations and of kinds
//! (REG-008, REG-018), live reloads, and the snapshot's bounded top list.

use std::time::Duration;

use bulkhead_core::{BulkheadConfig, KeyLimits, ManualClock};
use bulkhead_registry::Registry;

fn toml(text: &str) -> Registry {
    Registry::builder().config_toml(text).unwrap().build()
}

const API: &str = r#"
[bulkhead.configs.default]
max_wait = "5ms"

[bulkhead.configs.tenants]
max_concurrent = 50
per_key = 3
max_keys = 1000

[bulkhead.instances.api]
base_config = "tenants"
max_concurrent = 20
idle_evict = "2m"

[bulkhead.instances.api.keys."tenant-42"]
per_key = 10
reserved = 5

[bulkhead.instances.api.keys.small]
reserved = 1
"#;

// ------------------------------------------------------------- configuration

#[test]
fn a_keyed_bulkhead_resolves_its_configuration_as_a_bulkhead_does()
-> Result<(), Box<dyn std::error::Error>> {
    let registry = toml(API);
    let api = registry.keyed_bulkhead::<String>("api")?;
    let config = api.config();
    // instances.api > configs.tenants > configs.default > built-in.
    assert_eq!(config.max_concurrent(), 20);
    assert_eq!(config.per_key(), 3);
    assert_eq!(config.max_keys(), 1000);
    assert_eq!(config.idle_evict(), Duration::from_secs(120));
    assert_eq!(config.max_wait(), Duration::from_millis(5));
    // Keys of their own: tenant-42 as written; `small` keeps the default
    // per_key with its reservation.
    assert_eq!(api.limits_of("tenant-42"), KeyLimits::new(10).reserved(5));
    assert_eq!(api.limits_of("small"), KeyLimits::new(3).reserved(1));
    assert_eq!(api.limits_of("other"), KeyLimits::new(3));
    // Asked again: the same keyed bulkhead (its slots are shared).
    let permit = api.try_enter("other")?;
    assert_eq!(
        registry.keyed_bulkhead::<String>("api")?.in_flight("other"),
        1
    );
    drop(permit);
    Ok(())
}

#[test]
fn keys_of_other_types_are_parsed_from_configuration() -> Result<(), Box<dyn std::error::Error>> {
    let registry = toml("[bulkhead.instances.shards.keys.7]\nper_key = 2\nreserved = 2");
    let shards = registry.keyed_bulkhead::<u64>("shards")?;
    assert_eq!(shards.limits_of(&7), KeyLimits::new(2).reserved(2));
    let other = toml("[bulkhead.instances.shards.keys.seven]\nper_key = 2");
    let err = other.keyed_bulkhead::<u64>("shards").unwrap_err();
    assert_eq!(err.code(), "CFG-002");
    assert!(
        err.to_string()
            .contains("bulkhead.instances.shards.keys.seven"),
        "{err}"
    );
    assert!(err.to_string().contains("u64"), "{err}");
    Ok(())
}

#[test]
fn a_reservation_above_the_keys_limit_is_atr_020_with_its_full_key() {
    let registry = toml("[bulkhead.instances.api.keys.\"tenant 42\"]\nper_key = 4\nreserved = 5");
    let err = registry.keyed_bulkhead::<String>("api").unwrap_err();
    assert_eq!(err.code(), "ATR-020");
    assert!(
        err.to_string()
            .starts_with("ATR-020: bulkhead.instances.api.keys.\"tenant 42\".reserved: "),
        "{err}"
    );
}

#[test]
fn reservations_above_max_concurrent_are_atr_020() {
    let registry = toml(
        "[bulkhead.instances.api]\nmax_concurrent = 6\n\
         [bulkhead.instances.api.keys.a]\nper_key = 4\nreserved = 4\n\
         [bulkhead.instances.api.keys.b]\nper_key = 4\nreserved = 3",
    );
    let err = registry.keyed_bulkhead::<String>("api").unwrap_err();
    assert_eq!(err.code(), "ATR-020");
    assert!(
        err.to_string().contains("bulkhead.instances.api.keys: ")
            && err
                .to_string()
                .contains("add up to 7, above max_concurrent (6)"),
        "{err}"
    );
}

#[test]
fn a_bad_key_section_is_refused_when_the_source_is_given() {
    let err = Registry::builder()
        .config_toml("[bulkhead.instances.api.keys.t]\nper_kye = 3")
        .unwrap_err();
    assert_eq!(err.code(), "CFG-001");
    assert!(
        err.to_string().ends_with(
            "unknown configuration key bulkhead.instances.api.keys.t.per_kye; did you mean \"per_key\"?"
        ),
        "{err}"
    );
    let err = Registry::builder()
        .config_toml("[bulkhead.instances.api.keys.t]\nper_key = 0")
        .unwrap_err();
    assert_eq!(err.code(), "ATR-003");
    assert!(
        err.to_string()
            .contains("bulkhead.instances.api.keys.t.per_key")
    );
    let err = Registry::builder()
        .config_toml("[bulkhead.instances.api.keys.t]\nreserved = \"5\"")
        .unwrap_err();
    assert_eq!(err.code(), "CFG-002");
    assert!(
        err.to_string()
            .contains("keys.t.reserved must be a whole number")
    );
    // An unknown key of the instance itself is still CFG-001.
    let err = Registry::builder()
        .config_toml("[bulkhead.instances.api]\nper_kee = 3")
        .unwrap_err();
    assert_eq!(err.code(), "CFG-001");
    assert!(
        err.to_string().contains("did you mean \"per_key\"?"),
        "{err}"
    );
}

#[test]
fn keys_are_not_read_from_environment_variables() {
    let err = Registry::builder()
        .config_vars(
            "APP_",
            [("APP_BULKHEAD__INSTANCES__API__KEYS__GOLD__PER_KEY", "3")],
        )
        .unwrap_err();
    assert_eq!(err.code(), "CFG-002");
    assert!(err.to_string().contains("TOML only"), "{err}");
    // The instance's own keys are, as for any bulkhead.
    let registry = Registry::builder()
        .config_vars("APP_", [("APP_BULKHEAD__INSTANCES__API__PER_KEY", "3")])
        .unwrap()
        .build();
    assert_eq!(
        registry.keyed_bulkhead::<String>("api").unwrap().per_key(),
        3
    );
}

#[test]
fn an_unknown_base_config_is_reg_004() {
    let registry = toml("[bulkhead.instances.api]\nbase_config = \"nope\"");
    let err = registry.keyed_bulkhead::<String>("api").unwrap_err();
    assert_eq!(err.code(), "REG-004");
}

// ------------------------------------------------------------- declarations

#[test]
fn the_builder_lays_configuration_over_code() -> Result<(), Box<dyn std::error::Error>> {
    let registry = toml(
        "[bulkhead.instances.api]\nmax_concurrent = 40\n\
         [bulkhead.instances.api.keys.gold]\nreserved = 6",
    );
    let api = registry
        .keyed_bulkhead_builder::<String>("api")
        .max_concurrent(100)
        .per_key(4)
        .key("gold".to_owned(), KeyLimits::new(10).reserved(5))
        .key("silver".to_owned(), KeyLimits::new(6))
        .build()?;
    assert_eq!(api.max_concurrent(), 40, "instances.api over code");
    assert_eq!(api.per_key(), 4);
    assert_eq!(api.limits_of("gold"), KeyLimits::new(10).reserved(6));
    assert_eq!(api.limits_of("silver"), KeyLimits::new(6));
    Ok(())
}

#[test]
fn declaring_one_id_alike_shares_it_and_otherwise_is_reg_008()
-> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::new();
    let declare = |per_key: u32| {
        registry
            .keyed_bulkhead_builder::<u64>("api")
            .source("module a")
            .per_key(per_key)
            .key(42, KeyLimits::new(10).reserved(5))
            .build()
    };
    let first = declare(4)?;
    let again = declare(4)?;
    let permit = first.try_enter(&1)?;
    assert_eq!(again.in_flight(&1), 1, "one keyed bulkhead");
    drop(permit);

    let err = declare(5).unwrap_err();
    assert_eq!(err.code(), "REG-008");
    let message = err.to_string();
    assert!(message.contains("module a"), "{message}");
    assert!(
        message.contains("per_key = 4") && message.contains("per_key = 5"),
        "{message}"
    );
    let err = registry
        .keyed_bulkhead_builder::<u64>("api")
        .per_key(4)
        .key(42, KeyLimits::new(10).reserved(4))
        .build()
        .unwrap_err();
    assert_eq!(err.code(), "REG-008", "other keys' limits");
    // The plain getter returns it as it is.
    assert_eq!(registry.keyed_bulkhead::<u64>("api")?.per_key(), 4);
    Ok(())
}

#[test]
fn one_id_is_one_kind_of_bulkhead_reg_018() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::new();
    registry.keyed_bulkhead::<String>("api")?;
    let err = registry.keyed_bulkhead::<u64>("api").unwrap_err();
    assert_eq!(err.code(), "REG-018");
    assert!(err.to_string().contains("alloc::string::String"), "{err}");
    assert!(err.to_string().contains("u64"), "{err}");
    let err = registry
        .bulkhead_policy("api", "test", &BulkheadConfig::builder())
        .unwrap_err();
    assert_eq!(err.code(), "REG-018");
    assert!(err.to_string().contains("a keyed bulkhead"), "{err}");

    registry.bulkhead_policy("db", "test", &BulkheadConfig::builder())?;
    let err = registry.keyed_bulkhead::<String>("db").unwrap_err();
    assert_eq!(err.code(), "REG-018");
    assert!(
        err.to_string().contains("\"db\" is already a bulkhead"),
        "{err}"
    );
    Ok(())
}

// ------------------------------------------------------------- reloads

#[test]
fn a_reload_changes_the_limits_live() -> Result<(), Box<dyn std::error::Error>> {
    let registry = toml(API);
    let api = registry.keyed_bulkhead::<String>("api")?;
    let held = api.try_enter("tenant-42")?;
    let changes = registry.reload_toml(
        r#"
        [bulkhead.instances.api]
        base_config = "tenants"
        max_concurrent = 30
        per_key = 2
        max_keys = 500
        idle_evict = "30s"
        max_wait = "1s"

        [bulkhead.configs.tenants]
        max_concurrent = 50

        [bulkhead.instances.api.keys."tenant-42"]
        per_key = 12
        reserved = 5

        [bulkhead.instances.api.keys.small]
        reserved = 1
        "#,
    )?;
    let config = api.config();
    assert_eq!(config.max_concurrent(), 30);
    assert_eq!(config.per_key(), 2);
    assert_eq!(config.max_keys(), 500);
    assert_eq!(config.idle_evict(), Duration::from_secs(30));
    assert_eq!(config.max_wait(), Duration::from_secs(1));
    assert_eq!(api.limits_of("tenant-42"), KeyLimits::new(12).reserved(5));
    // `small` had per_key 3 from the default: it keeps its own 3.
    assert_eq!(api.in_flight("tenant-42"), 1, "calls in flight stay");
    let change = changes
        .iter()
        .find(|c| c.instance == "api")
        .expect("api changed");
    assert_eq!(change.policy, "bulkhead");
    for key in [
        "max_concurrent",
        "per_key",
        "max_keys",
        "idle_evict",
        "max_wait",
    ] {
        assert!(
            change.key(key).is_some_and(|k| k.applied),
            "{key}: {change:?}"
        );
    }
    let keys = change.key("keys").expect("the keys' limits changed");
    assert!(keys.applied, "{keys:?}");
    assert!(
        keys.to.contains("tenant-42: per_key 12, reserved 5"),
        "{keys:?}"
    );
    drop(held);
    // Nothing changed: nothing to report.
    assert!(registry.reload()?.iter().all(|c| c.instance != "api"));
    Ok(())
}

#[test]
fn a_changed_reservation_waits_for_a_new_instance() -> Result<(), Box<dyn std::error::Error>> {
    let registry = toml("[bulkhead.instances.api.keys.gold]\nper_key = 4\nreserved = 2");
    let api = registry.keyed_bulkhead::<String>("api")?;
    let changes =
        registry.reload_toml("[bulkhead.instances.api.keys.gold]\nper_key = 4\nreserved = 3")?;
    let change = changes.iter().find(|c| c.instance == "api").unwrap();
    assert!(!change.applied);
    let keys = change.key("keys").unwrap();
    assert!(!keys.applied);
    assert_eq!(keys.from, "gold: per_key 4, reserved 2");
    assert_eq!(keys.to, "gold: per_key 4, reserved 3");
    assert_eq!(api.limits_of("gold"), KeyLimits::new(4).reserved(2));
    // Listed again until it is made again.
    assert!(registry.reload()?.iter().any(|c| c.instance == "api"));
    Ok(())
}

#[test]
fn a_reload_whose_keys_do_not_hold_together_changes_nothing()
-> Result<(), Box<dyn std::error::Error>> {
    let registry = toml("[bulkhead.instances.api]\nmax_concurrent = 8");
    let api = registry.keyed_bulkhead::<String>("api")?;
    registry.bulkhead_policy("db", "test", &BulkheadConfig::builder())?;
    let err = registry
        .reload_toml(
            "[bulkhead.instances.db]\nmax_concurrent = 3\n\
             [bulkhead.instances.api]\nmax_concurrent = 8\n\
             [bulkhead.instances.api.keys.gold]\nper_key = 4\nreserved = 9",
        )
        .unwrap_err();
    assert_eq!(err.code(), "ATR-020");
    assert!(
        err.to_string()
            .contains("bulkhead.instances.api.keys.gold.reserved")
    );
    assert_eq!(
        registry.bulkhead("db")?.max_concurrent(),
        25,
        "all or nothing"
    );
    assert_eq!(api.max_concurrent(), 8);
    Ok(())
}

// ------------------------------------------------------------- snapshots

#[test]
fn the_snapshot_lists_the_busiest_keys_up_to_its_bound() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .snapshot_top_keys(2)
        .config_toml("[bulkhead.instances.api]\nmax_concurrent = 20\nper_key = 5")?
        .build();
    let api = registry.keyed_bulkhead::<u32>("api")?;
    let mut permits = Vec::new();
    for (key, calls) in [(1, 1), (2, 3), (3, 2), (4, 1)] {
        for _ in 0..calls {
            permits.push(api.try_enter(&key)?);
        }
    }
    let snapshot = registry.snapshot();
    let [keyed] = snapshot.keyed_bulkheads() else {
        panic!("one keyed bulkhead: {snapshot:?}");
    };
    assert_eq!(keyed.instance, "api");
    assert_eq!(keyed.key_type, "u32");
    assert_eq!(
        (
            keyed.in_flight,
            keyed.keys,
            keyed.busy_keys,
            keyed.max_concurrent
        ),
        (7, 4, 4, 20)
    );
    let top: Vec<(&str, u32)> = keyed
        .top
        .iter()
        .map(|k| (k.key.as_str(), k.in_flight))
        .collect();
    assert_eq!(top, [("2", 3), ("3", 2)]);
    assert!(snapshot.bulkheads().is_empty(), "not a plain bulkhead");
    drop(permits);
    assert!(registry.snapshot().keyed_bulkheads()[0].top.is_empty());
    Ok(())
}

#[test]
fn the_snapshot_lists_ten_keys_by_default() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::new();
    let api = registry
        .keyed_bulkhead_builder::<u32>("api")
        .max_concurrent(100)
        .build()?;
    let permits: Vec<_> = (0..30).map(|key| api.try_enter(&key)).collect();
    assert!(permits.iter().all(Result::is_ok));
    let snapshot = registry.snapshot();
    assert_eq!(snapshot.keyed_bulkheads()[0].top.len(), 10);
    assert_eq!(snapshot.keyed_bulkheads()[0].in_flight, 30);
    Ok(())
}

#[test]
fn one_key_written_two_ways_is_atr_020() {
    // "07" and "7" are one u32 key: which limit would win is not the
    // file's order but the spelling's; refused rather than guessed.
    let registry = toml(
        "[bulkhead.instances.api.keys.\"7\"]\nper_key = 3\n[bulkhead.instances.api.keys.\"07\"]\nper_key = 2\n",
    );
    let err = registry.keyed_bulkhead::<u32>("api").unwrap_err();
    assert_eq!(err.code(), "ATR-020", "{err}");
    assert!(err.to_string().contains("\"07\" and \"7\""), "{err}");
    // As strings they are two keys.
    let registry = toml(
        "[bulkhead.instances.api.keys.\"7\"]\nper_key = 3\n[bulkhead.instances.api.keys.\"07\"]\nper_key = 2\n",
    );
    let keyed = registry.keyed_bulkhead::<String>("api").unwrap();
    assert_eq!(keyed.limits_of("07").per_key(), 2);
    assert_eq!(keyed.limits_of("7").per_key(), 3);
}
