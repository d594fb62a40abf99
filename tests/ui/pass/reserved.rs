// Reserved slots with borrowing, through the attributes: two bulkheads on
// one resource's budget, each keeping part of it and borrowing the rest,
// sync and async, and a function with a body.
#![allow(async_fn_in_trait)]

use bulkhead::{Registry, Rejection, bulkhead, resilient};

#[derive(Debug)]
pub struct Busy(pub Rejection);

impl From<Rejection> for Busy {
    fn from(r: Rejection) -> Self {
        Busy(r)
    }
}

#[resilient]
pub trait Shop {
    #[bulkhead(name = "reports", max_concurrent = 7, reserved = 3, resource = "db")]
    fn report(&self, id: u64) -> Result<u64, Busy>;

    #[bulkhead(name = "payments", max_concurrent = 7, reserved = 4, resource = "db")]
    async fn pay(&self, id: u64) -> Result<u64, Busy>;
}

struct Db;

impl Shop for Db {
    fn report(&self, id: u64) -> Result<u64, Busy> {
        Ok(id)
    }

    async fn pay(&self, id: u64) -> Result<u64, Busy> {
        Ok(id)
    }
}

#[bulkhead(max_concurrent = 2, reserved = 1)]
fn helper(x: u64) -> Result<u64, Busy> {
    Ok(x)
}

fn main() {
    let registry = Registry::new();
    registry.resource("db", 7).unwrap();
    let shop = ResilientShop::new(Db, &registry).unwrap();
    assert_eq!(shop.report(1).unwrap(), 1);
    let snapshot = registry.bulkhead("reports").unwrap().snapshot();
    assert_eq!(snapshot.reserved, 3);
    let _ = shop.pay(2);
    let _ = helper(3);
}
