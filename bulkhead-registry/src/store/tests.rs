//! The precedence of an instance's configuration, highest first:
//! `instances.<id>` > the values given in code (attribute or builder) >
//! `configs.<config>` > `configs.default` > the built-in defaults; at each
//! level the environment's values come after the others.

use std::sync::Arc;
use std::time::Duration;

use bulkhead_core::{Bulkhead, BulkheadConfig, BulkheadConfigBuilder, PolicyContext, SystemClock};

use super::*;
use crate::source::{from_env, from_toml};

/// The layers `toml` and then the variables `vars` (prefix `APP_`) give.
fn layers(toml: &str, vars: &[(&str, &str)]) -> Layers<Bulkhead> {
    let mut layers = Layers::default();
    let mut settings = from_toml(toml, "TOML").unwrap();
    let vars = vars.iter().map(|(k, v)| ((*k).into(), (*v).into()));
    settings.extend(from_env("APP_", vars).unwrap());
    for setting in &settings {
        layers.apply(setting).unwrap();
    }
    layers
}

fn resolve(layers: &Layers<Bulkhead>, spec: BulkheadConfigBuilder) -> BulkheadConfig {
    layers.resolve("shop::Thumbs#resize()", &spec).unwrap()
}

const ID: &str = "\"shop::Thumbs#resize()\"";

#[test]
fn without_configuration_an_instance_has_the_built_in_defaults() {
    let config = resolve(&layers("", &[]), BulkheadConfig::builder());
    assert_eq!(config, BulkheadConfig::default());
    assert_eq!(config.max_concurrent(), 25);
    assert_eq!(config.max_wait(), Duration::ZERO);
}

#[test]
fn configs_default_is_over_the_built_in_defaults() {
    let layers = layers("[bulkhead.configs.default]\nmax_wait = \"10ms\"", &[]);
    let config = resolve(&layers, BulkheadConfig::builder());
    assert_eq!(config.max_wait(), Duration::from_millis(10));
    assert_eq!(config.max_concurrent(), 25, "a key default leaves alone");
}

#[test]
fn the_chosen_config_is_over_configs_default() {
    let layers = layers(
        "[bulkhead.configs.default]\nmax_concurrent = 5\nmax_wait = \"10ms\"\n\
         [bulkhead.configs.slow]\nmax_concurrent = 3",
        &[],
    );
    let config = resolve(&layers, BulkheadConfig::builder().config("slow"));
    assert_eq!(config.max_concurrent(), 3);
    assert_eq!(config.max_wait(), Duration::from_millis(10));
    let unnamed = resolve(&layers, BulkheadConfig::builder());
    assert_eq!(unnamed.max_concurrent(), 5);
}

#[test]
fn values_given_in_code_are_over_the_chosen_config() {
    let layers = layers(
        "[bulkhead.configs.slow]\nmax_concurrent = 3\nenabled = false",
        &[],
    );
    let spec = BulkheadConfig::builder().config("slow").max_concurrent(7);
    let config = resolve(&layers, spec);
    assert_eq!(config.max_concurrent(), 7);
    assert!(!config.enabled(), "a key code leaves alone");
}

#[test]
fn instances_are_over_the_values_given_in_code() {
    let layers = layers(
        &format!(
            "[bulkhead.instances.{ID}]\nmax_concurrent = 9\n[bulkhead.configs.slow]\nmax_wait = \"1s\""
        ),
        &[],
    );
    let spec = BulkheadConfig::builder().config("slow").max_concurrent(7);
    let config = resolve(&layers, spec);
    assert_eq!(config.max_concurrent(), 9);
    assert_eq!(config.max_wait(), Duration::from_secs(1));
}

#[test]
fn an_instance_base_config_replaces_the_one_code_chose() {
    let layers = layers(
        &format!(
            "[bulkhead.configs.slow]\nmax_concurrent = 3\n[bulkhead.configs.fast]\nmax_concurrent = 30\n\
             [bulkhead.instances.{ID}]\nbase_config = \"fast\""
        ),
        &[],
    );
    let config = resolve(&layers, BulkheadConfig::builder().config("slow"));
    assert_eq!(config.max_concurrent(), 30);
}

#[test]
fn a_base_config_that_names_nothing_has_the_code_of_its_key() {
    for value in ["\"\"", "3"] {
        let toml = format!("[bulkhead.instances.{ID}]\nbase_config = {value}");
        let setting = &from_toml(&toml, "TOML").unwrap()[0];
        let err = Layers::<Bulkhead>::default().apply(setting).unwrap_err();
        assert_eq!(err.code(), bulkhead_core::keys::BASE_CONFIG.code(), "{err}");
    }
}

#[test]
fn at_each_level_the_environment_comes_after_toml_and_code() {
    let layers = layers(
        &format!(
            "[bulkhead.configs.default]\nmax_wait = \"1s\"\n[bulkhead.instances.{ID}]\nmax_concurrent = 9"
        ),
        &[
            ("APP_BULKHEAD__CONFIGS__DEFAULT__MAX_WAIT", "2s"),
            (
                "APP_BULKHEAD__INSTANCES__SHOP_THUMBS_RESIZE__MAX_CONCURRENT",
                "11",
            ),
        ],
    );
    let config = resolve(
        &layers,
        BulkheadConfig::builder().max_wait(Duration::from_secs(3)),
    );
    assert_eq!(config.max_concurrent(), 11);
    // Code is above every config, the environment's included.
    assert_eq!(config.max_wait(), Duration::from_secs(3));
    let config = resolve(&layers, BulkheadConfig::builder());
    assert_eq!(config.max_wait(), Duration::from_secs(2));
}

#[test]
fn a_config_nobody_defined_is_reg_004_naming_the_known_ones() {
    let layers = layers("[bulkhead.configs.slow]\nmax_concurrent = 3", &[]);
    let err = layers
        .resolve("x", &BulkheadConfig::builder().config("slo"))
        .unwrap_err();
    assert_eq!(err.code(), "REG-004");
    assert!(
        err.to_string().contains("known configs: default, slow"),
        "{err}"
    );
}

#[test]
fn a_reload_whose_variables_would_match_two_live_ids_is_cfg_004() {
    let store = Store::<Bulkhead>::new(Layers::default());
    let context = PolicyContext::new(Arc::new(SystemClock));
    for id in ["a-b", "a.b"] {
        store
            .declare(1, &context, id, "t", &Default::default())
            .unwrap();
    }
    store.register(store.take(1));
    let variable = "APP_BULKHEAD__INSTANCES__A_B__MAX_CONCURRENT";
    let mut layers = Layers::default();
    for setting in from_env("APP_", [(variable.into(), "3".into())]).unwrap() {
        layers.apply(&setting).unwrap();
    }
    let err = store.plan(&layers).unwrap_err();
    assert_eq!(err.code(), "CFG-004");
    assert!(err.to_string().contains("\"a-b\""), "{err}");
    assert!(err.to_string().contains("\"a.b\""), "{err}");
}
