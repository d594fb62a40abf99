//! The Lua scripts against a real Redis, with explicit arguments: the
//! allocation, the hold on an empty Redis, two-phase shrinks, stale and
//! lost requests, rejoining with calls in flight, budgets, expiry, and the
//! invariant over random sequences of requests; and the fencing on highly
//! available Redis: nothing written or granted by a replica (F1), the hold
//! on a promoted node (F3), and `EVAL` after `NOSCRIPT`.

use bulkhead_fleet::__scripts::{ACQUIRE, ALLOCATE, LEAVE, allocate};
use proptest::prelude::*;
use redis::Script;

use std::time::Duration;

use crate::registry::{config, member};
use crate::support::{RedisServer, wait_for};

const LEASE: u64 = 60_000;

/// The keys of resource `db` under `prefix`.
fn keys(prefix: &str) -> (String, String) {
    (
        format!("bulkhead:{{{prefix}:db}}:meta"),
        format!("bulkhead:{{{prefix}:db}}:procs"),
    )
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Reply {
    status: String,
    epoch: String,
    grant: u32,
    target: u32,
    processes: u32,
    budget: u32,
    recover_ms: u64,
    held: u32,
    owned: u32,
    fallback: u32,
    exp: u64,
}

/// One process's side, driving `acquire` by hand.
struct Proc {
    pid: String,
    seq: u64,
    acked: u64,
    epoch: String,
    prefix: String,
    /// The `exp` of the reply to `acked`.
    acked_exp: u64,
    /// The fallback its `on_unreachable` asks for, and the one it was told.
    asks: u32,
    fallback: u32,
    lease: u64,
    /// The most it could use (its bulkheads' limits).
    ceiling: u32,
}

impl Proc {
    fn new(prefix: &str, pid: &str) -> Self {
        Proc {
            pid: pid.to_owned(),
            seq: 0,
            acked: 0,
            epoch: String::new(),
            prefix: prefix.to_owned(),
            acked_exp: 0,
            asks: 0,
            fallback: 0,
            lease: LEASE,
            ceiling: 100,
        }
    }

    /// Its leases last `lease` ms.
    fn lease(mut self, lease: u64) -> Self {
        self.lease = lease;
        self
    }

    /// Its `on_unreachable` asks for `asks` slots.
    fn asks(mut self, asks: u32) -> Self {
        self.asks = asks;
        self
    }

    fn acquire(
        &mut self,
        con: &mut redis::Connection,
        held: u32,
        demand: u32,
        budget: u32,
        lease_valid: bool,
    ) -> Reply {
        self.seq += 1;
        let r = self.send(
            con,
            self.seq,
            held,
            demand,
            budget,
            lease_valid,
            self.ceiling,
            self.lease,
        );
        if r.status == "ok" {
            self.acked = self.seq;
            self.epoch = r.epoch.clone();
            self.acked_exp = r.exp;
            self.fallback = r.fallback;
        }
        r
    }

    #[allow(clippy::too_many_arguments)]
    fn send(
        &self,
        con: &mut redis::Connection,
        seq: u64,
        held: u32,
        demand: u32,
        budget: u32,
        lease_valid: bool,
        ceiling: u32,
        lease: u64,
    ) -> Reply {
        let (meta, procs) = keys(&self.prefix);
        type Raw = (String, String, u32, u32, u32, u32, u64, u32, u32, u32, u64);
        let value: redis::Value = Script::new(ACQUIRE)
            .key(meta)
            .key(procs)
            .arg(&self.pid)
            .arg(seq)
            .arg(self.acked)
            .arg(&self.epoch)
            .arg(held)
            .arg(demand)
            .arg(lease)
            .arg(budget)
            .arg(u8::from(lease_valid))
            .arg(ceiling)
            .arg(self.acked_exp)
            .arg(self.asks)
            .arg(self.fallback)
            .invoke(con)
            .unwrap();
        // A node that is not the primary: {'replica', role}.
        if let Ok((status, role)) = redis::from_redis_value_ref::<(String, String)>(&value) {
            assert_eq!(status, "replica", "{value:?}");
            return Reply {
                status,
                epoch: role,
                grant: 0,
                target: 0,
                processes: 0,
                budget: 0,
                recover_ms: 0,
                held: 0,
                owned: 0,
                fallback: 0,
                exp: 0,
            };
        }
        let raw: Raw = redis::from_redis_value(value).unwrap();
        Reply {
            status: raw.0,
            epoch: raw.1,
            grant: raw.2,
            target: raw.3,
            processes: raw.4,
            budget: raw.5,
            recover_ms: raw.6,
            held: raw.7,
            owned: raw.8,
            fallback: raw.9,
            exp: raw.10,
        }
    }
}

/// A state with no recovery hold, as a fleet finds it after its first
/// lease.
fn settled(redis: &RedisServer, prefix: &str) {
    let (meta, _) = keys(prefix);
    let _: () = redis.cmd(&[
        "HSET",
        &meta,
        "epoch",
        "e0",
        "created",
        "0",
        "recover_until",
        "0",
    ]);
}

fn held_sum(redis: &RedisServer, prefix: &str) -> u32 {
    let (_, procs) = keys(prefix);
    let records: Vec<String> = redis.cmd(&["HVALS", &procs]);
    records
        .iter()
        .map(|r| r.split(':').next().unwrap().parse::<u32>().unwrap())
        .sum()
}

#[test]
fn an_empty_redis_grants_nothing_for_one_lease() {
    let redis = RedisServer::start();
    let mut con = redis.connection();
    let mut a = Proc::new("hold", "a");
    let r = a.acquire(&mut con, 0, 4, 10, false);
    assert_eq!((r.status.as_str(), r.grant, r.target), ("ok", 0, 10));
    assert!(r.recover_ms > LEASE - 1000, "{r:?}");
}

#[test]
fn the_lua_allocation_is_the_rust_port() {
    let redis = RedisServer::start();
    let con = std::cell::RefCell::new(redis.connection());
    let script = Script::new(ALLOCATE);
    let mut runner = proptest::test_runner::TestRunner::new(proptest::test_runner::Config {
        cases: 200,
        ..Default::default()
    });
    let strategy = (
        0u32..120,
        proptest::collection::vec((0u32..40, 0u32..40), 1..10),
    );
    runner
        .run(&strategy, |(budget, claims)| {
            let ids: Vec<String> = (0..claims.len())
                .map(|i| format!("p{}", (i * 7) % 10))
                .collect();
            let mut invocation = script.prepare_invoke();
            invocation.arg(budget);
            let mut rust = Vec::new();
            for (id, &(demand, ceiling)) in ids.iter().zip(&claims) {
                let demand = demand.min(ceiling);
                invocation.arg(id).arg(demand).arg(ceiling);
                rust.push((id.as_str(), demand, ceiling));
            }
            let lua: Vec<u32> = invocation.invoke(&mut *con.borrow_mut()).unwrap();
            prop_assert_eq!(lua, allocate(budget, &rust));
            Ok(())
        })
        .unwrap();
}

#[test]
fn demands_are_shared_max_min_fair() {
    let redis = RedisServer::start();
    settled(&redis, "fair");
    let mut con = redis.connection();
    let mut procs: Vec<Proc> = ["a", "b", "c", "d"]
        .iter()
        .map(|p| Proc::new("fair", p))
        .collect();
    // Everyone reports its demand, then asks again to see the others'.
    for (p, demand) in procs.iter_mut().zip([2, 4, 6, 8]) {
        p.acquire(&mut con, 0, demand, 10, false);
    }
    let mut targets = Vec::new();
    for (p, demand) in procs.iter_mut().zip([2, 4, 6, 8]) {
        let held = 0;
        targets.push(p.acquire(&mut con, held, demand, 10, true).target);
    }
    assert_eq!(targets, [2, 2, 3, 3]);
}

#[test]
fn a_shrink_is_granted_at_once_and_its_slots_stay_held_until_acknowledged() {
    let redis = RedisServer::start();
    settled(&redis, "shrink");
    let mut con = redis.connection();
    let mut a = Proc::new("shrink", "a");
    let mut b = Proc::new("shrink", "b");
    assert_eq!(a.acquire(&mut con, 0, 10, 10, false).grant, 10);
    // b joins: nothing is free, so it gets nothing yet.
    assert_eq!(b.acquire(&mut con, 0, 10, 10, false).grant, 0);
    // a is told its smaller share at once, and keeps 10 held...
    let r = a.acquire(&mut con, 10, 10, 10, true);
    assert_eq!((r.grant, r.held), (5, 10));
    assert_eq!(b.acquire(&mut con, 0, 10, 10, true).grant, 0);
    // ...until it reports that its calls fit the 5.
    let r = a.acquire(&mut con, 5, 10, 10, true);
    assert_eq!((r.grant, r.held, r.owned), (5, 5, 5));
    assert_eq!(b.acquire(&mut con, 0, 10, 10, true).grant, 5);
    assert!(held_sum(&redis, "shrink") <= 10);
}

#[test]
fn a_replayed_request_is_stale_and_changes_nothing() {
    let redis = RedisServer::start();
    settled(&redis, "stale");
    let mut con = redis.connection();
    let mut a = Proc::new("stale", "a");
    a.acquire(&mut con, 0, 3, 10, false);
    a.acquire(&mut con, 3, 3, 10, true);
    let replay = a.send(&mut con, 1, 9, 9, 10, true, 100, LEASE);
    assert_eq!(replay.status, "stale");
    assert_eq!(held_sum(&redis, "stale"), 10, "a holds the whole budget");
}

#[test]
fn after_a_flushall_veterans_keep_their_bound_and_nobody_grows_for_one_lease() {
    let redis = RedisServer::start();
    settled(&redis, "flush");
    let mut con = redis.connection();
    let mut a = Proc::new("flush", "a");
    let mut b = Proc::new("flush", "b");
    a.acquire(&mut con, 0, 8, 10, false);
    a.acquire(&mut con, 8, 8, 10, true);
    let _: () = redis.cmd(&["FLUSHALL"]);
    // A newcomer first: it gets nothing, whatever is "free".
    let r = b.acquire(&mut con, 0, 8, 10, false);
    assert_eq!(r.grant, 0);
    assert!(r.recover_ms > 0);
    // The veteran's bound is adopted: it keeps what it had, no more.
    let r = a.acquire(&mut con, 8, 8, 10, true);
    assert_eq!(
        (r.grant, r.owned),
        (5, 8),
        "shrinks toward its target, keeps 8 held"
    );
    assert_eq!(b.acquire(&mut con, 0, 8, 10, true).grant, 0, "recovering");
    assert!(held_sum(&redis, "flush") <= 10);
}

#[test]
fn a_rejoining_process_owns_nothing_and_its_excess_never_becomes_a_grant() {
    let redis = RedisServer::start();
    settled(&redis, "rejoin");
    let mut con = redis.connection();
    let mut a = Proc::new("rejoin", "a");
    let mut b = Proc::new("rejoin", "b");
    // b uses 8 (its ceiling): 2 are free.
    b.send(&mut con, 1, 0, 8, 10, false, 8, LEASE);
    b.seq = 1;
    // a's lease ran out (reaped); it comes back with 2 calls still in
    // flight: they are counted in its bound, never granted.
    let r = a.acquire(&mut con, 2, 8, 10, false);
    assert_eq!((r.grant, r.held, r.owned), (0, 2, 0), "{r:?}");
    let r = a.acquire(&mut con, 2, 8, 10, true);
    assert_eq!((r.grant, r.owned), (0, 0), "the excess drains first: {r:?}");
    // Once they ended, the 2 free slots are its.
    let r = a.acquire(&mut con, 0, 8, 10, true);
    assert_eq!((r.grant, r.held, r.owned), (2, 2, 2), "{r:?}");
    assert!(held_sum(&redis, "rejoin") <= 10);
}

#[test]
fn the_smallest_budget_of_any_live_process_is_the_fleets() {
    let redis = RedisServer::start();
    settled(&redis, "budget");
    let mut con = redis.connection();
    let mut a = Proc::new("budget", "a");
    let mut b = Proc::new("budget", "b");
    a.acquire(&mut con, 0, 10, 20, false);
    let r = b.acquire(&mut con, 0, 10, 6, false);
    assert_eq!(r.budget, 6);
    let r = a.acquire(&mut con, 0, 10, 20, true);
    assert_eq!((r.budget, r.target), (6, 3));
}

#[test]
fn a_lease_is_reaped_once_it_ran_out_on_redis_clock_and_leave_frees_it_at_once() {
    let redis = RedisServer::start();
    settled(&redis, "reap");
    let mut con = redis.connection();
    let a = Proc::new("reap", "a");
    let r = a.send(&mut con, 1, 0, 5, 10, false, 5, 200);
    assert_eq!(r.grant, 5);
    let mut b = Proc::new("reap", "b");
    assert_eq!(b.acquire(&mut con, 0, 10, 10, false).grant, 5);
    std::thread::sleep(std::time::Duration::from_millis(250));
    let r = b.acquire(&mut con, 5, 10, 10, true);
    assert_eq!((r.grant, r.processes), (10, 1), "a's lease ran out");
    // leave: gone at once when nothing is in flight.
    let (meta, procs) = keys("reap");
    let left: i64 = Script::new(LEAVE)
        .key(&meta)
        .key(&procs)
        .arg("b")
        .arg(b.seq + 1)
        .arg(0)
        .invoke(&mut con)
        .unwrap();
    assert_eq!(left, 1);
    assert_eq!(held_sum(&redis, "reap"), 0);
}

#[test]
fn held_bounds_never_exceed_the_budget_over_random_requests() {
    // Processes that keep the protocol's promise (they report a bound of
    // at least their calls, apply no more than they were granted) and
    // sometimes lose their lease: Σ held stays within the budget.
    let redis = RedisServer::start();
    let con = std::cell::RefCell::new(redis.connection());
    let mut runner = proptest::test_runner::TestRunner::new(proptest::test_runner::Config {
        cases: 24,
        ..Default::default()
    });
    // Each step: who, its demand, its calls (0 one ends, 1 as they are, 2
    // one more if its limit allows), and what happens to its lease (0..=3
    // renewed; 4 ran out here, fallback closed, record still on Redis;
    // 5 reaped on Redis, after its calls drained within the margin).
    let steps = proptest::collection::vec((0usize..4, 1u32..12, 0u32..3, 0u8..6), 1..60);
    let round = std::cell::Cell::new(0);
    runner
        .run(&steps, |steps| {
            round.set(round.get() + 1);
            let prefix = format!("random{}", round.get());
            settled(&redis, &prefix);
            let mut procs: Vec<Proc> = (0..4)
                .map(|i| Proc::new(&prefix, &format!("p{i}")))
                .collect();
            let mut limit = [0u32; 4];
            let mut in_flight = [0u32; 4];
            let mut valid = [false; 4];
            for (who, demand, calls, lease) in steps {
                in_flight[who] = match calls {
                    0 => in_flight[who].saturating_sub(1),
                    1 => in_flight[who],
                    _ if in_flight[who] < limit[who] => in_flight[who] + 1,
                    _ => in_flight[who],
                };
                match lease {
                    4 => {
                        limit[who] = 0;
                        valid[who] = false;
                    }
                    5 => {
                        let (_, procs_key) = keys(&prefix);
                        let _: () = redis.cmd(&["HDEL", &procs_key, &procs[who].pid]);
                        limit[who] = 0;
                        in_flight[who] = 0;
                        valid[who] = false;
                    }
                    _ => {}
                }
                let held = limit[who].max(in_flight[who]);
                let r = procs[who].acquire(&mut con.borrow_mut(), held, demand, 10, valid[who]);
                limit[who] = r.grant;
                valid[who] = true;
                let total = held_sum(&redis, &prefix);
                prop_assert!(total <= 10, "Σ held {total} > 10");
                let bound: u32 = (0..4).map(|i| limit[i].max(in_flight[i])).sum();
                prop_assert!(
                    bound <= 10,
                    "Σ bound {bound} > 10: limits {limit:?} in flight {in_flight:?}"
                );
            }
            Ok(())
        })
        .unwrap();
}

/// The recovery hold of the whole fleet opens when a record Redis should
/// still have is missing; not when a request held up on the way comes
/// after its own lease ran out (its record reaped, as it should be).
#[test]
fn a_request_that_comes_after_its_lease_ran_out_is_no_lost_write() {
    let redis = RedisServer::start();
    settled(&redis, "late");
    let mut con = redis.connection();
    let mut a = Proc::new("late", "a").lease(200);
    let mut b = Proc::new("late", "b").lease(200);
    a.acquire(&mut con, 0, 2, 10, false);
    b.acquire(&mut con, 0, 8, 10, false);
    assert!(a.acquire(&mut con, 2, 2, 10, true).exp > 0);
    // Sent while a's lease was valid, delivered once it ran out on Redis
    // (b kept renewing meanwhile).
    for _ in 0..5 {
        std::thread::sleep(std::time::Duration::from_millis(60));
        b.acquire(&mut con, 8, 8, 10, true);
    }
    let r = a.acquire(&mut con, 2, 2, 10, true);
    assert_eq!((r.status.as_str(), r.recover_ms), ("ok", 0), "{r:?}");
    assert_eq!((r.grant, r.owned), (0, 0), "b holds the rest: {r:?}");
    let r = b.acquire(&mut con, 8, 8, 10, true);
    assert_eq!(r.recover_ms, 0, "the fleet is not held: {r:?}");
    // A record missing while its lease runs still opens the hold.
    let mut c = Proc::new("late", "c");
    c.acquire(&mut con, 0, 1, 10, false);
    c.acquire(&mut con, 1, 1, 10, true);
    let (_, procs) = keys("late");
    let _: () = redis.cmd(&["HDEL", &procs, "c"]);
    let r = c.acquire(&mut con, 1, 1, 10, true);
    assert!(r.recover_ms > 0, "a lost write: {r:?}");
}

/// Redis back after the whole fleet lost it for longer than a lease, its
/// data intact: the processes may be on their fallbacks, which no record
/// counts any more, so nobody grows for one lease. A process that died
/// while the others kept renewing opens no hold.
#[test]
fn a_lease_that_ran_out_while_nobody_reached_redis_holds_every_grant_for_a_lease() {
    let redis = RedisServer::start();
    settled(&redis, "silence");
    let mut con = redis.connection();
    let mut a = Proc::new("silence", "a").lease(300);
    let mut b = Proc::new("silence", "b").lease(300);
    let mut c = Proc::new("silence", "c").lease(300);
    for p in [&mut a, &mut b, &mut c] {
        p.acquire(&mut con, 0, 2, 10, false);
    }
    // c dies; a and b renew every 100 ms: c's lease runs out, no hold.
    for _ in 0..5 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        a.acquire(&mut con, 2, 2, 10, true);
        let r = b.acquire(&mut con, 2, 2, 10, true);
        assert_eq!(r.recover_ms, 0, "{r:?}");
    }
    assert_eq!(b.acquire(&mut con, 2, 2, 10, true).processes, 2);
    // Nobody reaches Redis for more than a lease.
    std::thread::sleep(std::time::Duration::from_millis(400));
    let r = a.acquire(&mut con, 3, 8, 10, false);
    assert!(r.recover_ms > 0, "{r:?}");
    assert_eq!((r.grant, r.owned), (0, 0), "{r:?}");
    let r = b.acquire(&mut con, 3, 8, 10, false);
    assert_eq!(r.grant, 0, "{r:?}");
    assert!(held_sum(&redis, "silence") <= 10);
}

