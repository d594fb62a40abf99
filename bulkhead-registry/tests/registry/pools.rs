//! Shared pools through the registry (the README's *Reserved slots and
//! borrowing*): bulkheads on a resource reserve part of its budget and
//! borrow the rest; the reservations are what the budget bounds.

use std::time::Duration;

use bulkhead_registry::{Pipeline, Registry};

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
    let available = |id: &str| registry.bulkhead(id).unwrap().snapshot().available;
    assert_eq!((available("reports"), available("payments")), (5, 4));
    let held: Vec<_> = (0..7).filter_map(|_| reports.try_enter().ok()).collect();
    assert_eq!(held.len(), 5, "3 reserved and the 2 nobody reserved");
    // Payments' limit is 7, but only their 2 reserved slots are free.
    assert_eq!((available("reports"), available("payments")), (0, 2));
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

#[test]
fn a_reload_that_takes_a_bulkhead_off_its_resource_takes_it_off_the_pool() {
    let toml = |resource: &str| {
        format!(
            "[resources.db]\nbudget = 2\n\n\
             [bulkhead.instances.reports]\nmax_concurrent = 4\nreserved = 1\n{resource}"
        )
    };
    let registry = Registry::builder()
        .config_toml(&toml("resource = \"db\"\n"))
        .unwrap()
        .try_build()
        .unwrap();
    Pipeline::builder(&registry, "reports")
        .bulkhead(|b| b)
        .build()
        .unwrap();
    let reports = registry.bulkhead("reports").unwrap().bulkhead().clone();
    let held: Vec<_> = (0..2).map(|_| reports.try_enter().unwrap()).collect();
    assert!(reports.try_enter().is_err(), "1 reserved + 1 unreserved");

    registry.reload_toml(&toml("")).unwrap();
    assert!(!reports.is_pooled());
    assert_eq!(registry.resource_usage("db"), Some((2, 0)));
    let more: Vec<_> = (0..2).map(|_| reports.try_enter().unwrap()).collect();
    assert!(reports.try_enter().is_err(), "its own limit of 4");
    drop((held, more));
    assert_eq!(reports.concurrent_calls(), 0);
}

#[test]
fn a_reload_moves_a_live_bulkhead_to_its_new_resources_pool_with_its_calls() {
    let toml = |resource: &str| {
        format!(
            "[resources.db]\nbudget = 3\n\n[resources.cache]\nbudget = 2\n\n\
             [bulkhead.instances.mover]\nmax_concurrent = 3\nreserved = 1\nresource = \"{resource}\"\n\n\
             [bulkhead.instances.stays]\nmax_concurrent = 2\nreserved = 1\nresource = \"cache\"\n"
        )
    };
    let registry = Registry::builder()
        .config_toml(&toml("db"))
        .unwrap()
        .try_build()
        .unwrap();
    let declare = |id: &str| {
        Pipeline::builder(&registry, id)
            .bulkhead(|b| b)
            .build()
            .unwrap();
        registry.bulkhead(id).unwrap().bulkhead().clone()
    };
    let (mover, stays) = (declare("mover"), declare("stays"));
    let held: Vec<_> = (0..3).map(|_| mover.try_enter().unwrap()).collect();
    assert_eq!(mover.borrowed(), 2, "borrows db's 2 unreserved slots");

    let changes = registry.reload_toml(&toml("cache")).unwrap();
    let moved = changes.iter().find(|c| c.instance == "mover").unwrap();
    assert!(moved.applied, "{changes:?}");
    assert_eq!(registry.resource_usage("cache"), Some((2, 2)));
    assert_eq!(registry.resource_usage("db"), Some((3, 0)));
    // cache has no unreserved slot: its 2 calls past the reservation are
    // borrowed past the budget, and `stays` keeps its own slot.
    assert_eq!((mover.reserved(), mover.borrowed()), (1, 2));
    let own = stays.try_enter().expect("a reserved slot is always there");
    assert!(stays.try_enter().is_err() && mover.try_enter().is_err());
    drop(held);
    assert_eq!(mover.borrowed(), 0);
    let mine = mover.try_enter().expect("its reserved slot on cache");
    assert!(mover.try_enter().is_err(), "cache has nothing to lend");
    drop((own, mine));

    // And back: db lends again.
    registry.reload_toml(&toml("db")).unwrap();
    let held: Vec<_> = (0..3).map(|_| mover.try_enter().unwrap()).collect();
    assert!(mover.try_enter().is_err());
    drop(held);
}

