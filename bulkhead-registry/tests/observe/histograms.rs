//! The registry's histograms of call, attempt and wait durations
//! (`Registry::telemetry`), read directly: what each kind of call records,
//! sync and async, and that nothing is recorded until asked.

use std::time::Duration;

use bulkhead_core::{CallError, HistogramKind, InstanceHistogram, ManualClock, Rejection};
use bulkhead_registry::{Pipeline, Registry, RegistryError};

/// `(kind, outcome)` to (count, sum) of every histogram of `instance`.
fn read(registry: &Registry, instance: &str) -> Vec<(HistogramKind, String, u64, Duration)> {
    let mut out: Vec<_> = registry
        .telemetry()
        .histograms()
        .iter()
        .filter(|h| h.instance() == instance)
        .map(|h: &InstanceHistogram| {
            (
                h.kind(),
                h.outcome().to_owned(),
                h.histogram().count(),
                h.histogram().sum(),
            )
        })
        .collect();
    out.sort_by_key(|(kind, outcome, ..)| (format!("{kind:?}"), outcome.clone()));
    out
}

#[test]
fn nothing_is_recorded_until_asked_then_every_composition_records() -> Result<(), RegistryError> {
    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    let pipeline = Pipeline::builder(&registry, "db")
        .bulkhead(|b| b.max_concurrent(2))
        .build()?;
    let ok: Result<(), CallError<()>> = pipeline.execute(|| Ok(()));
    assert_eq!(ok, Ok(()));
    assert!(!registry.telemetry().recording());
    assert!(registry.telemetry().histograms().is_empty());

    // Turned on for the pipeline built before.
    registry.telemetry().record();
    let slow = clock.clone();
    let ok: Result<(), CallError<()>> = pipeline.execute(|| {
        slow.advance(Duration::from_millis(3));
        Ok(())
    });
    assert_eq!(ok, Ok(()));
    let ms3 = Duration::from_millis(3);
    assert_eq!(
        read(&registry, "db"),
        vec![
            (HistogramKind::AttemptDuration, "success".into(), 1, ms3),
            (HistogramKind::CallDuration, "success".into(), 1, ms3),
            (
                HistogramKind::SlotWait,
                "admitted".into(),
                1,
                Duration::ZERO
            ),
        ]
    );
    Ok(())
}

#[test]
fn a_sync_wait_for_a_slot_is_timed_and_labelled_by_how_it_ended() -> Result<(), RegistryError> {
    let registry = Registry::new();
    registry.telemetry().record();
    let pipeline = Pipeline::builder(&registry, "slots")
        .bulkhead(|b| b.max_concurrent(1).max_wait(Duration::from_millis(30)))
        .build()?;
    let handle = registry.bulkhead("slots")?;
    let held = handle.bulkhead().try_enter();
    // Waits its 30 ms, then is refused.
    let refused: Result<(), CallError<()>> = pipeline.execute(|| Ok(()));
    assert!(matches!(
        refused,
        Err(CallError::Rejected(Rejection::BulkheadFull(_)))
    ));
    drop(held);
    let histograms = registry.telemetry().histograms();
    let wait = histograms
        .iter()
        .find(|h| h.kind() == HistogramKind::SlotWait && h.outcome() == "rejected")
        .expect("the refused wait was recorded");
    assert_eq!(wait.histogram().count(), 1);
    assert!(wait.histogram().sum() >= Duration::from_millis(30));
    let call = histograms
        .iter()
        .find(|h| h.kind() == HistogramKind::CallDuration)
        .expect("the call was recorded");
    assert_eq!(call.outcome(), "bulkhead_full");
    Ok(())
}

#[test]
fn async_calls_record_attempts_timeouts_and_retries() -> Result<(), RegistryError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    let registry = Registry::new();
    registry.telemetry().record();
    let pipeline = Pipeline::builder(&registry, "remote")
        .bulkhead(|b| b.max_concurrent(4))
        .timeout(|t| t.duration(Duration::from_millis(20)))
        .retry(|r| r.max_attempts(2).wait(Duration::ZERO))
        .build()?;
    let result: Result<(), CallError<()>> = runtime.block_on(pipeline.execute_async(|| async {
        tokio::time::sleep(Duration::from_secs(5)).await;
        Ok(())
    }));
    assert!(matches!(
        result,
        Err(CallError::Rejected(Rejection::Timeout(_)))
    ));
    let read = read(&registry, "remote");
    let count = |kind, outcome: &str| {
        read.iter()
            .find(|(k, o, ..)| *k == kind && o == outcome)
            .map_or(0, |(_, _, n, _)| *n)
    };
    assert_eq!(count(HistogramKind::AttemptDuration, "timeout"), 2);
    assert_eq!(count(HistogramKind::CallDuration, "timeout"), 1);
    assert_eq!(count(HistogramKind::SlotWait, "admitted"), 2);
    let call = read
        .iter()
        .find(|(k, ..)| *k == HistogramKind::CallDuration)
        .map(|(.., sum)| *sum)
        .unwrap_or_default();
    assert!(call >= Duration::from_millis(40), "{call:?}");
    Ok(())
}