/// The fallbacks the fleet tells its processes add up to at most the
/// budget: max-min fair on what each asks for, a smaller one told at once
/// and recorded until the process reports it.
#[test]
fn the_fallbacks_are_shared_max_min_fair_and_add_up_to_at_most_the_budget() {
    let redis = RedisServer::start();
    settled(&redis, "fallback");
    let mut con = redis.connection();
    // Two that ask for the whole budget (even_share) and one for 2 slots.
    let mut a = Proc::new("fallback", "a").asks(10);
    let mut b = Proc::new("fallback", "b").asks(10);
    let mut c = Proc::new("fallback", "c").asks(2);
    assert_eq!(a.acquire(&mut con, 0, 1, 10, false).fallback, 10, "alone");
    // b asks while a holds the whole budget as its fallback: nothing yet.
    assert_eq!(b.acquire(&mut con, 0, 1, 10, false).fallback, 0);
    // a is told 5 at once; its 10 stay recorded until it reports the 5.
    assert_eq!(a.acquire(&mut con, 0, 1, 10, true).fallback, 5);
    assert_eq!(b.acquire(&mut con, 0, 1, 10, true).fallback, 0);
    assert_eq!(a.acquire(&mut con, 0, 1, 10, true).fallback, 5);
    assert_eq!(b.acquire(&mut con, 0, 1, 10, true).fallback, 5);
    // c asks for 2: max-min fair, 4 4 2 once everyone reported.
    assert_eq!(c.acquire(&mut con, 0, 1, 10, false).fallback, 0);
    for _ in 0..3 {
        for p in [&mut a, &mut b, &mut c] {
            p.acquire(&mut con, 0, 1, 10, true);
        }
    }
    assert_eq!((a.fallback, b.fallback, c.fallback), (4, 4, 2));
    // A closed process asks for nothing and gets nothing.
    let mut d = Proc::new("fallback", "d");
    for _ in 0..3 {
        for p in [&mut a, &mut b, &mut c, &mut d] {
            p.acquire(&mut con, 0, 1, 10, true);
        }
    }
    assert_eq!(
        (a.fallback, b.fallback, c.fallback, d.fallback),
        (4, 4, 2, 0)
    );
}

