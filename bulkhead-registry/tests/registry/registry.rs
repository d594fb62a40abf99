//! The registry: ids, shared instances, coded errors (REG-004, REG-008,
//! REG-009, ATR-003), configuration precedence, handles and snapshots (B9,
//! B10), and the Pipeline builder.

use std::time::Duration;

use bulkhead_core::{BulkheadConfig, ManualClock};
use bulkhead_registry::{BulkheadHandle, Pipeline, Registry, RegistryError, RegistrySnapshot};

fn spec() -> bulkhead_core::BulkheadConfigBuilder {
    BulkheadConfig::builder()
}

#[test]
fn public_types_are_send_and_sync_and_pipelines_are_cheap_clones() {
    fn send_sync<T: Send + Sync>() {}
    fn clone_send_sync<T: Clone + Send + Sync>() {}
    send_sync::<Registry>();
    send_sync::<BulkheadHandle>();
    send_sync::<RegistrySnapshot>();
    send_sync::<RegistryError>();
    send_sync::<bulkhead_core::Bulkhead>();
    send_sync::<bulkhead_core::BulkheadPermit<'static>>();
    send_sync::<bulkhead_core::Enter<'static>>();
    send_sync::<bulkhead_core::Rejection>();
    send_sync::<bulkhead_core::OwnedBulkheadPermit>();
    send_sync::<bulkhead_core::EventStream>();
    send_sync::<bulkhead_core::Sleep>();
    send_sync::<bulkhead_registry::BulkheadSnapshot>();
    send_sync::<bulkhead_core::EventBus>();
    send_sync::<bulkhead_core::PolicyContext>();
    clone_send_sync::<Pipeline>();
    clone_send_sync::<ManualClock>();
}

#[test]
fn an_unknown_id_is_reg_009() {
    let registry = Registry::new();
    let err = registry.bulkhead("nope").unwrap_err();
    assert_eq!(err.code(), "REG-009");
    assert!(
        err.to_string()
            .starts_with("REG-009: no bulkhead with id \"nope\""),
        "{err}"
    );
}

#[test]
fn reg_009_lists_the_ids_that_do_exist() {
    let registry = Registry::new();
    registry
        .bulkhead_policy("thumbnails", "test", &spec())
        .unwrap();
    let err = registry.bulkhead("thumbnail").unwrap_err();
    assert!(err.to_string().contains("known: thumbnails"), "{err}");
}

#[test]
fn a_bulkhead_exists_once_its_pipeline_is_built() {
    let registry = Registry::new();
    assert!(registry.bulkhead("renderer").is_err());
    Pipeline::builder(&registry, "renderer")
        .bulkhead(|b| b.max_concurrent(10))
        .build()
        .unwrap();
    assert_eq!(registry.bulkhead("renderer").unwrap().max_concurrent(), 10);
}

#[test]
fn an_unknown_config_is_reg_004() {
    let registry = Registry::builder().bulkhead_config("slow", |b| b).build();
    let err = registry
        .bulkhead_policy("reports", "test", &spec().config("fast"))
        .unwrap_err();
    assert_eq!(err.code(), "REG-004");
    assert!(err.to_string().starts_with("REG-004: "), "{err}");
    assert!(err.to_string().contains("\"fast\""), "{err}");
    assert!(
        err.to_string().contains("known configs: default, slow"),
        "{err}"
    );
}

#[test]
fn the_default_config_always_exists() {
    let registry = Registry::new();
    assert!(
        registry
            .bulkhead_policy("x", "test", &spec().config("default"))
            .is_ok()
    );
}

