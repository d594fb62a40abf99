//! Resource budgets (the README's *Sizing and budgets*): the registry refuses bulkheads whose
//! `max_concurrent`, added up, would exceed the budget of the resource
//! behind them.

use bulkhead_core::BulkheadConfig;
use bulkhead_registry::{Pipeline, Registry};

fn on(resource: &str, max: u32) -> bulkhead_core::BulkheadConfigBuilder {
    BulkheadConfig::builder()
        .max_concurrent(max)
        .resource(resource)
}

#[test]
fn bulkheads_within_the_budget_are_accepted_and_counted() {
    let registry = Registry::new();
    registry.resource("db", 10).unwrap();
    registry
        .bulkhead_policy("checkout", "t", &on("db", 6))
        .unwrap();
    registry
        .bulkhead_policy("reports", "t", &on("db", 4))
        .unwrap();
    assert_eq!(registry.resource_usage("db"), Some((10, 10)));
    assert_eq!(registry.resource_usage("cache"), None);
}

#[test]
fn a_bulkhead_that_would_exceed_the_budget_is_reg_010_naming_every_bulkhead() {
    let registry = Registry::new();
    registry.resource("db", 10).unwrap();
    registry
        .bulkhead_policy("checkout", "t", &on("db", 6))
        .unwrap();
    let err = registry
        .bulkhead_policy("reports", "t", &on("db", 5))
        .unwrap_err();
    assert_eq!(err.code(), "REG-010");
    assert_eq!(
        err.to_string(),
        "REG-010: resource \"db\" has a budget of 10 slots, but its bulkheads would take 11: checkout (6), reports (5)"
    );
    assert!(
        registry.bulkhead("reports").is_err(),
        "refused, not registered"
    );
}

#[test]
fn bulkheads_declared_together_count_together() {
    let registry = Registry::new();
    registry.resource("db", 10).unwrap();
    let mut batch = registry.declare();
    batch.bulkhead("a", "t", &on("db", 6)).unwrap();
    assert_eq!(
        batch.bulkhead("b", "t", &on("db", 6)).unwrap_err().code(),
        "REG-010"
    );
    drop(batch);
    assert!(registry.snapshot().bulkheads().is_empty());
}

#[test]
fn one_shared_name_counts_once() {
    let registry = Registry::new();
    registry.resource("db", 6).unwrap();
    registry.bulkhead_policy("pool", "a", &on("db", 6)).unwrap();
    registry.bulkhead_policy("pool", "b", &on("db", 6)).unwrap();
    assert_eq!(registry.resource_usage("db"), Some((6, 6)));
}

#[test]
fn a_resource_without_a_budget_is_reg_011() {
    let registry = Registry::new();
    let err = Pipeline::builder(&registry, "reports")
        .bulkhead(|b| b.max_concurrent(4).resource("dbb"))
        .build()
        .unwrap_err();
    assert_eq!(err.code(), "REG-011");
    assert!(
        err.to_string()
            .contains("registry.resource(\"dbb\", budget)"),
        "{err}"
    );
}

#[test]
fn lowering_a_budget_below_what_is_in_use_is_refused_and_changes_nothing() {
    let registry = Registry::new();
    registry.resource("db", 10).unwrap();
    registry
        .bulkhead_policy("checkout", "t", &on("db", 8))
        .unwrap();
    assert_eq!(registry.resource("db", 5).unwrap_err().code(), "REG-010");
    assert_eq!(registry.resource_usage("db"), Some((10, 8)));
    registry.resource("db", 8).unwrap();
}

#[test]
fn a_reload_that_would_exceed_a_budget_is_refused_whole() {
    let registry = Registry::new();
    registry.resource("db", 10).unwrap();
    registry
        .bulkhead_policy("checkout", "t", &on("db", 6))
        .unwrap();
    registry
        .bulkhead_policy("reports", "t", &on("db", 4))
        .unwrap();
    let err = registry
        .reload_toml("[bulkhead.instances.reports]\nmax_concurrent = 5")
        .unwrap_err();
    assert_eq!(err.code(), "REG-010");
    assert_eq!(registry.bulkhead("reports").unwrap().max_concurrent(), 4);
    registry
        .reload_toml("[bulkhead.instances.reports]\nmax_concurrent = 3")
        .unwrap();
    assert_eq!(registry.bulkhead("reports").unwrap().max_concurrent(), 3);
}