#[test]
fn recorded_fallbacks_never_exceed_the_budget_over_random_requests() {
    // Processes ask for random fallbacks, join, renew and lose replies
    // (they then keep reporting the fallback they were told before): the
    // fallbacks recorded, and those the processes may use, stay within
    // the budget.
    let redis = RedisServer::start();
    let con = std::cell::RefCell::new(redis.connection());
    let mut runner = proptest::test_runner::TestRunner::new(proptest::test_runner::Config {
        cases: 24,
        ..Default::default()
    });
    let steps = proptest::collection::vec((0usize..4, 0u32..12, any::<bool>()), 1..60);
    let round = std::cell::Cell::new(0);
    runner
        .run(&steps, |steps| {
            round.set(round.get() + 1);
            let prefix = format!("fallbacks{}", round.get());
            settled(&redis, &prefix);
            let mut procs: Vec<Proc> = (0..4)
                .map(|i| Proc::new(&prefix, &format!("p{i}")))
                .collect();
            for (who, asks, lost) in steps {
                let p = &mut procs[who];
                p.asks = asks;
                let kept = p.fallback;
                let valid = p.acked > 0;
                let r = p.acquire(&mut con.borrow_mut(), 0, 1, 10, valid);
                if lost {
                    // The reply never arrived: it still uses what it had.
                    p.fallback = kept;
                }
                let (_, procs_key) = keys(&prefix);
                let records: Vec<String> = redis.cmd(&["HVALS", &procs_key]);
                let recorded: u32 = records
                    .iter()
                    .map(|r| r.split(':').nth(7).unwrap().parse::<u32>().unwrap())
                    .sum();
                prop_assert!(
                    recorded <= 10,
                    "Σ recorded fallbacks {recorded} > 10: {r:?}"
                );
                let used: u32 = procs.iter().map(|p| p.fallback).sum();
                prop_assert!(used <= 10, "Σ fallbacks in use {used} > 10");
            }
            Ok(())
        })
        .unwrap();
}

