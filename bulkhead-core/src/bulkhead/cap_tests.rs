//! The cap over a bulkhead's limit: the limit in force is the smaller of
//! the configured limit and the cap, which may be 0.

use std::sync::Arc;
use std::time::Duration;

use super::{Bulkhead, BulkheadConfig};
use crate::clock::ManualClock;
use crate::context::PolicyContext;
use crate::events::{BulkheadEventKind, Event, EventBus};

fn bulkhead(max: u32) -> (Bulkhead, crate::events::EventStream) {
    let bus = EventBus::default();
    let events = bus.subscribe();
    let context = PolicyContext::new(Arc::new(ManualClock::new())).with_events(bus);
    let config = BulkheadConfig::builder()
        .max_concurrent(max)
        .max_wait(Duration::from_secs(1))
        .build()
        .unwrap();
    (Bulkhead::with_context("capped", config, context), events)
}

fn limit_changes(events: &mut crate::events::EventStream) -> Vec<(u32, u32)> {
    events
        .drain()
        .filter_map(|event| match event {
            Event::Bulkhead(event) => match event.kind {
                BulkheadEventKind::LimitChanged { from, to } => Some((from, to)),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

#[test]
fn a_cap_of_zero_admits_nothing_and_keeps_the_configured_limit() {
    let (bulkhead, mut events) = bulkhead(4);
    assert_eq!(bulkhead.set_limit_cap(Some(0)), 0);
    assert_eq!(bulkhead.max_concurrent(), 0);
    assert_eq!(bulkhead.config().max_concurrent(), 4);
    assert!(bulkhead.try_enter().is_err());
    assert_eq!(bulkhead.set_limit_cap(None), 4);
    assert!(bulkhead.try_enter().is_ok());
    assert_eq!(limit_changes(&mut events), [(4, 0), (0, 4)]);
}

#[test]
fn the_configured_limit_moves_under_the_cap() {
    let (bulkhead, mut events) = bulkhead(4);
    bulkhead.set_limit_cap(Some(2));
    bulkhead.set_max_concurrent(10).unwrap();
    assert_eq!(bulkhead.max_concurrent(), 2);
    assert_eq!(bulkhead.config().max_concurrent(), 10);
    bulkhead.set_max_concurrent(1).unwrap();
    assert_eq!(bulkhead.max_concurrent(), 1);
    assert_eq!(bulkhead.set_limit_cap(Some(50)), 1);
    assert_eq!(limit_changes(&mut events), [(4, 2), (2, 1)]);
}

#[test]
fn a_waiter_queued_under_a_zero_cap_gets_the_slot_the_cap_gives() {
    let (bulkhead, _events) = bulkhead(4);
    bulkhead.set_limit_cap(Some(0));
    std::thread::scope(|scope| {
        let waiter = scope.spawn(|| bulkhead.enter().map(|_| ()));
        while bulkhead.waiting_calls() == 0 {
            std::thread::yield_now();
        }
        bulkhead.set_limit_cap(Some(1));
        assert!(waiter.join().unwrap().is_ok());
    });
}

#[test]
fn lowering_the_cap_below_the_calls_in_flight_lets_them_finish() {
    let (bulkhead, _events) = bulkhead(4);
    let first = bulkhead.try_enter().unwrap();
    let second = bulkhead.try_enter().unwrap();
    bulkhead.set_limit_cap(Some(1));
    assert_eq!(bulkhead.concurrent_calls(), 2);
    drop(first);
    assert!(bulkhead.try_enter().is_err());
    drop(second);
    assert!(bulkhead.try_enter().is_ok());
}
