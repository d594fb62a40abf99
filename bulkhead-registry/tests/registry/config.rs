//! Configuration from outside the code (`docs/configuration.md`): TOML, files and
//! environment variables, the precedence table case by case, every coded
//! error, and run-time changes.

use std::time::Duration;

use bulkhead_core::{BulkheadConfig, BulkheadEventKind, Event, ManualClock};
use bulkhead_registry::{Pipeline, Registry, RegistryError};

fn spec() -> bulkhead_core::BulkheadConfigBuilder {
    BulkheadConfig::builder()
}

fn toml(text: &str) -> Registry {
    Registry::builder().config_toml(text).unwrap().build()
}

fn limit(
    registry: &Registry,
    id: &str,
    spec: &bulkhead_core::BulkheadConfigBuilder,
) -> (u32, Duration) {
    let config = registry.bulkhead_policy(id, "test", spec).unwrap().config();
    (config.max_concurrent(), config.max_wait())
}

// ------------------------------------------------------------- precedence

const LAYERS: &str = r#"
[bulkhead.configs.default]
max_concurrent = 20
max_wait = "5ms"

[bulkhead.configs.slow]
max_concurrent = 3
max_wait = "2s"

[bulkhead.instances.tuned]
max_concurrent = 9

[bulkhead.instances.rebased]
base_config = "slow"
"#;

#[test]
fn with_nothing_configured_the_built_in_defaults_apply() {
    assert_eq!(limit(&toml(""), "plain", &spec()), (25, Duration::ZERO));
}

#[test]
fn configs_default_is_above_the_built_in_defaults() {
    assert_eq!(
        limit(&toml(LAYERS), "plain", &spec()),
        (20, Duration::from_millis(5))
    );
}

#[test]
fn the_named_config_is_above_configs_default() {
    let registry = toml(LAYERS);
    assert_eq!(
        limit(&registry, "named", &spec().config("slow")),
        (3, Duration::from_secs(2))
    );
}

#[test]
fn attribute_or_builder_values_are_above_the_named_config() {
    let registry = toml(LAYERS);
    let got = limit(
        &registry,
        "declared",
        &spec().config("slow").max_concurrent(5),
    );
    assert_eq!(got, (5, Duration::from_secs(2)));
}

#[test]
fn instance_values_are_above_attribute_or_builder_values() {
    let registry = toml(LAYERS);
    let got = limit(&registry, "tuned", &spec().config("slow").max_concurrent(5));
    assert_eq!(got, (9, Duration::from_secs(2)));
}

#[test]
fn an_instances_base_config_replaces_the_config_its_declaration_names() {
    let registry = Registry::builder()
        .config_toml(LAYERS)
        .unwrap()
        .bulkhead_config("fast", |b| b.max_concurrent(50))
        .build();
    assert_eq!(
        limit(&registry, "rebased", &spec().config("fast")),
        (3, Duration::from_secs(2))
    );
}

#[test]
fn environment_variables_are_above_toml_and_match_normalized_ids() {
    let registry = Registry::builder()
        .config_toml(LAYERS)
        .unwrap()
        .config_vars(
            "APP_",
            [
                (
                    "APP_BULKHEAD__INSTANCES__SHOP_THUMBS_RESIZE_STR_U32__MAX_CONCURRENT",
                    "7",
                ),
                ("APP_BULKHEAD__INSTANCES__TUNED__MAX_WAIT", "1m 30s"),
                ("APP_BULKHEAD__CONFIGS__SLOW__MAX_CONCURRENT", "4"),
                (
                    "OTHER_BULKHEAD__INSTANCES__TUNED__MAX_CONCURRENT",
                    "not mine",
                ),
            ],
        )
        .unwrap()
        .build();
    assert_eq!(
        limit(&registry, "shop::Thumbs#resize(&str, u32)", &spec()).0,
        7
    );
    assert_eq!(
        limit(&registry, "tuned", &spec()),
        (9, Duration::from_secs(90))
    );
    assert_eq!(limit(&registry, "named", &spec().config("slow")).0, 4);
}

#[test]
fn later_sources_override_earlier_ones_key_by_key() {
    let registry = Registry::builder()
        .config_toml("[bulkhead.configs.default]\nmax_concurrent = 1\nmax_wait = \"1s\"")
        .unwrap()
        .config_toml("[bulkhead.configs.default]\nmax_concurrent = 2")
        .unwrap()
        .build();
    assert_eq!(limit(&registry, "x", &spec()), (2, Duration::from_secs(1)));
}