/// One field of `INFO <section>`.
fn info(redis: &RedisServer, section: &str, field: &str) -> Option<String> {
    let text: String = redis.cmd(&["INFO", section]);
    text.lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .map(str::to_owned)
}

/// `replica` made a replica of `primary`, its first sync done.
fn replicate(primary: &RedisServer, replica: &RedisServer) {
    let _: () = primary.cmd(&["CONFIG", "SET", "repl-diskless-sync-delay", "0"]);
    let _: () = replica.cmd(&["REPLICAOF", "127.0.0.1", &primary.port.to_string()]);
    let synced = wait_for(Duration::from_secs(10), || {
        info(replica, "replication", "master_link_status").as_deref() == Some("up")
    });
    assert!(synced.is_some(), "the replica never synced");
}

fn exists(redis: &RedisServer, prefix: &str) -> i64 {
    let (meta, procs) = keys(prefix);
    redis.cmd(&["EXISTS", &meta, &procs])
}

/// F1: a replica, even a writable one (`replica-read-only no`, whose
/// writes no primary ever sees), writes and grants nothing; the client
/// gets a `READONLY` error that names the role.
#[test]
fn a_replica_writes_and_grants_nothing_and_the_client_gets_readonly() {
    let primary = RedisServer::start();
    let replica = RedisServer::start();
    replicate(&primary, &replica);
    let _: () = replica.cmd(&["CONFIG", "SET", "replica-read-only", "no"]);
    // Writes are accepted there...
    let _: () = replica.cmd(&["SET", "bulkhead:probe", "1"]);
    // ...but not the script's.
    let mut con = replica.connection();
    let mut a = Proc::new("replica", "a");
    let r = a.acquire(&mut con, 0, 4, 10, false);
    assert_eq!((r.status.as_str(), r.epoch.as_str()), ("replica", "slave"));
    assert_eq!(exists(&replica, "replica"), 0, "nothing written");
    // Through the library: the fleet's request fails with READONLY.
    let (registry, _bulkhead) = member(config(&replica, "replica"), "replica-a", 10);
    let failed = wait_for(Duration::from_secs(5), || {
        registry.snapshot().fleets()[0].last_error.is_some()
    });
    assert!(failed.is_some(), "{:?}", registry.snapshot().fleets());
    let fleet = registry.snapshot().fleets()[0].clone();
    let error = fleet.last_error.clone().unwrap_or_default();
    assert!(error.contains("role:slave"), "{error}");
    assert!(error.to_lowercase().contains("readonly"), "{error}");
    assert_eq!((fleet.share, fleet.renewals), (0, 0), "{fleet:?}");
    assert_eq!(exists(&replica, "replica"), 0, "nothing written");
    assert_eq!(exists(&primary, "replica"), 0);
}

