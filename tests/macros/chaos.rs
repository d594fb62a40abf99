//! `#[chaos]` through generated wrappers and functions with a body, sync
//! and async: off until configuration turns it on, an injected fault
//! reaching the method's error through `From<Rejection>`, an injected
//! latency holding the bulkhead slot on the registry's clock, and the
//! attribute's values in the registry.

use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use bulkhead::chaos::{ChaosFault, ChaosLatency};
use bulkhead::{Registry, Rejection, RejectionKind, chaos, resilient};

use crate::support::{ServiceError, manual, poll};

#[resilient]
pub trait Inventory: Send + Sync {
    #[chaos(name = "inventory-faults", fault_rate = 1.0, seed = 28)]
    fn stock(&self, item: &str) -> Result<u32, ServiceError>;

    #[chaos(
        name = "inventory-slow",
        enabled = true,
        latency_rate = 1.0,
        latency = "200ms"
    )]
    #[bulkhead(name = "inventory-slow", max_concurrent = 1)]
    async fn stock_async(&self, item: &str) -> Result<u32, ServiceError>;
}

pub struct Shelves;

impl Inventory for Shelves {
    fn stock(&self, item: &str) -> Result<u32, ServiceError> {
        Ok(item.len() as u32)
    }

    async fn stock_async(&self, item: &str) -> Result<u32, ServiceError> {
        Ok(item.len() as u32)
    }
}

fn injected(result: Result<u32, ServiceError>) -> bool {
    matches!(result, Err(ServiceError::Rejected(r)) if r.kind() == RejectionKind::Injected)
}

#[test]
fn a_sync_method_is_under_chaos_once_configuration_turns_it_on() {
    let (_clock, registry) = manual();
    let inventory = ResilientInventory::new(Shelves, &registry).unwrap();
    assert_eq!(inventory.stock("bolt").unwrap(), 4);
    registry
        .reload_toml("[chaos.instances.inventory-faults]\nenabled = true")
        .unwrap();
    assert!(injected(inventory.stock("bolt")));
    let snapshot = registry.chaos("inventory-faults").unwrap().snapshot();
    assert_eq!(
        (snapshot.fault_rate, snapshot.seed, snapshot.fault),
        (1.0, Some(28), ChaosFault::Error)
    );
    registry.reload_toml("").unwrap();
    assert_eq!(inventory.stock("bolt").unwrap(), 4);
}

#[test]
fn an_async_methods_latency_holds_its_slot_on_the_registrys_clock() {
    let (clock, registry) = manual();
    let inventory = ResilientInventory::new(Shelves, &registry).unwrap();
    let snapshot = registry.chaos("inventory-slow").unwrap().snapshot();
    assert_eq!(
        snapshot.latency,
        ChaosLatency::fixed(Duration::from_millis(200))
    );
    let mut first = pin!(inventory.stock_async("bolt"));
    assert!(poll(first.as_mut()).is_pending());
    let bulkhead = registry.bulkhead("inventory-slow").unwrap();
    assert_eq!(bulkhead.snapshot().concurrent_calls, 1);
    let mut second = pin!(inventory.stock_async("nut"));
    match poll(second.as_mut()) {
        Poll::Ready(Err(error)) => assert_eq!(error.full(), Some("inventory-slow")),
        other => panic!("{other:?}"),
    }
    clock.advance(Duration::from_millis(200));
    assert!(matches!(poll(first.as_mut()), Poll::Ready(Ok(4))));
}

#[chaos(name = "chaos-fn", enabled = true, fault_rate = 1.0, seed = 1)]
fn priced(item: &str) -> Result<u32, Rejection> {
    Ok(item.len() as u32)
}

#[chaos(name = "chaos-fn-async", enabled = true, fault_rate = 1.0, seed = 1)]
async fn priced_async(item: &str) -> Result<u32, Rejection> {
    Ok(item.len() as u32)
}

#[test]
fn functions_with_a_body_are_under_chaos_sync_and_async() {
    assert_eq!(priced("bolt").unwrap_err().kind(), RejectionKind::Injected);
    let result = pin!(priced_async("bolt"));
    match poll(result) {
        Poll::Ready(Err(rejection)) => assert_eq!(rejection.kind(), RejectionKind::Injected),
        other => panic!("{other:?}"),
    }
    assert!(
        Registry::global()
            .chaos("chaos-fn")
            .unwrap()
            .snapshot()
            .enabled
    );
}
