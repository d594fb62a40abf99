//! Property tests of the configuration parser: no input, however odd, makes
//! it panic; every refusal is a coded error; a duration is its parts' exact
//! sum, or ATR-001 when that is past `Duration::MAX`.
//!
//! `PROPTEST_CASES=100000 cargo test -p bulkhead-registry --release --test
//! registry fuzz_config::` runs a longer search than the default 256 cases
//! per property.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Waker};
use std::time::Duration;

use bulkhead_core::BulkheadConfig;
use bulkhead_core::keys::{BASE_CONFIG, PolicyKind, ValueKind};
use bulkhead_registry::{Pipeline, Registry, RegistryError};
use proptest::prelude::*;

const CODES: [&str; 19] = [
    "ATR-001", "ATR-003", "ATR-006", "ATR-008", "ATR-009", "ATR-010", "ATR-015", "ATR-017",
    "ATR-018", "ATR-019", "CFG-001", "CFG-002", "CFG-003", "REG-004", "REG-008", "REG-009",
    "REG-010", "REG-011", "REG-013",
];

fn coded(error: &RegistryError) -> bool {
    CODES.contains(&error.code()) && error.to_string().starts_with(error.code())
}

/// After a successful load, building and using the registry must not panic
/// either.
fn exercise(registry: Registry) {
    for (id, config) in [
        ("x", None),
        ("svc", Some("slow")),
        ("a.b-c#d", Some("default")),
    ] {
        let mut spec = BulkheadConfig::builder();
        if let Some(config) = config {
            spec = spec.config(config);
        }
        if let Err(e) = registry.bulkhead_policy(id, "fuzz", &spec) {
            assert!(coded(&e), "{e}");
        }
        // Every policy from the same configuration, and one call through
        // them, sync and async: a configured duration far in the future
        // (`"99999999999y"`) must not overflow a deadline. The call
        // succeeds at once, so nothing waits: the first call of a period
        // always has a rate-limiter permit.
        let name = config.unwrap_or("default");
        let pipeline = Pipeline::builder(&registry, format!("{id}/all"))
            .bulkhead(|b| b.config(name))
            .retry(|r| r.config(name))
            .circuit_breaker(|c| c.config(name))
            .rate_limiter(|r| r.config(name))
            .timeout(|t| t.config(name))
            .build();
        match pipeline {
            Ok(pipeline) => {
                let _ = pipeline.execute(|| Ok::<_, ()>(()));
                let call = pin!(pipeline.execute_async(|| async { Ok::<_, ()>(()) }));
                let _ = call.poll(&mut Context::from_waker(Waker::noop()));
            }
            Err(e) => assert!(coded(&e), "{e}"),
        }
    }
}

/// Policy names, mostly those of the policies.
fn policy() -> impl Strategy<Value = String> {
    let names = PolicyKind::ALL.map(PolicyKind::name).to_vec();
    prop_oneof![
        5 => prop::sample::select(names).prop_map(str::to_owned),
        1 => "[a-z_]{1,12}",
    ]
}

/// Config names and ids, often ones `exercise` uses.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("default".to_owned()),
        Just("slow".to_owned()),
        Just("x".to_owned()),
        Just("svc/all".to_owned()),
        "[a-z.#-]{1,8}",
    ]
}

/// Keys, mostly those configuration takes (of any policy).
fn key() -> impl Strategy<Value = String> {
    let mut keys: Vec<&str> = PolicyKind::ALL
        .into_iter()
        .flat_map(PolicyKind::all_keys)
        .filter(|key| key.origin().in_configuration())
        .map(|key| key.name())
        .collect();
    keys.sort_unstable();
    keys.dedup();
    assert!(keys.contains(&BASE_CONFIG.name()));
    prop_oneof![
        20 => prop::sample::select(keys).prop_map(str::to_owned),
        1 => "[a-z_]{1,16}",
    ]
}

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|x| format!("{x:?}")),
        any::<bool>().prop_map(|b| b.to_string()),
        "[0-9]{1,4}(ns|ms|s|m|h|d|y|x)?".prop_map(|s| format!("{s:?}")),
        "[0-9]{9,20}(s|y)".prop_map(|s| format!("{s:?}")),
        duration_near_max().prop_map(|(text, _)| format!("{text:?}")),
        "[ -~]{0,12}".prop_map(|s| format!("{s:?}")),
        Just("[\"BulkheadFull\", \"Timeout\"]".to_owned()),
        Just("[\"Nope\", 3]".to_owned()),
        Just("\"count\"".to_owned()),
        Just("\"time\"".to_owned()),
        Just("\"slow\"".to_owned()),
        Just("{ a = 1 }".to_owned()),
        Just("1979-05-27".to_owned()),
    ]
}