#[test]
fn shared_name_with_other_config_is_reg_008_naming_both_sides() {
    let registry = Registry::new();
    registry
        .bulkhead_policy(
            "thumbnails",
            "shop::Thumbs#small(&str)",
            &spec().max_concurrent(4),
        )
        .unwrap();
    let err = registry
        .bulkhead_policy(
            "thumbnails",
            "shop::Thumbs#large(&str)",
            &spec().max_concurrent(2),
        )
        .unwrap_err();
    assert_eq!(err.code(), "REG-008");
    let message = err.to_string();
    assert!(
        message.starts_with("REG-008: bulkhead \"thumbnails\""),
        "{message}"
    );
    assert!(
        message.contains("shop::Thumbs#small(&str) resolves to [max_concurrent = 4"),
        "{message}"
    );
    assert!(
        message.contains("shop::Thumbs#large(&str) resolves to [max_concurrent = 2"),
        "{message}"
    );
    assert_eq!(
        registry.bulkhead("thumbnails").unwrap().max_concurrent(),
        4,
        "the first stays"
    );
}

#[test]
fn pipelines_with_one_id_and_different_configs_are_reg_008() {
    let registry = Registry::new();
    Pipeline::builder(&registry, "renderer")
        .bulkhead(|b| b.max_concurrent(10))
        .build()
        .unwrap();
    let err = Pipeline::builder(&registry, "renderer")
        .bulkhead(|b| b.max_concurrent(10).max_wait(Duration::from_secs(1)))
        .build()
        .unwrap_err();
    assert_eq!(err.code(), "REG-008");
}

#[test]
fn shared_name_with_the_same_config_shares_one_instance_and_its_slots() {
    let registry = Registry::new();
    let a = registry
        .bulkhead_policy("pool", "a", &spec().max_concurrent(1))
        .unwrap();
    // Resolving to the same values through a different route is no conflict.
    let b = registry
        .bulkhead_policy("pool", "b", &spec().max_concurrent(1).enabled(true))
        .unwrap();
    let held = a.try_enter().unwrap();
    assert!(b.try_enter().is_err(), "b sees a's slot taken");
    drop(held);
    assert!(b.try_enter().is_ok());
    assert_eq!(registry.snapshot().bulkheads().len(), 1);
}

#[test]
fn max_concurrent_below_one_in_a_builder_is_atr_003() {
    let registry = Registry::new();
    let err = Pipeline::builder(&registry, "zero")
        .bulkhead(|b| b.max_concurrent(0))
        .build()
        .unwrap_err();
    assert_eq!(err.code(), "ATR-003");
    assert!(
        err.to_string()
            .starts_with("ATR-003: max_concurrent must be between 1 and"),
        "{err}"
    );
    assert!(registry.bulkhead("zero").is_err(), "nothing was registered");
}

#[test]
fn a_bad_value_in_a_named_config_is_reported_with_its_full_key() {
    let registry = Registry::builder()
        .bulkhead_config("broken", |b| b.max_concurrent(0))
        .build();
    let err = registry
        .bulkhead_policy("x", "test", &spec().config("broken"))
        .unwrap_err();
    assert_eq!(err.code(), "ATR-003");
    assert!(
        err.to_string()
            .starts_with("ATR-003: bulkhead.configs.broken.max_concurrent"),
        "{err}"
    );
}

#[test]
fn precedence_is_instance_then_declaration_then_named_config_then_default_then_built_in() {
    let registry = Registry::builder()
        .bulkhead_config("default", |b| {
            b.max_wait(Duration::from_millis(5)).max_concurrent(30)
        })
        .bulkhead_config("slow", |b| {
            b.max_concurrent(3).max_wait(Duration::from_secs(2))
        })
        .bulkhead_instance("tuned", |b| b.max_concurrent(9))
        .build();
    // built-in defaults under `default`
    let plain = registry
        .bulkhead_policy("plain", "t", &spec())
        .unwrap()
        .config();
    assert_eq!(
        (plain.max_concurrent(), plain.max_wait(), plain.enabled()),
        (30, Duration::from_millis(5), true)
    );
    // the named config over `default`
    let slow = registry
        .bulkhead_policy("slow-one", "t", &spec().config("slow"))
        .unwrap()
        .config();
    assert_eq!(
        (slow.max_concurrent(), slow.max_wait()),
        (3, Duration::from_secs(2))
    );
    // the declaration over the named config
    let declared = registry
        .bulkhead_policy("declared", "t", &spec().config("slow").max_concurrent(5))
        .unwrap()
        .config();
    assert_eq!(
        (declared.max_concurrent(), declared.max_wait()),
        (5, Duration::from_secs(2))
    );
    // the instance override over the declaration
    let tuned = registry
        .bulkhead_policy("tuned", "t", &spec().config("slow").max_concurrent(5))
        .unwrap()
        .config();
    assert_eq!(
        (tuned.max_concurrent(), tuned.max_wait()),
        (9, Duration::from_secs(2))
    );
}