/// F3: a meta recorded by another node (another `replid`) holds every
/// process at what it owns for one lease; a meta without the field (an
/// older version's) gets it recorded, with no hold.
#[test]
fn another_nodes_replid_holds_growth_for_a_lease() {
    let redis = RedisServer::start();
    settled(&redis, "replid");
    let (meta, _) = keys("replid");
    let mut con = redis.connection();
    let mut a = Proc::new("replid", "a");
    let mut b = Proc::new("replid", "b");
    a.ceiling = 4;
    let r = a.acquire(&mut con, 0, 4, 10, false);
    assert_eq!((r.grant, r.recover_ms), (4, 0), "no hold: {r:?}");
    let own = info(&redis, "replication", "master_replid").unwrap();
    let recorded: Option<String> = redis.cmd(&["HGET", &meta, "replid"]);
    assert_eq!(recorded.as_deref(), Some(own.as_str()));
    // Recorded by another node, as a promoted replica finds it.
    let _: () = redis.cmd(&["HSET", &meta, "replid", &"0".repeat(40)]);
    // Without the hold it would get its target, 8: 6 slots are free.
    a.ceiling = 8;
    let r = a.acquire(&mut con, 4, 8, 10, true);
    assert!(
        r.recover_ms > LEASE - 1000 && r.recover_ms <= LEASE,
        "{r:?}"
    );
    assert_eq!(
        (r.target, r.grant, r.owned),
        (8, 4, 4),
        "capped at what it owns: {r:?}"
    );
    let recorded: Option<String> = redis.cmd(&["HGET", &meta, "replid"]);
    assert_eq!(
        recorded.as_deref(),
        Some(own.as_str()),
        "the node's own now"
    );
    // The hold stays for the lease: a newcomer gets nothing.
    let r = b.acquire(&mut con, 0, 4, 10, false);
    assert!(r.recover_ms > LEASE - 1000, "{r:?}");
    assert_eq!(r.grant, 0, "{r:?}");
    assert!(held_sum(&redis, "replid") <= 10);
}