/// Every duration key, by policy.
fn duration_keys() -> Vec<(&'static str, &'static str)> {
    PolicyKind::ALL
        .into_iter()
        .flat_map(|kind| {
            kind.keys()
                .iter()
                .filter(|key| matches!(key.kind(), ValueKind::Duration { .. }))
                .map(move |key| (kind.name(), key.name()))
        })
        .collect()
}

const NANOS_PER_SEC: u64 = 1_000_000_000;

/// Duration texts whose parts add up to about [`Duration::MAX`]: about
/// `u64::MAX` seconds (or any number), plus about one second in sub-second
/// parts (where humantime carries nanoseconds into seconds), each amount
/// split in two and written in various units (`"307445734561825860m 15s
/// 500ms 0.500000000s"`), the parts in order or shuffled; with their exact
/// total in nanoseconds.
fn duration_near_max() -> impl Strategy<Value = (String, u128)> {
    let seconds = prop_oneof![
        3 => Just(u64::MAX),
        1 => Just(u64::MAX - 1),
        1 => Just(u64::MAX / 2 + 1),
        1 => any::<u64>(),
    ];
    let nanos = prop_oneof![
        3 => Just(NANOS_PER_SEC),
        1 => Just(NANOS_PER_SEC - 1),
        1 => Just(NANOS_PER_SEC + 1),
        1 => Just(0),
        1 => 0..3 * NANOS_PER_SEC,
    ];
    (seconds, nanos, any::<u64>(), any::<u64>())
        .prop_flat_map(|(seconds, nanos, cut_seconds, cut_nanos)| {
            let total = u128::from(seconds) * u128::from(NANOS_PER_SEC) + u128::from(nanos);
            let (s1, s2) = split(seconds, cut_seconds);
            let (n1, n2) = split(nanos, cut_nanos);
            let parts = vec![
                written_seconds(s1),
                written_seconds(s2),
                written_nanos(n1),
                written_nanos(n2),
            ];
            let parts = prop_oneof![
                parts.clone(),
                parts.prop_flat_map(|parts| Just(parts).prop_shuffle()),
            ];
            let separators =
                prop::collection::vec(prop_oneof![Just(" "), Just(""), Just("  "), Just("\t")], 4);
            (parts, separators, Just(total))
        })
        .prop_map(|(parts, separators, total)| {
            let mut text = String::new();
            for (part, separator) in parts.iter().zip(separators) {
                text.push_str(part);
                text.push_str(separator);
            }
            (text, total)
        })
}

/// `amount` as two amounts adding up to it, cut where `cut` says.
fn split(amount: u64, cut: u64) -> (u64, u64) {
    let first = cut % amount.saturating_add(1);
    (first, amount - first)
}

/// `seconds` written in seconds, or in a larger unit and seconds.
fn written_seconds(seconds: u64) -> BoxedStrategy<String> {
    let mut forms = vec![format!("{seconds}s"), format!("{seconds} seconds")];
    for (unit, length) in [("m", 60), ("h", 3600), ("d", 86_400), ("y", 31_557_600)] {
        forms.push(format!("{}{unit} {}s", seconds / length, seconds % length));
    }
    prop::sample::select(forms).boxed()
}

/// `nanos` written in nanoseconds, in a larger unit and nanoseconds, or as
/// seconds with a fraction.
fn written_nanos(nanos: u64) -> BoxedStrategy<String> {
    let mut forms = vec![
        format!("{nanos}ns"),
        format!("{}.{:09}s", nanos / NANOS_PER_SEC, nanos % NANOS_PER_SEC),
    ];
    for (unit, length) in [("us", 1_000), ("ms", 1_000_000), ("s", NANOS_PER_SEC)] {
        forms.push(format!("{}{unit} {}ns", nanos / length, nanos % length));
    }
    prop::sample::select(forms).boxed()
}