#[test]
fn a_bulkhead_moves_through_any_number_of_resources_and_the_accounting_follows_it() {
    // Resources m1-m6 (budgets 5, 4, 10, 10, 3, 6); mv-a (reserving 2 of
    // its 4) moved by reloads m1 -> m2 -> ... -> m6 -> m1 -> m4, and
    // `other` one step behind it, onto the resource mv-a just left,
    // reserving all of it. Every move applies, `resource_usage` counts
    // each reservation on the pool its bulkhead is on, and `other` gets
    // every reserved slot at once: nothing of mv-a is left behind.
    const BUDGETS: [(&str, u32); 6] = [
        ("m1", 5),
        ("m2", 4),
        ("m3", 10),
        ("m4", 10),
        ("m5", 3),
        ("m6", 6),
    ];
    let budget = |resource: &str| BUDGETS.iter().find(|(r, _)| *r == resource).unwrap().1;
    let toml = |mover: &str, other: &str| {
        let mut toml: String = BUDGETS
            .iter()
            .map(|(r, budget)| format!("[resources.{r}]\nbudget = {budget}\n\n"))
            .collect();
        toml += &format!(
            "[bulkhead.instances.mv-a]\nmax_concurrent = 4\nreserved = 2\nresource = \"{mover}\"\n\n"
        );
        let all = budget(other);
        toml += &format!(
            "[bulkhead.instances.other]\nmax_concurrent = {all}\nresource = \"{other}\"\n"
        );
        toml
    };
    let registry = Registry::builder()
        .config_toml(&toml("m1", "m6"))
        .unwrap()
        .try_build()
        .unwrap();
    for id in ["mv-a", "other"] {
        Pipeline::builder(&registry, id)
            .bulkhead(|b| b)
            .build()
            .unwrap();
    }
    let mover = registry.bulkhead("mv-a").unwrap().bulkhead().clone();
    let other = registry.bulkhead("other").unwrap().bulkhead().clone();
    let mut at = "m1";
    for (step, to) in ["m2", "m3", "m4", "m5", "m6", "m1", "m4"]
        .into_iter()
        .enumerate()
    {
        let changes = registry.reload_toml(&toml(to, at)).unwrap();
        for id in ["mv-a", "other"] {
            let change = changes.iter().find(|c| c.instance == id);
            assert_eq!(
                change.map(|c| c.applied),
                Some(true),
                "{id}, move {step} to {to}"
            );
        }
        for (resource, budget) in BUDGETS {
            let reserved = match resource {
                r if r == to => 2,
                r if r == at => budget,
                _ => 0,
            };
            assert_eq!(
                registry.resource_usage(resource),
                Some((budget, u64::from(reserved))),
                "{resource} after move {step} to {to}"
            );
        }
        // mv-a: its slots on the new pool, as far as it lends.
        let held: Vec<_> = (0..budget(to).min(4))
            .map(|_| mover.try_enter().expect("a slot on the new pool"))
            .collect();
        assert!(mover.try_enter().is_err());
        drop(held);
        // other: all of the pool mv-a left, at once.
        let all: Vec<_> = (0..budget(at))
            .map(|_| other.try_enter().expect("a reserved slot at once"))
            .collect();
        assert!(other.try_enter().is_err());
        drop(all);
        at = to;
    }
}