#[test]
fn every_policy_reads_its_own_keys() {
    let registry = toml(
        r#"
        [retry.instances.p]
        max_attempts = 5
        wait = "20ms"
        abort_on = ["BulkheadFull", "Timeout"]
        [circuit_breaker.instances.p]
        sliding_window = "time"
        failure_rate_threshold = 25.5
        ignore_on = ["RateLimited"]
        [timeout.instances.p]
        duration = "250ms"
        [rate_limiter.instances.p]
        limit_for_period = 7
        refresh_period = "1s"
        max_wait = "0"
        "#,
    );
    let pipeline = Pipeline::builder(&registry, "p")
        .retry(|r| r)
        .circuit_breaker(|c| c)
        .timeout(|t| t)
        .rate_limiter(|r| r)
        .build()
        .unwrap();
    let policies = pipeline.policies();
    let retry = policies.retry().unwrap().config();
    assert_eq!(
        (retry.max_attempts(), retry.wait()),
        (5, Duration::from_millis(20))
    );
    assert_eq!(retry.abort_on().to_string(), "[BulkheadFull, Timeout]");
    let breaker = policies.circuit_breaker().unwrap().config();
    assert_eq!(breaker.sliding_window(), bulkhead_core::SlidingWindow::Time);
    assert_eq!(breaker.failure_rate_threshold(), 25.5);
    assert_eq!(
        policies.timeout().unwrap().duration(),
        Duration::from_millis(250)
    );
    let limiter = policies.rate_limiter().unwrap().config();
    assert_eq!(
        (limiter.limit_for_period(), limiter.max_wait()),
        (7, Duration::ZERO)
    );
}

// ----------------------------------------------------------------- errors

fn toml_error(text: &str) -> RegistryError {
    Registry::builder().config_toml(text).unwrap_err()
}

#[test]
fn a_bad_duration_is_atr_001_naming_the_full_key_and_the_value() {
    let err = toml_error("[bulkhead.instances.thumbnails]\nmax_wait = \"25Oms\"");
    assert_eq!(err.code(), "ATR-001");
    let message = err.to_string();
    assert!(
        message.starts_with(
            "ATR-001: invalid duration \"25Oms\" for bulkhead.instances.thumbnails.max_wait"
        ),
        "{message}"
    );
}

#[test]
fn a_duration_past_duration_max_is_atr_001_too_large_from_every_source_and_key() {
    // humantime alone panics on these: the nanoseconds carry exactly one
    // second onto u64::MAX seconds.
    let values = [
        "18446744073709551615s 1000ms",
        "18446744073709551615s 999999999ns 1ns",
    ];
    let keys = [
        ("bulkhead", "max_wait"),
        ("retry", "wait"),
        ("retry", "max_wait_interval"),
        ("circuit_breaker", "wait_in_open"),
        ("circuit_breaker", "slow_call_threshold"),
        ("rate_limiter", "refresh_period"),
        ("rate_limiter", "max_wait"),
        ("timeout", "duration"),
    ];
    let too_large = |err: &RegistryError, value: &str, key: &str| {
        assert_eq!(err.code(), "ATR-001", "{err}");
        let message = err.to_string();
        assert!(
            message.starts_with(&format!(
                "ATR-001: invalid duration {value:?} for {key}: the duration is too large"
            )),
            "{message}"
        );
    };
    for value in values {
        assert_eq!(
            bulkhead_core::parse_duration("max_wait", value).map_err(|e| e.code()),
            Err("ATR-001")
        );
        for (policy, key) in keys {
            let err = toml_error(&format!("[{policy}.instances.x]\n{key} = {value:?}"));
            too_large(&err, value, &format!("{policy}.instances.x.{key}"));

            let var = format!("APP_{policy}__CONFIGS__X__{key}").to_uppercase();
            let err = Registry::builder()
                .config_vars("APP_", [(var.as_str(), value)])
                .unwrap_err();
            too_large(&err, value, &var);

            let registry = Registry::new();
            let err = registry
                .reload_toml(&format!("[{policy}.configs.default]\n{key} = {value:?}"))
                .unwrap_err();
            too_large(&err, value, &format!("{policy}.configs.default.{key}"));
        }
    }
}

#[test]
fn a_bad_limit_is_atr_003_naming_the_full_key_and_the_value() {
    for value in ["0", "-3", "\"many\"", "2147483648", "1.5"] {
        let err = toml_error(&format!(
            "[bulkhead.configs.slow]\nmax_concurrent = {value}"
        ));
        assert_eq!(err.code(), "ATR-003", "{value}");
        assert!(
            err.to_string()
                .contains("bulkhead.configs.slow.max_concurrent"),
            "{err}"
        );
    }
}

#[test]
fn a_bad_boolean_is_atr_006() {
    let err = toml_error("[bulkhead.configs.default]\nenabled = \"yes\"");
    assert_eq!(err.code(), "ATR-006");
    assert!(
        err.to_string().contains("bulkhead.configs.default.enabled"),
        "{err}"
    );
}