#[test]
fn durations_far_in_the_future_do_not_overflow_a_call() {
    let text = r#"
        [bulkhead.configs.default]
        max_wait = "99999999999y"
        [retry.configs.default]
        wait = "99999999999y"
        max_wait_interval = "99999999999y"
        [circuit_breaker.configs.default]
        wait_in_open = "99999999999y"
        slow_call_threshold = "99999999999y"
        slow_call_rate_threshold = 50
        [rate_limiter.configs.default]
        refresh_period = "99999999999y"
        max_wait = "99999999999y"
        [timeout.configs.default]
        duration = "99999999999y"
    "#;
    let registry = Registry::builder()
        .config_toml(text)
        .unwrap()
        .try_build()
        .unwrap();
    let pipeline = Pipeline::builder(&registry, "far")
        .bulkhead(|b| b)
        .retry(|r| r)
        .circuit_breaker(|c| c)
        .rate_limiter(|r| r)
        .timeout(|t| t)
        .build()
        .unwrap();
    assert_eq!(pipeline.execute(|| Ok::<_, ()>(1)), Ok(1));
    let call = pin!(pipeline.execute_async(|| async { Ok::<_, ()>(2) }));
    let polled = call.poll(&mut Context::from_waker(Waker::noop()));
    assert!(
        matches!(polled, std::task::Poll::Ready(Ok(2))),
        "{polled:?}"
    );
    exercise(registry);
}

proptest! {
    // The seeds of past failures are in `fuzz_config.proptest-regressions`,
    // next to this file. Proptest's default looks for them under a
    // `proptest-regressions/` folder beside the nearest `main.rs`'s folder
    // instead, now that this file is a module of the `registry` binary.
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::WithSource("proptest-regressions"),
        )),
        ..ProptestConfig::default()
    })]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        match Registry::builder().config_toml(&text) {
            Ok(builder) => exercise(builder.build()),
            Err(e) => prop_assert!(coded(&e), "{}", e),
        }
    }

    #[test]
    fn arbitrary_settings_never_panic(
        entries in prop::collection::vec(
            (policy(), prop_oneof![Just("configs"), Just("instances"), Just("other")], name(), key(), value()),
            0..8,
        )
    ) {
        let mut text = String::new();
        for (policy, section, name, key, value) in &entries {
            text.push_str(&format!("[{policy}.{section}.{name:?}]\n{key} = {value}\n"));
        }
        match Registry::builder().config_toml(&text).and_then(|b| b.try_build()) {
            Ok(registry) => exercise(registry),
            Err(e) => prop_assert!(coded(&e), "{}\n{}", e, text),
        }
    }

    #[test]
    fn arbitrary_environment_variables_never_panic(
        vars in prop::collection::vec(("(APP_)?[A-Za-z_]{0,30}", "\\PC{0,20}"), 0..8)
    ) {
        match Registry::builder().config_vars("APP_", vars) {
            Ok(builder) => exercise(builder.build()),
            Err(e) => prop_assert!(coded(&e), "{}", e),
        }
    }

    #[test]
    fn durations_near_duration_max_parse_exactly_or_are_too_large(
        (text, total) in duration_near_max(),
        (policy, key) in prop::sample::select(duration_keys()),
    ) {
        let fits = total <= Duration::MAX.as_nanos();
        match bulkhead_core::parse_duration(key, &text) {
            Ok(parsed) => prop_assert!(fits && parsed.as_nanos() == total, "{:?} is {:?}", text, parsed),
            Err(e) => prop_assert!(
                !fits && e.code() == "ATR-001" && e.to_string().contains("too large"),
                "{:?}: {}", text, e
            ),
        }
        let toml = format!("[{policy}.configs.default]\n{key} = {text:?}");
        let var = format!("APP_{policy}__CONFIGS__DEFAULT__{key}").to_uppercase();
        for loaded in [
            Registry::builder().config_toml(&toml),
            Registry::builder().config_vars("APP_", [(var.as_str(), text.as_str())]),
        ] {
            match loaded.and_then(|b| b.try_build()) {
                Ok(registry) => {
                    prop_assert!(fits, "{:?}", text);
                    exercise(registry);
                }
                Err(e) if !fits => prop_assert!(
                    e.code() == "ATR-001" && e.to_string().contains("too large"),
                    "{:?}: {}", text, e
                ),
                Err(e) => prop_assert!(coded(&e), "{}", e),
            }
        }
    }

    #[test]
    fn a_reload_of_arbitrary_text_never_panics(text in "\\PC{0,200}") {
        let registry = Registry::new();
        registry.bulkhead_policy("x", "fuzz", &BulkheadConfig::builder()).unwrap();
        if let Err(e) = registry.reload_toml(&text) {
            prop_assert!(coded(&e), "{}", e);
        }
    }
}