#[test]
fn an_async_wait_for_a_slot_is_timed_until_the_slot_is_handed_over() -> Result<(), RegistryError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    let registry = Registry::new();
    registry.telemetry().record();
    let pipeline = Pipeline::builder(&registry, "queue")
        .bulkhead(|b| b.max_concurrent(1).max_wait(Duration::from_secs(10)))
        .build()?;
    let handle = registry.bulkhead("queue")?;
    let held = handle.bulkhead().try_enter_owned().expect("a free slot");
    runtime.block_on(async {
        let release = async {
            tokio::time::sleep(Duration::from_millis(25)).await;
            drop(held);
        };
        let call = pipeline.execute_async(|| async { Ok::<_, ()>(()) });
        let ((), result) = tokio::join!(release, call);
        assert_eq!(result, Ok(()));
    });
    let histograms = registry.telemetry().histograms();
    let wait = histograms
        .iter()
        .find(|h| h.kind() == HistogramKind::SlotWait)
        .expect("the wait was recorded");
    assert_eq!(wait.outcome(), "admitted");
    assert_eq!(wait.histogram().count(), 1);
    assert!(wait.histogram().sum() >= Duration::from_millis(25));
    Ok(())
}

/// An attempt hook hears of every attempt, numbered, with its outcome and
/// times on the registry's clock.
#[test]
fn an_attempt_hook_hears_each_attempt_with_its_number_and_outcome() -> Result<(), RegistryError> {
    use std::sync::{Arc, Mutex};

    use bulkhead_core::{AttemptHook, AttemptRecord, Outcome};

    #[derive(Default)]
    struct Heard(Mutex<Vec<(String, u32, Outcome, Duration)>>);
    impl AttemptHook for Heard {
        fn attempt(&self, record: &AttemptRecord<'_>) {
            self.0.lock().unwrap().push((
                record.instance.to_owned(),
                record.number,
                record.outcome,
                record.end - record.start,
            ));
        }
    }

    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    let heard = Arc::new(Heard::default());
    registry.telemetry().set_attempt_hook(heard.clone());
    assert!(registry.telemetry().recording());
    let pipeline = Pipeline::builder(&registry, "hooked")
        .bulkhead(|b| b.max_concurrent(1))
        .retry(|r| r.max_attempts(2).wait(Duration::ZERO))
        .build()?;
    let handle = registry.bulkhead("hooked")?;
    let mut attempts = 0;
    let result: Result<(), CallError<&str>> = pipeline.execute(|| {
        attempts += 1;
        clock.advance(Duration::from_millis(2));
        Err("down")
    });
    assert_eq!(result, Err(CallError::Inner("down")));
    let held = handle.bulkhead().try_enter();
    let refused: Result<(), CallError<&str>> = pipeline.execute(|| Ok(()));
    assert!(refused.is_err());
    drop(held);
    let full = Outcome::Rejected(bulkhead_core::RejectionKind::BulkheadFull);
    let ms2 = Duration::from_millis(2);
    assert_eq!(
        *heard.0.lock().unwrap(),
        vec![
            ("hooked".into(), 1, Outcome::Error, ms2),
            ("hooked".into(), 2, Outcome::Error, ms2),
            ("hooked".into(), 1, full, Duration::ZERO),
            ("hooked".into(), 2, full, Duration::ZERO),
        ]
    );
    registry.telemetry().clear_attempt_hook();
    let _: Result<(), CallError<&str>> = pipeline.execute(|| Ok(()));
    assert_eq!(heard.0.lock().unwrap().len(), 4);
    Ok(())
}

