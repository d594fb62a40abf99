//! One process whose link to Redis stalls for longer than its lease, then
//! delivers the requests it held: Redis runs them late, after that
//! process's lease ran out and its record was reaped. That is a late answer
//! of one process, not a Redis that lost its data: the fleet is not held.

use std::time::{Duration, Instant};

use bulkhead_fleet::{FleetConfig, FleetState, OnUnreachable};
use bulkhead_registry::Registry;

use crate::proxy::Proxy;
use crate::registry::{LEASE, member, share};
use crate::support::{RedisServer, wait_for};

/// Redis's clock, in ms.
fn redis_now(redis: &RedisServer) -> u64 {
    let (secs, micros): (u64, u64) = redis.cmd(&["TIME"]);
    secs * 1000 + micros / 1000
}

/// Every registry joined, the budget shared out evenly (4 3 3: they are
/// idle), nobody held.
fn settled(registries: &[&Registry]) -> bool {
    let fleets: Vec<_> = registries
        .iter()
        .map(|r| r.snapshot().fleets()[0].clone())
        .collect();
    fleets
        .iter()
        .all(|f| f.state == FleetState::Joined && f.recovering.is_none() && f.share >= 3)
        && fleets.iter().map(|f| f.share).sum::<u32>() == 10
}

#[test]
fn a_link_that_stalls_then_delivers_its_requests_late_holds_nobody_up() {
    let redis = RedisServer::start();
    let proxy = Proxy::start(redis.port);
    let config = |url: &str| {
        FleetConfig::redis(url)
            .unwrap()
            .prefix("stall")
            .lease(LEASE)
            .on_unreachable(OnUnreachable::Closed)
    };
    let (a, _a) = member(config(&proxy.url()), "stall-a", 10);
    let (b, _b) = member(config(&redis.url()), "stall-b", 10);
    let (c, _c) = member(config(&redis.url()), "stall-c", 10);
    let all = [&a, &b, &c];
    let took = wait_for(Duration::from_secs(8), || settled(&all));
    assert!(took.is_some(), "{:?}", b.snapshot().fleets());

    proxy.stall();
    let stalled = Instant::now();
    // a cannot renew: it closes; its lease runs out on Redis and the others
    // take the whole budget.
    let took = wait_for(4 * LEASE, || {
        share(&a) == (0, FleetState::Unreachable) && share(&b).0 + share(&c).0 == 10
    });
    assert!(took.is_some(), "{:?}", b.snapshot().fleets());
    // The stall lasts two and a half leases; a's requests wait in it.
    std::thread::sleep((5 * LEASE / 2).saturating_sub(stalled.elapsed()));
    let released_at = redis_now(&redis);
    proxy.release();
    let released = Instant::now();

    let rejoined = wait_for(4 * LEASE, || share(&a).1 == FleetState::Joined);
    assert!(rejoined.is_some(), "{:?}", a.snapshot().fleets());
    // The requests a sent while its lease ran (Redis ran them after it ran
    // out) opened no recovery hold: the one Redis still has ended before
    // the release (it is the first lease of an empty Redis).
    let recover_until: u64 = redis.cmd(&["HGET", "bulkhead:{stall:db}:meta", "recover_until"]);
    assert!(
        recover_until < released_at,
        "the fleet is held until {recover_until}, the link was released at {released_at}"
    );
    let took = wait_for(4 * LEASE, || settled(&all));
    println!(
        "    the budget shared out again {:?} after the link was released",
        released.elapsed()
    );
    assert!(took.is_some(), "{:?}", b.snapshot().fleets());
}