#[test]
fn hedges_and_fallbacks_take_named_configs_and_instance_overrides_from_the_builder() {
    use bulkhead_core::{FallbackConfig, HedgeConfig, HedgeDelay, RejectionKind};

    let registry = Registry::builder()
        .hedge_config("default", |h| h.delay(Duration::from_millis(7)))
        .hedge_config("eager", |h| h.max_hedged(3).delay(Duration::from_millis(5)))
        .hedge_instance("tuned", |h| h.max_hedged(4))
        .fallback_config("default", |f| f.on([RejectionKind::Timeout]))
        .fallback_config("lenient", |f| f.on_error(true))
        .fallback_instance("tuned", |f| f.on([RejectionKind::CircuitOpen]))
        .build();
    let mut declarations = registry.declare();
    let hedge = |declarations: &mut bulkhead_registry::Declarations<'_>, id, spec| {
        let hedge = declarations.hedge(id, "t", &spec).unwrap().config();
        (hedge.max_hedged(), hedge.delay())
    };
    let fallback = |declarations: &mut bulkhead_registry::Declarations<'_>, id, spec| {
        let fallback = declarations.fallback(id, "t", &spec).unwrap().config();
        (fallback.on().to_string(), fallback.on_error())
    };
    let ms = |n| HedgeDelay::from(Duration::from_millis(n));
    // `default` over the built-in defaults (one hedge).
    let plain = hedge(&mut declarations, "plain", HedgeConfig::builder());
    assert_eq!(plain, (1, ms(7)));
    // The named config over `default`; the declaration over the config;
    // the instance override over the declaration.
    let eager = HedgeConfig::builder().config("eager");
    assert_eq!(hedge(&mut declarations, "eager", eager.clone()), (3, ms(5)));
    let declared = eager.clone().max_hedged(2);
    assert_eq!(
        hedge(&mut declarations, "declared", declared.clone()),
        (2, ms(5))
    );
    assert_eq!(hedge(&mut declarations, "tuned", declared), (4, ms(5)));

    let plain = fallback(&mut declarations, "plain", FallbackConfig::builder());
    assert_eq!(plain, ("[Timeout]".to_owned(), false));
    let lenient = FallbackConfig::builder().config("lenient");
    let lenient_one = fallback(&mut declarations, "lenient", lenient.clone());
    assert_eq!(lenient_one, ("[Timeout]".to_owned(), true));
    let declared = lenient.on([RejectionKind::BulkheadFull]);
    let declared_one = fallback(&mut declarations, "declared", declared.clone());
    assert_eq!(declared_one, ("[BulkheadFull]".to_owned(), true));
    let tuned = fallback(&mut declarations, "tuned", declared);
    assert_eq!(tuned, ("[CircuitOpen]".to_owned(), true));
    declarations.commit();
    assert_eq!(registry.hedge("tuned").unwrap().config().max_hedged(), 4);
    assert!(registry.fallback("tuned").unwrap().config().on_error());
}