#[test]
fn other_bad_values_have_their_codes_too() {
    let cases = [
        ("[retry.configs.x]\nmax_attempts = 0", "ATR-008"),
        ("[retry.configs.x]\njitter = 2.0", "ATR-008"),
        ("[retry.configs.x]\nabort_on = [\"BulkheadFul\"]", "ATR-009"),
        (
            "[circuit_breaker.configs.x]\nsliding_window = \"counted\"",
            "ATR-010",
        ),
        (
            "[circuit_breaker.configs.x]\nfailure_rate_threshold = 0",
            "ATR-008",
        ),
        ("[timeout.configs.x]\nduration = \"0\"", "ATR-008"),
        (
            "[rate_limiter.configs.x]\nrefresh_period = \"soon\"",
            "ATR-001",
        ),
    ];
    for (text, code) in cases {
        assert_eq!(toml_error(text).code(), code, "{text}");
    }
}

#[test]
fn zero_waits_and_caps_and_a_jitter_of_one_are_atr_008_from_every_source() {
    let cases = [
        ("circuit_breaker", "wait_in_open", "\"0s\"", "0s"),
        ("circuit_breaker", "slow_call_threshold", "\"0\"", "0s"),
        ("retry", "max_wait_interval", "\"0ms\"", "0s"),
        ("retry", "jitter", "1", "1"),
        ("retry", "jitter", "1.0", "1"),
    ];
    for (policy, key, value, shown) in cases {
        for section in ["configs", "instances"] {
            let err = toml_error(&format!("[{policy}.{section}.x]\n{key} = {value}"));
            assert_eq!(
                err.code(),
                "ATR-008",
                "{policy}.{section}.x.{key} = {value}"
            );
            let message = err.to_string();
            assert!(
                message.starts_with(&format!("ATR-008: {policy}.{section}.x.{key} must be"))
                    && message.ends_with(&format!(", got {shown}")),
                "{message}"
            );
        }
    }
    for (var, value) in [
        ("APP_CIRCUIT_BREAKER__INSTANCES__X__WAIT_IN_OPEN", "0"),
        (
            "APP_CIRCUIT_BREAKER__CONFIGS__X__SLOW_CALL_THRESHOLD",
            "0ms",
        ),
        ("APP_RETRY__INSTANCES__X__MAX_WAIT_INTERVAL", "0s"),
        ("APP_RETRY__CONFIGS__X__JITTER", "1"),
    ] {
        let err = Registry::builder()
            .config_vars("APP_", [(var, value)])
            .unwrap_err();
        assert_eq!(err.code(), "ATR-008", "{var}");
        assert!(err.to_string().contains(var), "{err}");
    }
    let registry = Registry::new();
    let zero = Duration::ZERO;
    let built = [
        Pipeline::builder(&registry, "open-wait")
            .circuit_breaker(|c| c.wait_in_open(zero))
            .build(),
        Pipeline::builder(&registry, "slow-threshold")
            .circuit_breaker(|c| c.slow_call_threshold(zero))
            .build(),
        Pipeline::builder(&registry, "cap")
            .retry(|r| r.max_wait_interval(zero))
            .build(),
        Pipeline::builder(&registry, "jitter")
            .retry(|r| r.jitter(1.0))
            .build(),
    ];
    for result in built {
        assert_eq!(result.err().map(|e| e.code()), Some("ATR-008"));
    }
}

#[test]
fn a_rejection_kind_listed_twice_is_atr_009_naming_the_key_from_every_source() {
    for (policy, key) in [
        ("retry", "abort_on"),
        ("circuit_breaker", "ignore_on"),
        ("fallback", "on"),
    ] {
        for section in ["instances", "configs"] {
            let message = |key: &str| {
                format!("ATR-009: {key} lists \"Timeout\" twice; list each rejection kind once")
            };
            let err = toml_error(&format!(
                "[{policy}.{section}.x]\n{key} = [\"Timeout\", \"Timeout\"]"
            ));
            assert_eq!(
                err.to_string(),
                message(&format!("{policy}.{section}.x.{key}"))
            );
            let var = format!("APP_{policy}__{section}__X__{key}").to_uppercase();
            let err = Registry::builder()
                .config_vars("APP_", [(var.as_str(), "Timeout, Timeout")])
                .unwrap_err();
            assert_eq!(err.to_string(), message(&var));
            let err = Registry::new()
                .reload_toml(&format!(
                    "[{policy}.{section}.x]\n{key} = \"Timeout,Timeout\""
                ))
                .unwrap_err();
            assert_eq!(err.code(), "ATR-009", "{err}");
        }
    }
}

#[test]
fn a_rejection_kind_is_written_alone_or_as_rejection_kind_in_configuration_too() {
    let registry = toml(
        r#"
        [retry.instances.r]
        abort_on = ["RejectionKind::BulkheadFull", "bulkhead::RejectionKind::Timeout"]
        "#,
    );
    let pipeline = Pipeline::builder(&registry, "r")
        .retry(|r| r)
        .build()
        .unwrap();
    let retry = pipeline.policies().retry().unwrap().config();
    assert_eq!(retry.abort_on().to_string(), "[BulkheadFull, Timeout]");
    let err = toml_error("[retry.instances.r]\nabort_on = [\"Rejection::Timeout\"]");
    assert_eq!(err.code(), "ATR-009", "{err}");
    let err =
        toml_error("[retry.instances.r]\nabort_on = [\"Timeout\", \"RejectionKind::Timeout\"]");
    assert!(err.to_string().contains("lists \"Timeout\" twice"), "{err}");
}