#[test]
fn set_max_concurrent_stays_within_the_budget() {
    let registry = Registry::new();
    registry.resource("db", 10).unwrap();
    registry.bulkhead_policy("a", "t", &on("db", 5)).unwrap();
    registry.bulkhead_policy("b", "t", &on("db", 5)).unwrap();
    let a = registry.bulkhead("a").unwrap();
    let err = a.set_max_concurrent(6).unwrap_err();
    assert_eq!(err.code(), "REG-010");
    assert!(err.to_string().contains("a (6), b (5)"), "{err}");
    assert_eq!(a.max_concurrent(), 5, "refused, unchanged");
    // Lowering one makes room for the other, and usage follows the live
    // limits.
    a.set_max_concurrent(2).unwrap();
    assert_eq!(registry.resource_usage("db"), Some((10, 7)));
    registry
        .bulkhead("b")
        .unwrap()
        .set_max_concurrent(8)
        .unwrap();
    assert_eq!(registry.resource_usage("db"), Some((10, 10)));
    assert_eq!(a.set_max_concurrent(3).unwrap_err().code(), "REG-010");
}

#[test]
fn a_redeclaration_shares_the_bulkhead_without_counting_it_again() {
    let registry = Registry::new();
    registry.resource("db", 10).unwrap();
    registry.bulkhead_policy("a", "t", &on("db", 8)).unwrap();
    registry.bulkhead_policy("b", "t", &on("db", 2)).unwrap();
    registry
        .bulkhead("a")
        .unwrap()
        .set_max_concurrent(2)
        .unwrap();
    registry
        .bulkhead("b")
        .unwrap()
        .set_max_concurrent(8)
        .unwrap();
    // "a" still resolves to 8: it is shared as it is, not counted as 8 more.
    let again = registry
        .bulkhead_policy("a", "second", &on("db", 8))
        .unwrap();
    assert_eq!(again.max_concurrent(), 2);
}

#[test]
fn a_disabled_bulkhead_cannot_take_a_budget_it_would_not_keep() {
    let registry = Registry::new();
    registry.resource("db", 10).unwrap();
    let err = registry
        .bulkhead_policy("a", "t", &on("db", 5).enabled(false))
        .unwrap_err();
    assert_eq!(err.code(), "REG-013");
    assert!(err.to_string().contains("\"a\" is disabled"), "{err}");
    registry.bulkhead_policy("b", "t", &on("db", 5)).unwrap();
    let err = registry
        .reload_toml("[bulkhead.instances.b]\nenabled = false")
        .unwrap_err();
    assert_eq!(err.code(), "REG-013");
}

#[test]
fn the_resource_can_come_from_configuration() {
    let registry = Registry::builder()
        .config_toml("[bulkhead.instances.reports]\nresource = \"db\"\nmax_concurrent = 7")
        .unwrap()
        .build();
    registry.resource("db", 6).unwrap();
    let err = registry
        .bulkhead_policy("reports", "t", &BulkheadConfig::builder())
        .unwrap_err();
    assert_eq!(err.code(), "REG-010");
}

#[test]
fn a_reload_that_moves_a_bulkhead_to_another_resource_moves_its_slots() {
    let registry = Registry::new();
    registry.resource("a", 10).unwrap();
    registry.resource("b", 10).unwrap();
    registry.bulkhead_policy("x", "t", &on("a", 5)).unwrap();
    let changes = registry
        .reload_toml("[bulkhead.instances.x]\nresource = \"b\"")
        .unwrap();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(
        registry.resource_usage("b"),
        Some((10, 5)),
        "x counts against b"
    );
    assert_eq!(
        registry.resource_usage("a"),
        Some((10, 0)),
        "and no longer against a"
    );
    let again = registry
        .reload_toml("[bulkhead.instances.x]\nresource = \"b\"")
        .unwrap();
    assert!(again.is_empty(), "nothing changed: {again:?}");
}

#[test]
fn moving_a_bulkhead_off_a_resource_frees_its_slots_in_the_same_reload() {
    let registry = Registry::new();
    registry.resource("a", 5).unwrap();
    registry.resource("b", 10).unwrap();
    registry.bulkhead_policy("x", "t", &on("a", 3)).unwrap();
    registry.bulkhead_policy("y", "t", &on("a", 2)).unwrap();
    registry
        .reload_toml(
            "[bulkhead.instances.x]\nresource = \"b\"\n[bulkhead.instances.y]\nmax_concurrent = 5",
        )
        .unwrap();
    assert_eq!(registry.resource_usage("a"), Some((5, 5)));
}

#[test]
fn set_max_concurrent_after_a_move_checks_the_new_resource() {
    let registry = Registry::new();
    registry.resource("a", 5).unwrap();
    registry.resource("b", 10).unwrap();
    registry.bulkhead_policy("x", "t", &on("a", 3)).unwrap();
    registry.bulkhead_policy("y", "t", &on("a", 2)).unwrap();
    registry
        .reload_toml("[bulkhead.instances.x]\nresource = \"b\"")
        .unwrap();
    // x is on b now (10 slots): 8 fits.
    registry
        .bulkhead("x")
        .unwrap()
        .set_max_concurrent(8)
        .unwrap();
    assert_eq!(registry.resource_usage("b"), Some((10, 8)));
}

