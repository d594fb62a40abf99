//! The lease's state machine on explicit instants: when it sends, what it
//! applies, when it falls back.

use std::time::{Duration, Instant};

use bulkhead_core::FleetShareReason;

use super::{Change, Lease};
use crate::config::{FleetConfig, OnUnreachable};
use crate::script::Reply;
use bulkhead_registry::fleet::FleetState;

const LEASE: Duration = Duration::from_millis(1200);

fn lease(on_unreachable: OnUnreachable, now: Instant) -> Lease {
    let config = FleetConfig::redis("redis://127.0.0.1:1/")
        .unwrap()
        .lease(LEASE)
        .on_unreachable(on_unreachable);
    Lease::new(&config, now)
}

fn reply(grant: u32, target: u32, held: u32) -> Reply {
    Reply {
        ok: true,
        epoch: "e1".to_owned(),
        grant,
        target,
        processes: 2,
        budget: 10,
        recover_ms: 0,
        held,
        owned: grant,
        fallback: 5,
        exp: 1_000_000,
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn the_first_reply_joins_and_the_next_renewal_is_a_third_of_the_lease_later() {
    let t0 = Instant::now();
    let mut lease = lease(OnUnreachable::Closed, t0);
    assert!(lease.due(t0, 0, 3));
    let request = lease.request(t0, 0, 3, 10, 8);
    assert!(!request.lease_valid);
    assert_eq!((request.seq, request.acked, request.demand), (1, 0, 3));
    let change = lease.on_reply(t0, t0 + ms(5), &request, reply(4, 4, 4));
    assert_eq!(
        change,
        Some(Change {
            from: 0,
            to: 4,
            reason: FleetShareReason::Joined
        })
    );
    assert_eq!(lease.state, FleetState::Joined);
    assert!(!lease.due(t0 + ms(399), 4, 3));
    assert!(lease.due(t0 + ms(400), 4, 3));
    let next = lease.request(t0 + ms(400), 4, 4, 10, 8);
    assert!(next.lease_valid);
    assert_eq!(
        (next.seq, next.acked, next.seen_epoch.as_str()),
        (2, 1, "e1")
    );
}

#[test]
fn a_grant_below_its_target_polls_four_times_as_often() {
    let t0 = Instant::now();
    let mut lease = lease(OnUnreachable::Closed, t0);
    let request = lease.request(t0, 0, 8, 10, 8);
    lease.on_reply(t0, t0, &request, reply(2, 5, 2));
    assert!(!lease.due(t0 + ms(99), 2, 8));
    assert!(lease.due(t0 + ms(100), 2, 8));
}

#[test]
fn the_share_falls_back_at_send_time_plus_lease_minus_margin() {
    let t0 = Instant::now();
    let mut lease = lease(OnUnreachable::Closed, t0);
    let request = lease.request(t0, 0, 3, 10, 8);
    // A slow reply does not move the deadline: it counts from the send.
    let closed = Reply {
        fallback: 0,
        ..reply(5, 5, 5)
    };
    lease.on_reply(t0, t0 + ms(100), &request, closed);
    assert_eq!(lease.expire(t0 + ms(899)), None);
    assert_eq!(
        lease.expire(t0 + ms(900)),
        Some(Change {
            from: 5,
            to: 0,
            reason: FleetShareReason::Unreachable
        })
    );
    assert_eq!((lease.state, lease.grant), (FleetState::Unreachable, 0));
    assert_eq!(lease.expire(t0 + ms(901)), None, "once");
}

/// The rule that keeps the fleet within its budget when Redis is lost for
/// everyone: the grants of the others, made before the loss, may be in use
/// until a lease after it; until the first failure plus one lease and the
/// margin, a process keeps at most its last grant.
#[test]
fn a_fallback_rises_above_the_last_grant_only_a_lease_and_a_margin_after_the_first_failure() {
    for asks in [
        OnUnreachable::EvenShare,
        OnUnreachable::Slots(9),
        OnUnreachable::Closed,
    ] {
        let t0 = Instant::now();
        let mut lease = lease(asks, t0);
        let request = lease.request(t0, 0, 1, 10, 8);
        assert_eq!(request.asks, asks.asks(10));
        // An idle process: granted 1, its fallback 5 (Redis's word; 0 for
        // `closed`, whose asks are 0).
        let fallback = if asks == OnUnreachable::Closed { 0 } else { 5 };
        let told = Reply {
            fallback,
            ..reply(1, 1, 1)
        };
        lease.on_reply(t0, t0 + ms(2), &request, told);
        assert_eq!(lease.fallback, fallback);
        // The next renewal fails: Redis was lost before this.
        let t1 = t0 + ms(400);
        let request = lease.request(t1, 1, 1, 10, 8);
        assert_eq!(request.fallback, fallback, "reported as kept");
        lease.on_error(t1 + ms(120));
        let lost = t1 + ms(120);
        // The deadline (sent + lease - margin): its last grant at most.
        assert_eq!(
            lease.expire(t0 + ms(900)),
            Some(Change {
                from: 1,
                to: 1.min(fallback),
                reason: FleetShareReason::Unreachable
            })
        );
        assert_eq!(lease.state, FleetState::Unreachable);
        // Another failure does not move the instant of the loss.
        lease.on_error(t1 + ms(500));
        // Still at most the last grant a lease after the loss...
        let raise = lost + LEASE + ms(300);
        assert_eq!(lease.raise_at(), Some(raise));
        assert_eq!(lease.expire(raise - ms(1)), None, "{asks:?}");
        assert_eq!(lease.grant, 1.min(fallback));
        // ...then the whole fallback, once.
        let raised = lease.expire(raise);
        if fallback > 1 {
            assert_eq!(
                raised,
                Some(Change {
                    from: 1,
                    to: fallback,
                    reason: FleetShareReason::Unreachable
                })
            );
        } else {
            assert_eq!(raised, None);
        }
        assert_eq!(lease.grant, fallback);
        assert_eq!(lease.expire(raise + ms(1)), None);
    }
}

#[test]
fn a_busy_process_falls_back_at_once_to_a_fallback_below_its_grant() {
    let t0 = Instant::now();
    let mut lease = lease(OnUnreachable::EvenShare, t0);
    let request = lease.request(t0, 0, 8, 10, 8);
    lease.on_reply(t0, t0, &request, reply(8, 8, 8));
    lease.on_error(t0 + ms(500));
    assert_eq!(lease.expire(t0 + ms(900)).map(|c| c.to), Some(5));
    assert_eq!(lease.expire(t0 + ms(5000)), None, "nothing to raise");
}

#[test]
fn an_answer_after_the_first_failure_moves_the_loss_later() {
    let t0 = Instant::now();
    let mut lease = lease(OnUnreachable::EvenShare, t0);
    let request = lease.request(t0, 0, 1, 10, 8);
    lease.on_reply(t0, t0, &request, reply(1, 1, 1));
    lease.on_error(t0 + ms(200));
    lease.expire(t0 + ms(900));
    // A reply too late to use still shows that Redis ran a script then:
    // grants may have been made until then.
    let t1 = t0 + ms(300);
    let request = lease.request(t1, 1, 1, 10, 8);
    assert_eq!(
        lease.on_reply(t1, t1 + ms(950), &request, reply(1, 1, 1)),
        None
    );
    assert_eq!(lease.raise_at(), None, "Redis answered");
    assert_eq!(lease.expire(t0 + ms(5000)), None);
    lease.on_error(t1 + ms(1000));
    assert_eq!(lease.raise_at(), Some(t1 + ms(1000) + LEASE + ms(300)));
}

#[test]
fn a_process_that_never_reached_redis_falls_back_on_its_first_error_to_nothing() {
    for asks in [
        OnUnreachable::EvenShare,
        OnUnreachable::Slots(2),
        OnUnreachable::Closed,
    ] {
        let t0 = Instant::now();
        let mut lease = lease(asks, t0);
        lease.request(t0, 0, 1, 10, 8);
        assert_eq!(lease.on_error(t0 + ms(10)).map(|c| c.to), Some(0));
        assert_eq!(lease.state, FleetState::Unreachable);
        assert_eq!(lease.expire(t0 + ms(60_000)), None, "no fallback to raise");
    }
    let t0 = Instant::now();
    let mut slots = lease(OnUnreachable::Slots(2), t0);
    slots.request(t0, 0, 1, 10, 8);
    slots.on_error(t0 + ms(10));
    // It retries a twelfth of the lease after the failed request was sent,
    // not at every tick...
    assert!(!slots.due(t0 + ms(99), 2, 1));
    assert!(slots.due(t0 + ms(100), 2, 1));
    // ...and at once after a request that timed out later than that.
    slots.request(t0 + ms(100), 0, 1, 10, 8);
    slots.on_error(t0 + ms(220));
    assert!(slots.due(t0 + ms(220), 2, 1));
}

#[test]
fn the_first_reply_after_a_fallback_rejoins_without_a_valid_lease() {
    let t0 = Instant::now();
    let mut lease = lease(OnUnreachable::Slots(1), t0);
    let request = lease.request(t0, 0, 3, 10, 8);
    lease.on_reply(t0, t0, &request, reply(4, 4, 4));
    lease.expire(t0 + ms(900));
    assert_eq!(lease.grant, 4, "its grant: below its fallback of 5");
    let t1 = t0 + ms(1000);
    let request = lease.request(t1, 1, 3, 10, 8);
    assert!(!request.lease_valid);
    let change = lease.on_reply(t1, t1, &request, reply(2, 4, 2));
    assert_eq!(change.map(|c| c.reason), Some(FleetShareReason::Rejoined));
    assert_eq!(lease.grant, 2);
}

#[test]
fn a_reply_that_comes_after_its_own_deadline_is_not_applied() {
    let t0 = Instant::now();
    let mut lease = lease(OnUnreachable::Closed, t0);
    let request = lease.request(t0, 0, 3, 10, 8);
    assert_eq!(
        lease.on_reply(t0, t0 + ms(950), &request, reply(4, 4, 4)),
        None
    );
    assert_eq!((lease.state, lease.grant), (FleetState::Joining, 0));
}

#[test]
fn a_shrink_is_acknowledged_as_soon_as_the_calls_in_flight_fit() {
    let t0 = Instant::now();
    let mut lease = lease(OnUnreachable::Closed, t0);
    let request = lease.request(t0, 0, 6, 10, 8);
    lease.on_reply(t0, t0, &request, reply(6, 6, 6));
    let t1 = t0 + ms(400);
    let request = lease.request(t1, 6, 6, 10, 8);
    // Granted 3 at once, but Redis keeps 6 held until we report.
    lease.on_reply(t1, t1, &request, reply(3, 3, 6));
    assert!(!lease.due(t1 + ms(1), 5, 6), "5 calls still in flight");
    assert!(lease.due(t1 + ms(2), 3, 6), "they fit: acknowledge now");
}

#[test]
fn a_change_of_demand_is_reported_before_the_next_renewal() {
    let t0 = Instant::now();
    let mut lease = lease(OnUnreachable::Closed, t0);
    let request = lease.request(t0, 0, 16, 10, 20);
    lease.on_reply(t0, t0, &request, reply(5, 5, 5));
    assert!(
        !lease.due(t0 + ms(50), 5, 1),
        "not sooner than a twelfth of the lease"
    );
    assert!(lease.due(t0 + ms(100), 5, 1), "16 to 1");
    assert!(!lease.due(t0 + ms(100), 5, 16), "unchanged");
    assert!(!lease.due(t0 + ms(100), 5, 15), "less than an eighth");
    assert!(lease.due(t0 + ms(100), 5, 14), "an eighth");
}

#[test]
fn a_stale_reply_changes_nothing_and_asks_again() {
    let t0 = Instant::now();
    let mut lease = lease(OnUnreachable::Closed, t0);
    let request = lease.request(t0, 0, 3, 10, 8);
    let stale = Reply {
        ok: false,
        ..reply(9, 9, 9)
    };
    assert_eq!(lease.on_reply(t0, t0, &request, stale), None);
    assert_eq!(lease.grant, 0);
    assert!(lease.due(t0, 0, 3));
}

#[test]
fn a_request_is_waited_for_no_later_than_the_deadline_in_force() {
    let t0 = Instant::now();
    let mut lease = lease(OnUnreachable::Closed, t0);
    assert_eq!(lease.give_up_at(t0), t0 + ms(120));
    let request = lease.request(t0, 0, 3, 10, 8);
    lease.on_reply(t0, t0, &request, reply(4, 4, 4));
    assert_eq!(lease.give_up_at(t0 + ms(850)), t0 + ms(900));
}

#[test]
fn no_lease_or_margin_makes_the_lease_arithmetic_panic() {
    // `FleetConfig::check` refuses these; a lease never panics on them
    // all the same, and holds a share at most the longest lease.
    for (lease, margin) in [
        (Duration::MAX, None),
        (Duration::from_secs(u64::MAX), Some(Duration::from_secs(1))),
        (Duration::MAX, Some(Duration::MAX)),
        (Duration::ZERO, Some(Duration::MAX)),
    ] {
        let t0 = Instant::now();
        let mut config = FleetConfig::redis("redis://127.0.0.1:1/")
            .unwrap()
            .lease(lease);
        if let Some(margin) = margin {
            config = config.margin(margin);
        }
        let mut lease = Lease::new(&config, t0);
        assert!(lease.due(t0, 0, 3));
        let request = lease.request(t0, 0, 3, 10, 8);
        lease.give_up_at(t0);
        lease.on_reply(t0, t0 + ms(5), &request, reply(4, 4, 4));
        assert_eq!((lease.state, lease.grant), (FleetState::Joined, 4));
        let deadline = lease.deadline.unwrap();
        assert!(deadline > t0 && deadline <= t0 + FleetConfig::MAX_LEASE);
        lease.due(t0 + ms(10), 4, 5);
        lease.expire(t0 + ms(10));
        lease.on_error(t0 + ms(10));
        assert!(config.check("db").is_err(), "{config:?}");
    }
}

/// A reply the driver does not trust (F2: from a node the Sentinels do not
/// confirm as the primary; REG-019) goes to `on_error`, not `on_reply`: its
/// grant is not applied, and the next request still reports the last
/// trusted reply (`acked`, `seen_epoch`, `acked_exp`, the fallback), so
/// that the real primary judges it by what this process was last told
/// there, and finds a missing record a lost write.
#[test]
fn a_reply_that_is_not_applied_leaves_the_next_request_on_the_last_trusted_state() {
    let t0 = Instant::now();
    let mut lease = lease(OnUnreachable::EvenShare, t0);
    let first = lease.request(t0, 0, 3, 10, 8);
    lease.on_reply(t0, t0 + ms(5), &first, reply(4, 4, 4));
    let deadline = lease.deadline;
    // The next renewal is answered by a node that is not confirmed: a
    // bigger grant, another epoch, another lease end, another fallback.
    let t1 = t0 + ms(400);
    let second = lease.request(t1, 4, 3, 10, 8);
    assert_eq!((second.seq, second.acked), (2, 1));
    let untrusted = Reply {
        epoch: "e2".to_owned(),
        exp: 2_000_000,
        fallback: 9,
        ..reply(9, 9, 9)
    };
    // (Applied, that reply would have moved all of it.)
    let mut applied = self::lease(OnUnreachable::EvenShare, t0);
    let r1 = applied.request(t0, 0, 3, 10, 8);
    applied.on_reply(t0, t0 + ms(5), &r1, reply(4, 4, 4));
    let r2 = applied.request(t1, 4, 3, 10, 8);
    applied.on_reply(t1, t1 + ms(5), &r2, untrusted);
    let r3 = applied.request(t1 + ms(100), 9, 3, 10, 8);
    assert_eq!(
        (r3.acked, r3.seen_epoch.as_str(), r3.acked_exp, r3.fallback),
        (2, "e2", 2_000_000, 9)
    );
    assert_eq!(lease.on_error(t1 + ms(5)), None, "a joined share stays");
    assert_eq!((lease.state, lease.grant), (FleetState::Joined, 4));
    assert_eq!(lease.deadline, deadline, "the trusted reply's deadline");
    assert_eq!(lease.fallback, 5);
    // Retried a twelfth of the lease after it was sent, not before.
    assert!(!lease.due(t1 + ms(99), 4, 3));
    assert!(lease.due(t1 + ms(100), 4, 3));
    let third = lease.request(t1 + ms(100), 4, 3, 10, 8);
    assert_eq!(third.seq, 3, "a new number: the untrusted node saw 2");
    assert_eq!(
        (third.acked, third.seen_epoch.as_str(), third.acked_exp),
        (1, "e1", 1_000_000),
        "the last trusted reply"
    );
    assert!(third.lease_valid, "still within the trusted deadline");
    assert_eq!(third.fallback, 5, "the fallback it was told by the primary");
    // The next trusted reply is applied as usual.
    let change = lease.on_reply(t1 + ms(100), t1 + ms(105), &third, reply(5, 5, 5));
    assert_eq!(change.map(|c| (c.from, c.to)), Some((4, 5)));
    assert_eq!(lease.request(t1 + ms(600), 5, 3, 10, 8).acked, 3);
}