/// A keyed pipeline takes its key's slot inside the call its policies
/// see: a key's refusal reaches them as the call's own error, and must
/// still be labelled as the refusal the caller gets, not `error`.
#[test]
fn a_keyed_pipelines_refusal_by_its_key_is_labelled_bulkhead_full() -> Result<(), RegistryError> {
    let registry = Registry::new();
    registry.telemetry().record();
    let api = Pipeline::builder(&registry, "api")
        .keyed_bulkhead::<String>(|b| b.max_concurrent(10).per_key(1))
        .build()?;
    let busy = api.keyed_bulkhead().try_enter("acme").expect("a free slot");
    let refused = api.execute("acme", || Ok::<_, ()>(()));
    assert!(matches!(
        refused,
        Err(CallError::Rejected(Rejection::BulkheadFull(_)))
    ));
    drop(busy);
    let failed = api.execute("acme", || Err::<(), _>(()));
    assert_eq!(failed, Err(CallError::Inner(())));
    let read = read(&registry, "api");
    let outcomes = |kind| {
        read.iter()
            .filter(|(k, ..)| *k == kind)
            .map(|(_, outcome, count, _)| (outcome.clone(), *count))
            .collect::<Vec<_>>()
    };
    let expected = vec![("bulkhead_full".to_owned(), 1), ("error".to_owned(), 1)];
    assert_eq!(outcomes(HistogramKind::CallDuration), expected);
    assert_eq!(outcomes(HistogramKind::AttemptDuration), expected);
    Ok(())
}

/// The same, async.
#[test]
fn an_async_keyed_pipelines_refusal_by_its_key_is_labelled_bulkhead_full()
-> Result<(), RegistryError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let registry = Registry::new();
    registry.telemetry().record();
    let api = Pipeline::builder(&registry, "api")
        .keyed_bulkhead::<String>(|b| b.max_concurrent(10).per_key(1))
        .build()?;
    let busy = api.keyed_bulkhead().try_enter("acme").expect("a free slot");
    let refused = runtime.block_on(api.execute_async("acme", || async { Ok::<_, ()>(()) }));
    assert!(matches!(
        refused,
        Err(CallError::Rejected(Rejection::BulkheadFull(_)))
    ));
    drop(busy);
    let outcomes: Vec<_> = read(&registry, "api")
        .into_iter()
        .map(|(kind, outcome, count, _)| (kind, outcome, count))
        .collect();
    assert_eq!(
        outcomes,
        vec![
            (HistogramKind::AttemptDuration, "bulkhead_full".into(), 1),
            (HistogramKind::CallDuration, "bulkhead_full".into(), 1),
        ]
    );
    Ok(())
}

/// An async call's wait for a slot that its timeout cuts short (the
/// timeout drops the wait) is an `abandoned` wait, as a sync call's is.
#[test]
fn an_async_wait_for_a_slot_cut_by_the_timeout_is_abandoned() -> Result<(), RegistryError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    let registry = Registry::new();
    registry.telemetry().record();
    let pipeline = Pipeline::builder(&registry, "cut")
        .bulkhead(|b| b.max_concurrent(1).max_wait(Duration::from_secs(10)))
        .timeout(|t| t.duration(Duration::from_millis(20)))
        .build()?;
    let handle = registry.bulkhead("cut")?;
    let held = handle.bulkhead().try_enter_owned().expect("a free slot");
    let result = runtime.block_on(pipeline.execute_async(|| async { Ok::<_, ()>(()) }));
    assert!(matches!(
        result,
        Err(CallError::Rejected(Rejection::Timeout(_)))
    ));
    drop(held);
    let histograms = registry.telemetry().histograms();
    let waits: Vec<_> = histograms
        .iter()
        .filter(|h| h.kind() == HistogramKind::SlotWait)
        .map(|h| (h.outcome().to_owned(), h.histogram().count()))
        .collect();
    assert_eq!(waits, vec![("abandoned".to_owned(), 1)]);
    let wait = histograms
        .iter()
        .find(|h| h.kind() == HistogramKind::SlotWait)
        .map(|h| h.histogram().sum())
        .unwrap_or_default();
    assert!(wait >= Duration::from_millis(20), "{wait:?}");
    Ok(())
}

/// The sync twin: a wait cut by the timeout is `abandoned` (it was).
#[test]
fn a_sync_wait_for_a_slot_cut_by_the_timeout_is_abandoned() -> Result<(), RegistryError> {
    let registry = Registry::new();
    registry.telemetry().record();
    let pipeline = Pipeline::builder(&registry, "cut_sync")
        .bulkhead(|b| b.max_concurrent(1).max_wait(Duration::from_secs(10)))
        .timeout(|t| t.duration(Duration::from_millis(20)))
        .build()?;
    let handle = registry.bulkhead("cut_sync")?;
    let held = handle.bulkhead().try_enter();
    let result = pipeline.execute(|| Ok::<_, ()>(()));
    assert!(matches!(
        result,
        Err(CallError::Rejected(Rejection::Timeout(_)))
    ));
    drop(held);
    let waits: Vec<_> = registry
        .telemetry()
        .histograms()
        .iter()
        .filter(|h| h.kind() == HistogramKind::SlotWait)
        .map(|h| (h.outcome().to_owned(), h.histogram().count()))
        .collect();
    assert_eq!(waits, vec![("abandoned".to_owned(), 1)]);
    Ok(())
}