#[test]
fn a_budget_is_declared_in_toml_and_reloaded() {
    let registry = Registry::builder()
        .config_toml("[resources.db]\nbudget = 3\n")
        .unwrap()
        .build();
    let too_many = Pipeline::builder(&registry, "toml-orders")
        .bulkhead(|b| b.max_concurrent(4).resource("db"))
        .build();
    assert_eq!(too_many.unwrap_err().code(), "REG-010");
    registry
        .reload_toml("[resources.db]\nbudget = 5\n")
        .unwrap();
    assert!(
        Pipeline::builder(&registry, "toml-orders")
            .bulkhead(|b| b.max_concurrent(4).resource("db"))
            .build()
            .is_ok()
    );
    // A smaller budget that the bulkheads no longer fit is refused whole.
    let refused = registry.reload_toml("[resources.db]\nbudget = 2\n");
    assert_eq!(refused.unwrap_err().code(), "REG-010");
    assert_eq!(registry.resource_usage("db"), Some((5, 4)));
}

#[test]
fn a_budget_is_read_from_environment_variables() {
    let registry = Registry::builder()
        .config_vars("BULKHEAD_", [("BULKHEAD_RESOURCES__DB__BUDGET", "3")])
        .unwrap()
        .try_build()
        .unwrap();
    assert_eq!(registry.resource_usage("db"), Some((3, 0)));
    let too_many = Pipeline::builder(&registry, "env-orders")
        .bulkhead(|b| b.max_concurrent(4).resource("db"))
        .build();
    assert_eq!(too_many.unwrap_err().code(), "REG-010");
}

#[test]
fn environment_variables_override_a_resources_keys_in_toml_whatever_the_order() {
    let toml = "[resources.\"orders-db\"]\nbudget = 3\n\n[resources.cache]\nbudget = 2\n";
    let vars = [("APP_RESOURCES__ORDERS_DB__BUDGET", "8")];
    let env_first = Registry::builder()
        .config_vars("APP_", vars)
        .unwrap()
        .config_toml(toml)
        .unwrap()
        .build();
    let toml_first = Registry::builder()
        .config_toml(toml)
        .unwrap()
        .config_vars("APP_", vars)
        .unwrap()
        .build();
    for registry in [env_first, toml_first] {
        // The variable's name part matches "orders-db" in normalized form.
        assert_eq!(registry.resource_usage("orders-db"), Some((8, 0)));
        assert_eq!(registry.resource_usage("cache"), Some((2, 0)));
        assert_eq!(registry.resource_usage("orders_db"), None);
    }
}

#[test]
fn a_resource_only_the_environment_names_is_named_in_lower_case() {
    let registry = Registry::builder()
        .config_vars(
            "BULKHEAD_",
            [("BULKHEAD_RESOURCES__Search_Index__BUDGET", "4")],
        )
        .unwrap()
        .build();
    assert_eq!(registry.resource_usage("search_index"), Some((4, 0)));
}

#[test]
fn a_budget_changed_in_the_environment_is_reloaded() {
    let registry = Registry::builder()
        .config_toml("[resources.db]\nbudget = 3\n")
        .unwrap()
        .config_vars("BULKHEAD_", [("BULKHEAD_RESOURCES__DB__BUDGET", "6")])
        .unwrap()
        .build();
    assert_eq!(registry.resource_usage("db"), Some((6, 0)));
    // A reload keeps the variables as given, over the new TOML.
    registry
        .reload_toml("[resources.db]\nbudget = 2\n")
        .unwrap();
    assert_eq!(registry.resource_usage("db"), Some((6, 0)));
}

#[test]
fn resource_usage_is_one_reading_while_limits_change() {
    // Two threads move the limits of `a` and `b` between 1 and 9 (every
    // change the registry accepts keeps a + b <= 10); a third reads the
    // usage meanwhile: it may never add a's limit before it fell to b's
    // after it rose.
    let registry = Registry::new();
    registry.resource("db", 10).unwrap();
    for id in ["a", "b"] {
        registry.bulkhead_policy(id, "t", &on("db", 5)).unwrap();
    }
    let stop = std::sync::atomic::AtomicBool::new(false);
    let over = std::thread::scope(|s| {
        for id in ["a", "b"] {
            let (registry, stop) = (&registry, &stop);
            s.spawn(move || {
                let handle = registry.bulkhead(id).unwrap();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    for limit in [1, 9] {
                        let _ = handle.set_max_concurrent(limit);
                    }
                }
            });
        }
        // The writers stop before anything is asserted, so that a failure
        // fails rather than hangs.
        let start = std::time::Instant::now();
        let mut over = None;
        while over.is_none() && start.elapsed() < std::time::Duration::from_secs(1) {
            over = match registry.resource_usage("db") {
                Some((budget, used)) if used <= u64::from(budget) => None,
                reading => Some(reading),
            };
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        over
    });
    assert_eq!(over, None, "(budget, slots taken) over the budget");
}
