//! Chaos policies in a registry: configured from TOML and environment
//! variables, every key reloaded live (a reload puts a running pipeline
//! under chaos and takes it out again while calls run), bad values with
//! their codes, and the same seed giving the same injections.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bulkhead_core::{CallError, ChaosFault, ChaosLatency, ManualClock, RejectionKind};
use bulkhead_registry::{Pipeline, Registry};

/// What one call through `pipeline` became: `None` for an injected fault.
fn call(pipeline: &Pipeline) -> Option<u32> {
    match pipeline.execute(|| Ok::<_, ()>(7)) {
        Ok(value) => Some(value),
        Err(CallError::Rejected(r)) if r.kind() == RejectionKind::Injected => None,
        Err(other) => panic!("{other:?}"),
    }
}

fn chaotic(registry: &Registry, id: &str) -> Pipeline {
    Pipeline::builder(registry, id)
        .chaos(|chaos| chaos)
        .build()
        .unwrap()
}

#[test]
fn toml_and_environment_variables_configure_a_chaos_policy() {
    let registry = Registry::builder()
        .clock(ManualClock::new())
        .config_toml(
            "[chaos.configs.default]\nlatency_rate = 0.5\n\
             [chaos.instances.db]\nenabled = true\nfault_rate = 0.25\nseed = 7\nfault = \"panic\"",
        )
        .unwrap()
        .config_vars(
            "APP_",
            [
                ("APP_CHAOS__INSTANCES__DB__LATENCY", "100ms..200ms"),
                ("APP_CHAOS__INSTANCES__DB__SEED", "18446744073709551615"),
            ],
        )
        .unwrap()
        .build();
    chaotic(&registry, "db");
    let snapshot = registry.chaos("db").unwrap().snapshot();
    assert!(snapshot.enabled);
    assert_eq!((snapshot.fault_rate, snapshot.latency_rate), (0.25, 0.5));
    let ms = Duration::from_millis;
    assert_eq!(snapshot.latency, ChaosLatency::range(ms(100), ms(200)));
    assert_eq!(snapshot.fault, ChaosFault::Panic);
    assert_eq!(snapshot.seed, Some(u64::MAX));
    assert_eq!(registry.snapshot().chaos(), [snapshot]);
}

#[test]
fn bad_values_give_their_codes_naming_the_full_key() {
    let cases = [
        ("fault_rate", "1.5", "ATR-008"),
        ("latency_rate", "-0.1", "ATR-008"),
        ("latency", "\"2s..1s\"", "ATR-001"),
        ("latency", "\"fast\"", "ATR-001"),
        ("fault", "\"boom\"", "ATR-010"),
        ("enabled", "\"yes\"", "ATR-006"),
        ("seed", "-1", "ATR-008"),
        ("seed", "\"x\"", "ATR-008"),
    ];
    for (key, value, code) in cases {
        let registry = Registry::new();
        chaotic(&registry, "db");
        let err = registry
            .reload_toml(&format!("[chaos.instances.db]\n{key} = {value}"))
            .unwrap_err();
        assert_eq!(err.code(), code, "{key} = {value}: {err}");
        assert!(
            err.to_string()
                .contains(&format!("chaos.instances.db.{key}")),
            "{err}"
        );
        let var = format!("APP_CHAOS__INSTANCES__DB__{}", key.to_uppercase());
        let built = Registry::builder()
            .config_vars("APP_", [(var.as_str(), value.trim_matches('"'))])
            .map(|builder| builder.build());
        let err = match built {
            Err(err) => err,
            Ok(registry) => Pipeline::builder(&registry, "db")
                .chaos(|chaos| chaos)
                .build()
                .unwrap_err(),
        };
        assert_eq!(err.code(), code, "{var}={value}: {err}");
    }
}

#[test]
fn the_same_seed_gives_the_same_injections_through_a_pipeline() {
    let outcomes = |seed: u64| {
        let registry = Registry::builder().clock(ManualClock::new()).build();
        let pipeline = Pipeline::builder(&registry, "seeded")
            .chaos(|chaos| chaos.enabled(true).fault_rate(0.3).seed(seed))
            .build()
            .unwrap();
        (0..500).map(|_| call(&pipeline)).collect::<Vec<_>>()
    };
    assert_eq!(outcomes(1), outcomes(1));
    assert_ne!(outcomes(1), outcomes(2));
}

#[test]
fn a_reload_turns_chaos_on_and_off_while_calls_run_on_several_threads() {
    let registry = Registry::builder()
        .config_toml("[chaos.instances.live]\nfault_rate = 1.0")
        .unwrap()
        .build();
    let pipeline = chaotic(&registry, "live");
    let stop = Arc::new(AtomicBool::new(false));
    let (ok, injected) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (pipeline, stop) = (pipeline.clone(), stop.clone());
            let (ok, injected) = (ok.clone(), injected.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let counter = if call(&pipeline).is_some() {
                        &ok
                    } else {
                        &injected
                    };
                    counter.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let until = |counter: &AtomicU64, past: u64| {
        while counter.load(Ordering::Relaxed) <= past {
            std::thread::yield_now();
        }
    };
    for _ in 0..3 {
        until(&ok, ok.load(Ordering::Relaxed) + 100);
        assert_eq!(call(&pipeline), Some(7), "off: nothing injected");

        let changes = registry
            .reload_toml("[chaos.instances.live]\nfault_rate = 1.0\nenabled = true")
            .unwrap();
        assert!(changes.iter().all(|change| change.applied), "{changes:?}");
        assert_eq!(call(&pipeline), None, "on: every call faulted");
        until(&injected, injected.load(Ordering::Relaxed) + 100);

        registry
            .reload_toml("[chaos.instances.live]\nfault_rate = 1.0")
            .unwrap();
        assert!(!registry.chaos("live").unwrap().snapshot().enabled);
    }
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.join().unwrap();
    }
}