#[test]
fn an_unknown_key_is_cfg_001_with_a_did_you_mean() {
    let err = toml_error("[bulkhead.instances.thumbnails]\nmax_concurent = 4");
    assert_eq!(err.code(), "CFG-001");
    assert_eq!(
        err.to_string(),
        "CFG-001: unknown configuration key bulkhead.instances.thumbnails.max_concurent; did you mean \"max_concurrent\"?"
    );
    assert_eq!(
        toml_error("[bulkhed.configs.x]\nmax_wait = \"1s\"").to_string(),
        "CFG-001: unknown configuration key bulkhed; did you mean \"bulkhead\"?"
    );
    assert_eq!(
        toml_error("[bulkhead.instance.x]\nmax_wait = \"1s\"").code(),
        "CFG-001"
    );
    assert_eq!(
        toml_error("[bulkhead.configs.x]\nbase_config = \"y\"").code(),
        "CFG-001",
        "base_config belongs to instances"
    );
    assert!(
        toml_error("[retry.instances.x]\nbase_confg = \"y\"")
            .to_string()
            .ends_with("did you mean \"base_config\"?"),
        "an instance's keys include base_config"
    );
}

#[test]
fn malformed_sources_are_cfg_002_and_unreadable_files_cfg_003() {
    assert_eq!(toml_error("[bulkhead").code(), "CFG-002");
    assert_eq!(toml_error("bulkhead = 3").code(), "CFG-002");
    assert_eq!(toml_error("[bulkhead.instances]\nx = 3").code(), "CFG-002");
    let err = Registry::builder()
        .config_vars("APP_", [("APP_BULKHEAD__X", "1")])
        .unwrap_err();
    assert_eq!(err.code(), "CFG-002");
    assert!(err.to_string().contains("APP_BULKHEAD__X"), "{err}");
    // Without `__` or a policy's name a variable is someone else's ...
    let registry = Registry::builder()
        .config_vars("APP_", [("APP_LOG", "debug")])
        .unwrap()
        .build();
    assert!(registry.bulkhead_policy("x", "t", &spec()).is_ok());
    // ... but one that starts with a policy's name is a typo of ours.
    let err = Registry::builder()
        .config_vars("APP_", [("APP_BULKHEAD_MAX_CONCURRENT", "3")])
        .unwrap_err();
    assert_eq!(err.code(), "CFG-002");
    assert!(
        err.to_string().contains("APP_BULKHEAD_MAX_CONCURRENT"),
        "{err}"
    );
    let err = Registry::builder()
        .config_vars(
            "APP_",
            [("APP_BULKHEAD__INSTANCES__X__MAX_CONCURRENT", "zero")],
        )
        .unwrap_err();
    assert_eq!(err.code(), "ATR-003");
    assert!(
        err.to_string()
            .contains("APP_BULKHEAD__INSTANCES__X__MAX_CONCURRENT"),
        "{err}"
    );
    let err = Registry::builder()
        .config_file("/nonexistent/bulkhead.toml")
        .unwrap_err();
    assert_eq!(err.code(), "CFG-003");
}

#[test]
fn a_variable_whose_name_part_normalizes_to_nothing_is_cfg_002() {
    // `ÄÖ` has no ASCII letter or digit: it normalized to nothing and set
    // the limit of every id without one (`ÄÖ`, `缩略图`, `日本`).
    let err = Registry::builder()
        .config_vars(
            "BULKHEAD_",
            [("BULKHEAD_BULKHEAD__INSTANCES__ÄÖ__MAX_CONCURRENT", "1")],
        )
        .unwrap_err();
    assert_eq!(err.code(), "CFG-002");
    assert!(
        err.to_string()
            .contains("BULKHEAD_BULKHEAD__INSTANCES__ÄÖ__MAX_CONCURRENT"),
        "{err}"
    );
    assert!(
        err.to_string().contains("no ASCII letter or digit"),
        "{err}"
    );
    let err = Registry::builder()
        .config_vars("APP_", [("APP_BULKHEAD__CONFIGS__--__MAX_WAIT", "1s")])
        .unwrap_err();
    assert_eq!(err.code(), "CFG-002");

    // Such ids are set by their exact name in TOML, and only there.
    let registry = Registry::builder()
        .config_toml("[bulkhead.instances.\"ÄÖ\"]\nmax_concurrent = 1")
        .unwrap()
        .config_vars(
            "APP_",
            [("APP_BULKHEAD__INSTANCES__X__MAX_CONCURRENT", "2")],
        )
        .unwrap()
        .build();
    assert_eq!(limit(&registry, "ÄÖ", &spec()).0, 1);
    assert_eq!(limit(&registry, "缩略图", &spec()).0, 25);
    assert_eq!(limit(&registry, "日本", &spec()).0, 25);
}