#[test]
fn a_bad_hedge_or_fallback_value_given_to_the_builder_is_reported_with_its_full_key() {
    use bulkhead_core::HedgeDelay;

    let err = Registry::builder()
        .hedge_config("broken", |h| h.delay(HedgeDelay::percentile(100.0)))
        .try_build()
        .unwrap_err();
    assert_eq!(err.code(), "ATR-008", "{err}");
    assert!(
        err.to_string().contains("hedge.configs.broken.delay"),
        "{err}"
    );
    let err = Registry::builder()
        .hedge_instance("search", |h| h.max_hedged(0))
        .try_build()
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("hedge.instances.search.max_hedged"),
        "{err}"
    );
    let registry = Registry::builder()
        .fallback_instance("thumbs", |f| f.config("missing"))
        .try_build();
    assert_eq!(registry.unwrap_err().code(), "REG-004");
}

#[test]
fn an_instance_override_may_choose_another_base_config() {
    let registry = Registry::builder()
        .bulkhead_config("slow", |b| b.max_concurrent(3))
        .bulkhead_instance("x", |b| b.config("slow"))
        .build();
    assert_eq!(
        registry
            .bulkhead_policy("x", "t", &spec())
            .unwrap()
            .max_concurrent(),
        3
    );
}

#[test]
fn b10_a_handle_reports_concurrent_and_waiting_calls_and_a_snapshot() {
    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    let bulkhead = registry
        .bulkhead_policy(
            "thumbnails",
            "t",
            &spec()
                .max_concurrent(4)
                .max_wait(Duration::from_millis(250)),
        )
        .unwrap();
    let handle = registry.bulkhead("thumbnails").unwrap();
    let held: Vec<_> = (0..4).map(|_| bulkhead.try_enter().unwrap()).collect();
    let mut waiter = bulkhead.enter_async();
    let _ = std::pin::Pin::new(&mut waiter)
        .poll(&mut std::task::Context::from_waker(std::task::Waker::noop()));
    assert_eq!(handle.concurrent_calls(), 4);
    assert_eq!(handle.waiting_calls(), 1);
    let snapshot = handle.snapshot();
    assert_eq!(snapshot.instance, "thumbnails");
    assert_eq!(snapshot.concurrent_calls, 4);
    assert_eq!(snapshot.waiting_calls, 1);
    assert_eq!(snapshot.max_concurrent, 4);
    assert_eq!(snapshot.available, 0);
    assert_eq!(snapshot.max_wait, Duration::from_millis(250));
    drop((held, waiter));
    assert_eq!((handle.concurrent_calls(), handle.waiting_calls()), (0, 0));
}

use std::future::Future;

#[test]
fn b10_the_registry_snapshot_lists_every_bulkhead_sorted_by_id() {
    let registry = Registry::new();
    for id in ["reports", "checkout", "payments"] {
        registry.bulkhead_policy(id, "t", &spec()).unwrap();
    }
    let ids: Vec<_> = registry
        .snapshot()
        .bulkheads()
        .iter()
        .map(|b| b.instance.clone())
        .collect();
    assert_eq!(ids, ["checkout", "payments", "reports"]);
}

#[test]
fn raising_the_limit_at_run_time_hands_new_slots_to_waiters() {
    let registry = Registry::new();
    let bulkhead = registry
        .bulkhead_policy(
            "grow",
            "t",
            &spec().max_concurrent(1).max_wait(Duration::from_secs(60)),
        )
        .unwrap();
    let _held = bulkhead.try_enter().unwrap();
    let mut waiter = bulkhead.enter_async();
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(std::pin::Pin::new(&mut waiter).poll(&mut cx).is_pending());
    registry
        .bulkhead("grow")
        .unwrap()
        .set_max_concurrent(2)
        .unwrap();
    let std::task::Poll::Ready(Ok(_granted)) = std::pin::Pin::new(&mut waiter).poll(&mut cx) else {
        panic!("the waiter gets the new slot");
    };
    assert_eq!(bulkhead.concurrent_calls(), 2);
}

