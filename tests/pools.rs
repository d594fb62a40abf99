//! Shared pools through the registry (the README's *Reserved slots and
//! borrowing*): bulkheads on a resource reserve part of its budget and
//! borrow the rest; the reservations are what the budget bounds.

use std::time::Duration;

use bulkhead::{Pipeline, Registry};

fn pipeline(registry: &Registry, id: &str, reserved: u32, max: u32) -> Pipeline {
    Pipeline::builder(registry, id)
        .bulkhead(|b| b.max_concurrent(max).reserved(reserved).resource("db"))
        .build()
        .unwrap()
}

#[test]
fn limits_may_exceed_the_budget_while_the_reservations_fit_it() {
    let registry = Registry::new();
    registry.resource("db", 7).unwrap();
    pipeline(&registry, "reports", 3, 7);
    pipeline(&registry, "payments", 2, 7);
    assert_eq!(registry.resource_usage("db"), Some((7, 5)));
    let over = Pipeline::builder(&registry, "exports")
        .bulkhead(|b| b.max_concurrent(7).reserved(3).resource("db"))
        .build();
    assert_eq!(over.unwrap_err().code(), "REG-010");
}

#[test]
fn reports_borrow_the_unreserved_slots_and_payments_keep_their_own() {
    let registry = Registry::new();
    registry.resource("db", 7).unwrap();
    pipeline(&registry, "reports", 3, 7);
    pipeline(&registry, "payments", 2, 7);
    let reports = registry.bulkhead("reports").unwrap().bulkhead().clone();
    let payments = registry.bulkhead("payments").unwrap().bulkhead().clone();
    let held: Vec<_> = (0..7).filter_map(|_| reports.try_enter().ok()).collect();
    assert_eq!(held.len(), 5, "3 reserved and the 2 nobody reserved");
    let snapshot = registry.bulkhead("reports").unwrap().snapshot();
    assert_eq!(
        (
            snapshot.reserved,
            snapshot.borrowed,
            snapshot.max_concurrent
        ),
        (3, 2, 7)
    );
    let paid: Vec<_> = (0..2).map(|_| payments.try_enter().unwrap()).collect();
    assert_eq!(
        registry.bulkhead("payments").unwrap().snapshot().borrowed,
        0
    );
    drop((held, paid));
}

#[test]
fn reserved_comes_from_configuration_and_is_checked_there() {
    let registry = Registry::builder()
        .config_toml(
            "[resources.db]\nbudget = 4\n\n[bulkhead.instances.orders]\nreserved = 1\nmax_concurrent = 4\n",
        )
        .unwrap()
        .build();
    Pipeline::builder(&registry, "orders")
        .bulkhead(|b| b.resource("db").max_wait(Duration::ZERO))
        .build()
        .unwrap();
    assert_eq!(registry.bulkhead("orders").unwrap().snapshot().reserved, 1);
    let bad = Registry::builder()
        .config_toml("[bulkhead.instances.x]\nreserved = 5\nmax_concurrent = 4\n")
        .map(|builder| builder.build())
        .and_then(|registry| {
            Pipeline::builder(&registry, "x")
                .bulkhead(|b| b)
                .build()
                .map(drop)
        });
    assert_eq!(bad.unwrap_err().code(), "ATR-016");
}