#[test]
fn an_empty_name_in_toml_is_cfg_002() {
    for text in [
        "[bulkhead.instances.\"\"]\nmax_concurrent = 1",
        "[retry.configs.\"\"]\nmax_attempts = 2",
    ] {
        let err = toml_error(text);
        assert_eq!(err.code(), "CFG-002", "{text}: {err}");
        assert!(err.to_string().contains("empty name"), "{err}");
    }
}

#[test]
fn two_ids_one_variable_matches_are_cfg_004_naming_both() {
    let vars = [(
        "APP_BULKHEAD__INSTANCES__THUMBNAILS_ASYNC__MAX_CONCURRENT",
        "3",
    )];
    let registry = Registry::builder()
        .config_vars("APP_", vars)
        .unwrap()
        .build();
    // Matched as the ids are declared: the first is the variable's ...
    assert_eq!(limit(&registry, "thumbnails-async", &spec()).0, 3);
    // ... and a second one of the same normalized form is refused.
    let err = registry
        .bulkhead_policy("thumbnails.async", "test", &spec())
        .unwrap_err();
    assert_eq!(err.code(), "CFG-004");
    let message = err.to_string();
    assert!(
        message.contains("bulkhead.instances.THUMBNAILS_ASYNC")
            && message.contains("\"thumbnails-async\"")
            && message.contains("\"thumbnails.async\""),
        "{message}"
    );
    assert!(
        registry.bulkhead("thumbnails.async").is_err(),
        "not created"
    );

    // The same within one batch, and for another kind of policy.
    let registry = Registry::builder()
        .config_vars("APP_", [("APP_RETRY__INSTANCES__A_B__MAX_ATTEMPTS", "5")])
        .unwrap()
        .build();
    let mut batch = registry.declare();
    batch
        .retry("a-b", "test", &bulkhead_core::RetryConfig::builder())
        .unwrap();
    let err = batch
        .retry("A b", "test", &bulkhead_core::RetryConfig::builder())
        .unwrap_err();
    assert_eq!(err.code(), "CFG-004", "{err}");
    drop(batch);

    // Without a variable for that form, ids that normalize alike are fine.
    let registry = Registry::new();
    assert!(registry.bulkhead_policy("a-b", "t", &spec()).is_ok());
    assert!(registry.bulkhead_policy("a.b", "t", &spec()).is_ok());
}

#[test]
fn two_config_names_one_variable_matches_are_cfg_004() {
    let vars = [("APP_BULKHEAD__CONFIGS__SLOW_X__MAX_CONCURRENT", "2")];
    // Both named in TOML: found when the registry is built.
    let err = Registry::builder()
        .config_toml(
            "[bulkhead.configs.slow-x]\nmax_wait = \"1s\"\n[bulkhead.configs.\"slow.x\"]\nmax_wait = \"2s\"",
        )
        .unwrap()
        .config_vars("APP_", vars)
        .unwrap()
        .try_build()
        .unwrap_err();
    assert_eq!(err.code(), "CFG-004");
    assert!(err.to_string().contains("bulkhead.configs.SLOW_X"), "{err}");

    // One in TOML, one named by a declaration: found at the declaration.
    let registry = Registry::builder()
        .config_toml("[bulkhead.configs.slow-x]\nmax_wait = \"1s\"")
        .unwrap()
        .config_vars("APP_", vars)
        .unwrap()
        .build();
    assert_eq!(
        limit(&registry, "a", &spec().config("slow-x")),
        (2, Duration::from_secs(1))
    );
    let err = registry
        .bulkhead_policy("b", "test", &spec().config("slow.x"))
        .unwrap_err();
    assert_eq!(err.code(), "CFG-004");
    assert!(
        err.to_string().contains("\"slow-x\"") && err.to_string().contains("\"slow.x\""),
        "{err}"
    );

    // Both named only by declarations.
    let registry = Registry::builder()
        .config_vars("APP_", vars)
        .unwrap()
        .build();
    assert_eq!(limit(&registry, "a", &spec().config("slow-x")).0, 2);
    let err = registry
        .bulkhead_policy("b", "test", &spec().config("slow.x"))
        .unwrap_err();
    assert_eq!(err.code(), "CFG-004");

    // A reload that would make the variable ambiguous changes nothing.
    let registry = Registry::builder()
        .config_toml("[bulkhead.configs.slow-x]\nmax_wait = \"1s\"")
        .unwrap()
        .config_vars("APP_", vars)
        .unwrap()
        .build();
    assert_eq!(limit(&registry, "a", &spec().config("slow-x")).0, 2);
    let err = registry
        .reload_toml(
            "[bulkhead.configs.slow-x]\nmax_wait = \"1s\"\n[bulkhead.configs.\"slow.x\"]\nmax_concurrent = 9",
        )
        .unwrap_err();
    assert_eq!(err.code(), "CFG-004");
    assert_eq!(registry.bulkhead("a").unwrap().max_concurrent(), 2);
}