/// F3 on a real promotion: a replica promoted with `REPLICAOF NO ONE`
/// takes a new replid; its first script holds every process at what it
/// owns (its replicated record) for one lease.
#[test]
fn a_promoted_replica_holds_growth_for_a_lease() {
    let primary = RedisServer::start();
    let replica = RedisServer::start();
    replicate(&primary, &replica);
    settled(&primary, "promoted");
    let mut con = primary.connection();
    let mut a = Proc::new("promoted", "a");
    let mut b = Proc::new("promoted", "b");
    (a.ceiling, b.ceiling) = (4, 2);
    assert_eq!(a.acquire(&mut con, 0, 4, 10, false).grant, 4);
    assert_eq!(b.acquire(&mut con, 0, 2, 10, false).grant, 2);
    let acked: i64 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut con).unwrap();
    assert_eq!(acked, 1, "the replica has every write");
    let old = info(&replica, "replication", "master_replid").unwrap();
    let _: () = replica.cmd(&["REPLICAOF", "NO", "ONE"]);
    let new = info(&replica, "replication", "master_replid").unwrap();
    assert_ne!(old, new, "a promotion takes a new replid");
    // a's record is there (no lost write), and 4 slots are free: without
    // the hold it would get its target, 8.
    let mut con = replica.connection();
    a.ceiling = 8;
    let r = a.acquire(&mut con, 4, 8, 10, true);
    assert_eq!(r.status, "ok", "{r:?}");
    assert!(
        r.recover_ms > LEASE - 1000 && r.recover_ms <= LEASE,
        "{r:?}"
    );
    assert_eq!((r.target, r.grant, r.owned), (8, 4, 4), "{r:?}");
    // A newcomer's target is 2, and 2 would be free: nothing for it.
    let mut c = Proc::new("promoted", "c");
    c.ceiling = 2;
    let r = c.acquire(&mut con, 0, 2, 10, false);
    assert_eq!((r.target, r.grant), (2, 0), "{r:?}");
    // The old primary, made a replica of the new one, grants nothing.
    replicate(&replica, &primary);
    let mut con = primary.connection();
    assert_eq!(a.acquire(&mut con, 4, 8, 10, true).status, "replica");
}