#[test]
fn lowering_the_limit_lets_calls_in_flight_finish_and_admits_below_the_new_limit() {
    let registry = Registry::new();
    let bulkhead = registry
        .bulkhead_policy("shrink", "t", &spec().max_concurrent(3))
        .unwrap();
    let handle = registry.bulkhead("shrink").unwrap();
    let mut held: Vec<_> = (0..3).map(|_| bulkhead.try_enter().unwrap()).collect();
    handle.set_max_concurrent(1).unwrap();
    assert_eq!(handle.snapshot().available, 0);
    assert!(bulkhead.try_enter().is_err());
    held.pop();
    assert!(bulkhead.try_enter().is_err(), "2 in flight, limit 1");
    held.pop();
    assert!(bulkhead.try_enter().is_err(), "1 in flight, limit 1");
    held.pop();
    let one = bulkhead.try_enter().unwrap();
    assert!(bulkhead.try_enter().is_err());
    drop(one);
    assert_eq!(handle.set_max_concurrent(0).unwrap_err().code(), "ATR-003");
}

#[test]
fn the_global_registry_cannot_be_replaced_once_in_use() {
    let global = Registry::global();
    assert!(Registry::set_global(Registry::new()).is_err());
    assert!(std::ptr::eq(global, Registry::global()));
}

#[test]
fn a_disabled_bulkheads_handle_and_snapshot_agree_on_a_changed_limit() {
    let registry = Registry::new();
    registry
        .bulkhead_policy("off", "t", &spec().max_concurrent(5).enabled(false))
        .unwrap();
    let handle = registry.bulkhead("off").unwrap();
    handle.set_max_concurrent(7).unwrap();
    assert_eq!(handle.max_concurrent(), 7);
    assert_eq!(handle.snapshot().max_concurrent, 7);
}

#[test]
fn an_event_capacity_out_of_range_is_clamped_not_a_panic() {
    for capacity in [0, usize::MAX] {
        let registry = Registry::builder().event_capacity(capacity).build();
        let mut events = registry.subscribe();
        let bulkhead = registry
            .bulkhead_policy("cap", "t", &spec().max_concurrent(1))
            .unwrap();
        let _held = bulkhead.try_enter().unwrap();
        assert!(bulkhead.try_enter().is_err());
        assert_eq!(events.drain().count(), 1);
    }
}

#[test]
fn a_registry_can_share_another_registrys_clock() {
    let clock = ManualClock::new();
    let first = Registry::builder().clock(clock.clone()).build();
    let second = Registry::builder().clock(first.clock().clone()).build();
    let before = second.clock().now();
    clock.advance(Duration::from_secs(5));
    assert_eq!(second.clock().now() - before, Duration::from_secs(5));
}

#[test]
fn rejections_convert_into_boxed_and_anyhow_style_errors() {
    let registry = Registry::new();
    let pipeline = Pipeline::builder(&registry, "boxed")
        .bulkhead(|b| b.max_concurrent(1))
        .build()
        .unwrap();
    let handle = registry.bulkhead("boxed").unwrap();
    let _held = handle.bulkhead().try_enter().unwrap();
    let result: Result<(), Box<dyn std::error::Error + Send + Sync>> = pipeline
        .execute(|| Ok::<_, std::io::Error>(()))
        .map_err(|e| e.into());
    assert_eq!(
        result.unwrap_err().to_string(),
        "bulkhead \"boxed\" is full"
    );
}