#[test]
fn an_unknown_base_config_is_reg_004_at_build_or_at_declaration() {
    let text = "[bulkhead.instances.x]\nbase_config = \"nope\"";
    let err = Registry::builder()
        .config_toml(text)
        .unwrap()
        .try_build()
        .unwrap_err();
    assert_eq!(err.code(), "REG-004");
    let registry = toml(text);
    assert_eq!(
        registry
            .bulkhead_policy("x", "t", &spec())
            .unwrap_err()
            .code(),
        "REG-004"
    );
}

#[test]
fn try_build_checks_configs_given_in_code_too() {
    let err = Registry::builder()
        .bulkhead_config("broken", |b| b.max_concurrent(0))
        .try_build()
        .unwrap_err();
    assert_eq!(err.code(), "ATR-003");
    assert!(
        err.to_string()
            .contains("bulkhead.configs.broken.max_concurrent"),
        "{err}"
    );
}

// ---------------------------------------------------------------- run time

#[test]
fn a_reload_changes_a_live_bulkheads_limit_and_reports_what_else_it_could_not() {
    let dir = std::env::temp_dir().join(format!("bulkhead-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bulkhead.toml");
    std::fs::write(&file, "[bulkhead.instances.reports]\nmax_concurrent = 2\n").unwrap();
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .config_file(&file)
        .unwrap()
        .build();
    let mut events = registry.subscribe();
    let reports = Pipeline::builder(&registry, "reports")
        .bulkhead(|b| b)
        .build()
        .unwrap();
    let handle = registry.bulkhead("reports").unwrap();
    assert_eq!(handle.max_concurrent(), 2);
    let held: Vec<_> = (0..2)
        .map(|_| handle.bulkhead().try_enter().unwrap())
        .collect();
    assert!(reports.execute(|| Ok::<_, ()>(())).is_err());

    std::fs::write(
        &file,
        "[bulkhead.instances.reports]\nmax_concurrent = 3\nmax_wait = \"1s\"\n",
    )
    .unwrap();
    let changes = registry.reload().unwrap();
    assert_eq!(changes.len(), 1);
    assert!(
        !changes[0].applied,
        "max_wait cannot change live: {changes:?}"
    );
    assert_eq!(handle.max_concurrent(), 3, "the limit changed at once");
    assert_eq!(reports.execute(|| Ok::<_, ()>("through")), Ok("through"));
    let changed = events.drain().find_map(|e| match e {
        Event::Bulkhead(b) => match b.kind {
            BulkheadEventKind::LimitChanged { from, to } => Some((from, to)),
            _ => None,
        },
        _ => None,
    });
    assert_eq!(changed, Some((2, 3)));
    drop(held);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_reload_puts_back_a_limit_changed_at_run_time() {
    let registry = toml("[bulkhead.instances.x]\nmax_concurrent = 5");
    registry.bulkhead_policy("x", "t", &spec()).unwrap();
    let handle = registry.bulkhead("x").unwrap();
    handle.set_max_concurrent(50).unwrap();
    let changes = registry
        .reload_toml("[bulkhead.instances.x]\nmax_concurrent = 5")
        .unwrap();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert!(
        changes[0].from.contains("max_concurrent = 50"),
        "{changes:?}"
    );
    assert!(changes[0].applied);
    assert_eq!(handle.max_concurrent(), 5);
}

#[test]
fn a_change_that_cannot_apply_live_is_listed_while_the_instance_differs() {
    let registry = toml("[bulkhead.instances.x]\nmax_wait = \"1s\"");
    registry.bulkhead_policy("x", "t", &spec()).unwrap();
    let changes = registry
        .reload_toml("[bulkhead.instances.x]\nmax_wait = \"2s\"")
        .unwrap();
    assert!(!changes[0].applied, "{changes:?}");
    // Still running with 1s: a later reload says so again ...
    let again = registry
        .reload_toml("[bulkhead.instances.x]\nmax_wait = \"2s\"")
        .unwrap();
    assert_eq!(again.len(), 1, "{again:?}");
    assert!(!again[0].applied);
    // ... and going back to 1s is no change at all.
    let back = registry
        .reload_toml("[bulkhead.instances.x]\nmax_wait = \"1s\"")
        .unwrap();
    assert!(back.is_empty(), "{back:?}");
}

#[test]
fn a_reload_reports_key_by_key_what_took_effect_live_and_what_did_not() {
    // The issue's case: an adaptive bulkhead whose reload changes both the
    // algorithm (fixed when the bulkhead is made) and the ceiling (live).
    let registry = toml(
        "[bulkhead.instances.search]\nadaptive = \"gradient2\"\nmax_concurrent = 200\nmax_wait = \"1s\"",
    );
    registry.bulkhead_policy("search", "t", &spec()).unwrap();
    let handle = registry.bulkhead("search").unwrap();
    let changes = registry
        .reload_toml(
            "[bulkhead.instances.search]\nadaptive = \"vegas\"\nmax_concurrent = 100\nmax_wait = \"1s\"",
        )
        .unwrap();
    assert_eq!(changes.len(), 1, "{changes:?}");
    let change = &changes[0];
    assert!(!change.applied, "not all of it took effect: {change:?}");
    let keys: Vec<_> = change
        .keys
        .iter()
        .map(|k| (k.key, k.from.as_str(), k.to.as_str(), k.applied))
        .collect();
    assert_eq!(
        keys,
        [
            ("max_concurrent", "200", "100", true),
            ("adaptive", "gradient2", "vegas", false),
        ],
        "only the changed keys, each saying whether it took effect"
    );
    assert_eq!(handle.snapshot().adaptive.unwrap().ceiling, 100, "it did");
    assert_eq!(change.key("max_concurrent").map(|k| k.applied), Some(true));
    let pending: Vec<_> = change.pending_keys().map(|k| k.key).collect();
    assert_eq!(pending, ["adaptive"]);
    // The next reload lists only what still differs: the algorithm.
    let again = registry
        .reload_toml(
            "[bulkhead.instances.search]\nadaptive = \"vegas\"\nmax_concurrent = 100\nmax_wait = \"1s\"",
        )
        .unwrap();
    let keys: Vec<_> = again[0].keys.iter().map(|k| (k.key, k.applied)).collect();
    assert_eq!(keys, [("adaptive", false)], "{again:?}");
}

#[test]
fn a_change_applied_in_full_has_every_key_applied() {
    let registry = toml("[bulkhead.instances.x]\nmax_concurrent = 5");
    registry.bulkhead_policy("x", "t", &spec()).unwrap();
    let changes = registry
        .reload_toml("[bulkhead.instances.x]\nmax_concurrent = 7\nreserved = 3")
        .unwrap();
    assert!(changes[0].applied, "{changes:?}");
    let keys: Vec<_> = changes[0]
        .keys
        .iter()
        .map(|k| (k.key, k.from.as_str(), k.to.as_str(), k.applied))
        .collect();
    assert_eq!(
        keys,
        [
            ("max_concurrent", "5", "7", true),
            ("reserved", "none", "3", true)
        ]
    );
    assert_eq!(changes[0].pending_keys().count(), 0);
}

#[test]
fn a_reload_checks_overrides_of_instances_not_declared_yet() {
    let registry = Registry::new();
    let err = registry
        .reload_toml("[bulkhead.instances.future]\nbase_config = \"nope\"")
        .unwrap_err();
    assert_eq!(err.code(), "REG-004");
    let err = registry
        .reload_toml("[bulkhead.configs.slow]\nmax_concurrent = 0")
        .unwrap_err();
    assert_eq!(err.code(), "ATR-003");
}

#[test]
fn a_reload_with_a_bad_value_changes_nothing() {
    let registry = toml("[bulkhead.instances.x]\nmax_concurrent = 2");
    registry.bulkhead_policy("x", "t", &spec()).unwrap();
    let err = registry
        .reload_toml("[bulkhead.instances.x]\nmax_concurrent = 0")
        .unwrap_err();
    assert_eq!(err.code(), "ATR-003");
    assert_eq!(registry.bulkhead("x").unwrap().max_concurrent(), 2);
    let changes = registry
        .reload_toml("[bulkhead.instances.x]\nmax_concurrent = 4")
        .unwrap();
    assert!(changes[0].applied);
    assert_eq!(registry.bulkhead("x").unwrap().max_concurrent(), 4);
}

#[test]
fn after_a_reload_declarations_are_checked_against_the_new_configuration() {
    let registry = toml("[bulkhead.instances.x]\nmax_concurrent = 2");
    registry.bulkhead_policy("x", "first", &spec()).unwrap();
    registry
        .reload_toml("[bulkhead.instances.x]\nmax_concurrent = 6")
        .unwrap();
    // A new declaration resolves under the new configuration: no REG-008.
    assert_eq!(
        registry
            .bulkhead_policy("x", "second", &spec())
            .unwrap()
            .max_concurrent(),
        6
    );
}

#[test]
fn a_reload_that_names_a_base_config_with_the_same_values_is_listed_once() {
    let text = "[bulkhead.configs.slow]\nmax_concurrent = 3\n[bulkhead.instances.x]\nbase_config = \"slow\"";
    let registry = toml("[bulkhead.configs.slow]\nmax_concurrent = 3");
    registry
        .bulkhead_policy("x", "t", &BulkheadConfig::builder().max_concurrent(3))
        .unwrap();
    registry.reload_toml(text).unwrap();
    let again = registry.reload_toml(text).unwrap();
    assert!(again.is_empty(), "nothing changed: {again:?}");
}

#[test]
fn hedge_fallback_and_retry_budget_keys_are_configuration_like_any_other() {
    let registry = toml(
        r#"
        [hedge.configs.default]
        max_hedged = 3
        delay = "40ms"

        [retry.instances.configured]
        budget_ratio = 0.1
        budget_min_per_second = 2
        budget_window = "30s"

        [fallback.instances.configured]
        on = ["Timeout"]
        on_error = true
        "#,
    );
    let pipeline = Pipeline::builder(&registry, "configured")
        .hedge(|h| h.max_hedged(2))
        .retry(|r| r)
        .build()
        .unwrap();
    let hedge = pipeline.policies().hedge().unwrap().config();
    assert_eq!(
        (hedge.max_hedged(), hedge.delay()),
        (
            2,
            bulkhead_core::HedgeDelay::Fixed(Duration::from_millis(40))
        ),
        "the builder's value over the default config's"
    );
    let retry = registry.retry("configured").unwrap().snapshot();
    assert_eq!(retry.budget_ratio, Some(0.1));
    assert_eq!(retry.budget_min_per_second, 2);
    assert_eq!(retry.budget_window, Duration::from_secs(30));
    let mut declarations = registry.declare();
    let policies = declarations
        .policies(
            &bulkhead_registry::PolicySpecs::new("configured")
                .fallback(None, bulkhead_core::FallbackConfig::builder()),
        )
        .unwrap();
    declarations.commit();
    let fallback = policies.fallback().unwrap().config();
    assert!(fallback.on_error());
    assert_eq!(fallback.on().to_string(), "[Timeout]");
}

#[test]
fn bad_values_of_the_new_keys_are_coded_and_the_method_is_no_configuration() {
    let err = toml_error("[hedge.configs.default]\nmax_hedged = 11");
    assert_eq!(err.code(), "ATR-008");
    assert!(
        err.to_string().contains("hedge.configs.default.max_hedged"),
        "{err}"
    );
    let err = toml_error("[retry.configs.default]\nbudget_ratio = -1");
    assert_eq!(err.code(), "ATR-008");
    let err = toml_error("[retry.configs.default]\nbudget_window = \"0s\"");
    assert_eq!(err.code(), "ATR-008");
    let err = toml_error("[fallback.configs.default]\non = [\"Everything\"]");
    assert_eq!(err.code(), "ATR-009");
    let err = toml_error("[fallback.configs.default]\nmethod = \"cached\"");
    assert_eq!(err.code(), "CFG-001", "a method is code: {err}");
}

#[test]
fn a_reservation_is_checked_against_the_limit_of_every_layer_laid() {
    // configs.default gives the limit that makes an instance's reservation
    // fit: no layer is refused on its own.
    let text =
        "[bulkhead.configs.default]\nmax_concurrent = 40\n[bulkhead.instances.a]\nreserved = 30\n";
    let registry = Registry::builder()
        .config_toml(text)
        .unwrap()
        .try_build()
        .unwrap();
    let config = registry
        .bulkhead_policy("a", "test", &spec())
        .unwrap()
        .config();
    assert_eq!((config.max_concurrent(), config.reserved()), (40, 30));
    // An attribute's lower limit makes it not fit: ATR-016 with the key,
    // when the instance is declared.
    let err = registry
        .bulkhead_policy("a", "other", &spec().max_concurrent(20))
        .unwrap_err();
    assert_eq!(err.code(), "ATR-016", "{err}");
    assert!(err.to_string().contains("reserved"), "{err}");
    // Nothing above the built-in 25: the same.
    let registry = toml("[bulkhead.instances.b]\nreserved = 30\n");
    let err = registry.bulkhead_policy("b", "test", &spec()).unwrap_err();
    assert_eq!(err.code(), "ATR-016", "{err}");
}

#[test]
fn min_attempt_time_comes_from_toml_and_the_environment_and_is_checked() {
    let registry = Registry::builder()
        .config_toml("[retry.instances.quick]\nmin_attempt_time = \"50ms\"")
        .unwrap()
        .config_vars(
            "APP_",
            [("APP_RETRY__INSTANCES__SLOW__MIN_ATTEMPT_TIME", "2s")],
        )
        .unwrap()
        .build();
    let min = |id: &str| {
        let pipeline = Pipeline::builder(&registry, id)
            .retry(|r| r)
            .build()
            .unwrap();
        pipeline
            .policies()
            .retry()
            .unwrap()
            .config()
            .min_attempt_time()
    };
    assert_eq!(min("quick"), Duration::from_millis(50));
    assert_eq!(min("slow"), Duration::from_secs(2));
    assert_eq!(min("other"), Duration::ZERO, "the default");
    let err = toml_error("[retry.configs.default]\nmin_attempt_time = \"soon\"");
    assert_eq!(err.code(), "ATR-001");
    assert!(err.to_string().contains("min_attempt_time"), "{err}");
}
