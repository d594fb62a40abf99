//! The facade's feature `redis` decides which keys of `[resources.<name>]`
//! the configuration sources know: with it, `bulkhead-fleet` is linked in
//! and registers its keys (`fleet`, `lease`, ..) with the registry; without
//! it, they are unknown keys. These tests stay with the facade because the
//! feature is the facade's: the registry's own tests never link the fleet.

use bulkhead::Registry;

/// With the feature `redis` the configuration sources find the fleet's
/// keys without the program naming anything of `bulkhead::fleet`: the
/// fleet crate registers itself with the registry (`LinkedKind`).
#[cfg(feature = "redis")]
#[test]
fn the_fleet_keys_are_read_with_the_redis_feature_without_naming_the_fleet() {
    let short_lease = Registry::builder()
        .config_toml("[resources.db]\nbudget = 3\nfleet = \"redis://h\"\nlease = \"50ms\"\n")
        .unwrap_err();
    assert_eq!(short_lease.code(), "REG-014", "{short_lease}");
    assert!(
        short_lease.to_string().contains("resources.db.lease"),
        "{short_lease}"
    );
    let misspelt = Registry::builder()
        .config_toml("[resources.db]\nbudget = 3\nleese = \"1s\"\n")
        .unwrap_err();
    assert_eq!(misspelt.code(), "CFG-001");
    assert!(misspelt.to_string().contains("lease"), "{misspelt}");
}

#[cfg(not(feature = "redis"))]
#[test]
fn the_fleet_keys_need_the_redis_feature() {
    let error = Registry::builder()
        .config_toml("[resources.db]\nbudget = 3\nfleet = \"redis://h\"\n")
        .unwrap_err();
    assert_eq!(error.code(), "CFG-001");
    assert!(error.to_string().contains("redis"), "{error}");
}

#[test]
fn bad_resource_variables_are_refused_naming_the_variable() {
    let error = |name: &str, value: &str| {
        Registry::builder()
            .config_vars("BULKHEAD_", [(name, value)])
            .unwrap_err()
    };
    let unknown = error("BULKHEAD_RESOURCES__DB__BUDGT", "3");
    assert_eq!(unknown.code(), "CFG-001");
    assert!(
        unknown
            .to_string()
            .contains("BULKHEAD_RESOURCES__DB__BUDGT"),
        "{unknown}"
    );
    assert!(unknown.to_string().contains("budget"), "{unknown}");
    let short = error("BULKHEAD_RESOURCES__DB", "3");
    assert_eq!(short.code(), "CFG-002");
    let bad = error("BULKHEAD_RESOURCES__DB__BUDGET", "many");
    assert_eq!(bad.code(), "CFG-002");
    assert!(
        bad.to_string().contains("BULKHEAD_RESOURCES__DB__BUDGET"),
        "{bad}"
    );
    // A key of a resource without its budget anywhere.
    #[cfg(feature = "redis")]
    assert_eq!(
        error("BULKHEAD_RESOURCES__DB__LEASE", "1s").code(),
        "CFG-002"
    );
    #[cfg(not(feature = "redis"))]
    assert_eq!(
        error("BULKHEAD_RESOURCES__DB__LEASE", "1s").code(),
        "CFG-001"
    );
}