#[test]
fn a_batch_of_declarations_is_registered_all_or_nothing() {
    let registry = Registry::new();
    let mut batch = registry.declare();
    batch
        .bulkhead("a", "T#a()", &spec().max_concurrent(1))
        .unwrap();
    batch
        .bulkhead("shared", "T#b()", &spec().max_concurrent(2))
        .unwrap();
    let err = batch
        .bulkhead("shared", "T#c()", &spec().max_concurrent(3))
        .unwrap_err();
    assert_eq!(err.code(), "REG-008");
    assert!(
        err.to_string()
            .contains("T#b() resolves to [max_concurrent = 2"),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("T#c() resolves to [max_concurrent = 3"),
        "{err}"
    );
    drop(batch);
    assert!(
        registry.snapshot().bulkheads().is_empty(),
        "a failed batch registers nothing"
    );

    let mut batch = registry.declare();
    let a = batch
        .bulkhead("a", "T#a()", &spec().max_concurrent(1))
        .unwrap();
    let b = batch
        .bulkhead("shared", "T#b()", &spec().max_concurrent(2))
        .unwrap();
    let c = batch
        .bulkhead("shared", "T#c()", &spec().max_concurrent(2))
        .unwrap();
    assert!(registry.bulkhead("a").is_err(), "not visible before commit");
    batch.commit();
    let held = b.try_enter().unwrap();
    let _also = c.try_enter().unwrap();
    assert!(
        b.try_enter().is_err(),
        "b and c share one instance within the batch"
    );
    drop(held);
    assert_eq!(
        registry.bulkhead("a").unwrap().max_concurrent(),
        a.max_concurrent()
    );
    assert_eq!(registry.snapshot().bulkheads().len(), 2);
}

// ------------------------------------- calls on the thread of an open batch

/// Runs `f` on a thread of its own and waits at most ten seconds for it, so
/// that a deadlock fails the test instead of hanging the suite.
fn without_deadlock<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    use std::sync::mpsc::{RecvTimeoutError, channel};
    let (done, finished) = channel();
    let worker = std::thread::spawn(move || {
        let out = f();
        let _ = done.send(());
        out
    });
    match finished.recv_timeout(Duration::from_secs(10)) {
        // Disconnected: `f` panicked; join passes its panic on.
        Ok(()) | Err(RecvTimeoutError::Disconnected) => worker
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
        Err(RecvTimeoutError::Timeout) => panic!("deadlocked: no answer within 10 s"),
    }
}

fn on(resource: &str, max: u32) -> bulkhead_core::BulkheadConfigBuilder {
    spec().max_concurrent(max).resource(resource)
}

#[test]
fn set_max_concurrent_inside_an_open_batch_counts_the_batch_against_the_budget() {
    let registry = Registry::new();
    registry.resource("db", 10).unwrap();
    registry
        .bulkhead_policy("checkout", "t", &on("db", 4))
        .unwrap();
    without_deadlock(move || {
        let checkout = registry.bulkhead("checkout").unwrap();
        let mut batch = registry.declare();
        batch.bulkhead("reports", "t", &on("db", 5)).unwrap();
        let err = checkout.set_max_concurrent(6).unwrap_err();
        assert_eq!(err.code(), "REG-010", "4 + 5 staged fit, 6 + 5 do not");
        assert!(err.to_string().contains("reports (5)"), "{err}");
        assert_eq!(checkout.max_concurrent(), 4);
        checkout.set_max_concurrent(5).unwrap();
        assert_eq!(checkout.max_concurrent(), 5);
        batch.commit();
        assert_eq!(registry.resource_usage("db"), Some((10, 10)));
    });
}

#[test]
fn resource_inside_an_open_batch_counts_the_batch() {
    let registry = Registry::new();
    registry.resource("db", 10).unwrap();
    without_deadlock(move || {
        let mut batch = registry.declare();
        batch.bulkhead("reports", "t", &on("db", 6)).unwrap();
        let err = registry.resource("db", 5).unwrap_err();
        assert_eq!(err.code(), "REG-010", "{err}");
        registry.resource("db", 6).unwrap();
        assert_eq!(
            batch
                .bulkhead("checkout", "t", &on("db", 1))
                .unwrap_err()
                .code(),
            "REG-010",
            "the new budget holds for the rest of the batch"
        );
        batch.commit();
        assert_eq!(registry.resource_usage("db"), Some((6, 6)));
    });
}

