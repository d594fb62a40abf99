//! The keyed bulkhead's names where `docs/paths.md` puts them: its types at
//! the crate's root, the registry's own in `bulkhead::registry`, its
//! refusal's reason in `bulkhead::events` too; and a keyed bulkhead got
//! from the registry works through them.

use bulkhead::events::{BulkheadEventKind, Event};
use bulkhead::registry::{BulkheadKey, KeyedBulkheadBuilder, KeyedBulkheadSnapshot, TopKey};
use bulkhead::{
    KeyLimits, KeyOccupancy, KeyRefusal, KeyedBulkhead, KeyedEnter, KeyedSnapshot, Registry,
};

fn builder<'r, K: BulkheadKey>(registry: &'r Registry, id: &str) -> KeyedBulkheadBuilder<'r, K> {
    registry.keyed_bulkhead_builder::<K>(id)
}

#[test]
fn a_keyed_bulkhead_through_the_facades_names() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::new();
    let mut events = registry.subscribe();
    let api: KeyedBulkhead<String> = builder(&registry, "api")
        .max_concurrent(4)
        .per_key(1)
        .key("gold".to_owned(), KeyLimits::new(2).reserved(1))
        .build()?;
    let held = api.try_enter("tenant")?;
    assert!(api.try_enter("tenant").is_err());

    let snapshot: KeyedSnapshot<String> = api.snapshot(1);
    let top: &KeyOccupancy<String> = &snapshot.top[0];
    assert_eq!((top.key.as_str(), top.in_flight), ("tenant", 1));
    let registry_snapshot = registry.snapshot();
    let keyed: &KeyedBulkheadSnapshot = &registry_snapshot.keyed_bulkheads()[0];
    let top: &TopKey = &keyed.top[0];
    assert_eq!((top.key.as_str(), top.in_flight), ("tenant", 1));

    let waiting: KeyedEnter<'_, '_, String, str> = api.enter_async("gold");
    drop(waiting);
    match events.try_recv() {
        Some(Event::Bulkhead(event)) => assert!(matches!(
            event.kind,
            BulkheadEventKind::KeyRejected {
                reason: KeyRefusal::KeyFull,
                ..
            }
        )),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        bulkhead::events::KeyRefusal::TooManyKeys.name(),
        "too_many_keys"
    );
    drop(held);
    Ok(())
}