/// After `SCRIPT FLUSH` (as on a promoted replica: scripts are not
/// replicated, whether loaded or run) the fleet's `EVALSHA` meets
/// `NOSCRIPT` and is sent again as `EVAL`, never as `SCRIPT LOAD`, which a
/// cluster client sends to every node.
#[test]
fn after_noscript_the_request_is_sent_again_as_eval() {
    let redis = RedisServer::start();
    let (registry, _bulkhead) = member(config(&redis, "noscript"), "noscript-a", 10);
    let joined = wait_for(Duration::from_secs(5), || {
        registry.snapshot().fleets()[0].renewals >= 2
    });
    assert!(joined.is_some(), "{:?}", registry.snapshot().fleets());
    let _: () = redis.cmd(&["CONFIG", "RESETSTAT"]);
    let _: () = redis.cmd(&["SCRIPT", "FLUSH"]);
    let before = registry.snapshot().fleets()[0].renewals;
    let renewed = wait_for(Duration::from_secs(5), || {
        registry.snapshot().fleets()[0].renewals >= before + 3
    });
    let fleet = registry.snapshot().fleets()[0].clone();
    assert!(renewed.is_some(), "{fleet:?}");
    let calls = |command: &str| -> u64 {
        info(&redis, "commandstats", &format!("cmdstat_{command}"))
            .and_then(|stats| {
                let calls = stats.split(',').next()?.strip_prefix("calls=")?;
                calls.parse().ok()
            })
            .unwrap_or(0)
    };
    assert!(calls("eval") > 0, "EVAL was sent");
    assert_eq!(calls("script|load"), 0, "no SCRIPT LOAD");
    assert!(
        calls("evalsha") > calls("eval"),
        "EVALSHA works again after"
    );
    assert_eq!(fleet.failures, 0, "{fleet:?}");
    assert_eq!(fleet.last_error, None);
}