#[test]
fn a_reload_inside_an_open_batch_reconfigures_the_batchs_instances_too() {
    let registry = Registry::builder()
        .config_toml("[bulkhead.instances.reports]\nmax_concurrent = 3")
        .unwrap()
        .build();
    without_deadlock(move || {
        let mut batch = registry.declare();
        let reports = batch.bulkhead("reports", "t", &spec()).unwrap();
        assert_eq!(reports.max_concurrent(), 3);
        let changes = registry
            .reload_toml(
                "[bulkhead.instances.reports]\nmax_concurrent = 7\n\
                 [bulkhead.instances.later]\nmax_concurrent = 2",
            )
            .unwrap();
        assert_eq!(changes.len(), 1, "{changes:?}");
        assert_eq!(changes[0].instance, "reports");
        assert!(changes[0].applied);
        assert_eq!(reports.max_concurrent(), 7);
        let later = batch.bulkhead("later", "t", &spec()).unwrap();
        assert_eq!(later.max_concurrent(), 2, "resolved under the new TOML");
        assert!(registry.reload().unwrap().is_empty(), "nothing more to do");
        batch.commit();
        let registered = registry.bulkhead("reports").unwrap();
        assert_eq!(registered.max_concurrent(), 7);
        assert!(
            registry.reload().unwrap().is_empty(),
            "committed with the configuration it runs"
        );
    });
}

#[test]
fn declarations_inside_an_open_batch_are_a_batch_of_their_own_sharing_its_instances() {
    let registry = Registry::new();
    without_deadlock(move || {
        let mut outer = registry.declare();
        let shared = outer
            .bulkhead("shared", "outer", &spec().max_concurrent(1))
            .unwrap();
        outer
            .bulkhead("outer-only", "outer", &spec().max_concurrent(1))
            .unwrap();
        // A pipeline built meanwhile commits its own batch at once.
        Pipeline::builder(&registry, "renderer")
            .bulkhead(|b| b.max_concurrent(2))
            .build()
            .unwrap();
        assert!(registry.bulkhead("renderer").is_ok());
        // The id the open batch declared is shared, not created twice ...
        let again = registry
            .bulkhead_policy("shared", "inner", &spec().max_concurrent(1))
            .unwrap();
        let held = shared.try_enter().unwrap();
        assert!(again.try_enter().is_err(), "one instance, one slot");
        drop(held);
        // ... or refused if it resolves to another configuration.
        let err = registry
            .bulkhead_policy("shared", "other", &spec().max_concurrent(2))
            .unwrap_err();
        assert_eq!(err.code(), "REG-008");
        assert!(err.to_string().contains("outer resolves to"), "{err}");
        assert!(
            registry.bulkhead("shared").is_ok(),
            "registered by the batch that committed it"
        );
        let mut inner = registry.declare();
        inner
            .bulkhead("inner-only", "inner", &spec().max_concurrent(1))
            .unwrap();
        drop(inner);
        drop(outer);
        let ids: Vec<String> = registry
            .snapshot()
            .bulkheads()
            .iter()
            .map(|b| b.instance.clone())
            .collect();
        assert_eq!(
            ids,
            ["renderer", "shared"],
            "dropped batches register nothing"
        );
    });
}

#[test]
fn a_batch_held_by_one_thread_makes_the_others_wait_until_it_ends() {
    let registry = Registry::new();
    registry.resource("db", 10).unwrap();
    registry
        .bulkhead_policy("checkout", "t", &on("db", 4))
        .unwrap();
    let mut batch = registry.declare();
    batch.bulkhead("reports", "t", &on("db", 6)).unwrap();
    let other = {
        let registry = registry.clone();
        std::thread::spawn(move || {
            // Checked against the budget once the batch has ended: had it
            // run while the batch was open, its 6 slots would have counted.
            registry.bulkhead("checkout").unwrap().set_max_concurrent(5)
        })
    };
    drop(batch);
    other.join().unwrap().unwrap();
    assert_eq!(registry.resource_usage("db"), Some((10, 5)));
}
