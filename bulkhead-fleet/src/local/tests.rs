use bulkhead_core::{Bulkhead, BulkheadConfig};

use super::Members;

fn bulkhead(id: &str, max: u32) -> Bulkhead {
    Bulkhead::new(
        id,
        BulkheadConfig::builder()
            .max_concurrent(max)
            .build()
            .unwrap(),
    )
}

#[test]
fn a_new_member_admits_nothing_until_a_share_is_applied() {
    let mut members = Members::default();
    let a = bulkhead("local-a", 5);
    members.add(a.clone(), Vec::new());
    assert!(a.try_enter().is_err());
    members.apply(3);
    assert_eq!(a.max_concurrent(), 3);
    assert_eq!(members.bound(), 3);
}

#[test]
fn the_share_is_split_on_demand_and_never_above_a_limit() {
    let mut members = Members::default();
    let (a, b) = (bulkhead("local-b1", 2), bulkhead("local-b2", 10));
    members.add(a.clone(), Vec::new());
    members.add(b.clone(), Vec::new());
    members.apply(10);
    assert_eq!((a.max_concurrent(), b.max_concurrent()), (2, 8));
    assert_eq!(members.ceiling(), 12);
}

#[test]
fn a_smaller_share_raises_nothing_while_calls_run_over_it() {
    let mut members = Members::default();
    let (a, b) = (bulkhead("local-c1", 10), bulkhead("local-c2", 10));
    members.add(a.clone(), Vec::new());
    members.add(b.clone(), Vec::new());
    members.apply(8);
    assert_eq!((a.max_concurrent(), b.max_concurrent()), (4, 4));
    let permits: Vec<_> = (0..4).map(|_| a.try_enter().unwrap()).collect();
    // a is busy: the split moves toward it, but b's slots come back only
    // as b's own calls... b has none, so it drops at once; a may rise
    // only within the share.
    members.sample();
    members.apply(4);
    assert!(members.bound() <= 4, "bound {}", members.bound());
    assert_eq!(a.concurrent_calls(), 4);
    drop(permits);
    members.apply(4);
    assert!(members.bound() <= 4);
}

#[test]
fn calls_in_flight_above_a_lowered_limit_keep_the_bound_until_they_end() {
    let mut members = Members::default();
    let a = bulkhead("local-d1", 10);
    members.add(a.clone(), Vec::new());
    members.apply(6);
    let permits: Vec<_> = (0..6).map(|_| a.try_enter().unwrap()).collect();
    members.apply(2);
    assert_eq!(a.max_concurrent(), 2);
    assert_eq!(members.bound(), 6);
    drop(permits);
    assert_eq!(members.bound(), 2);
}

#[test]
fn a_member_that_leaves_stays_closed_and_counted_until_its_calls_finish() {
    let mut members = Members::default();
    let a = bulkhead("local-e1", 10);
    members.add(a.clone(), Vec::new());
    members.apply(6);
    let permits: Vec<_> = (0..4).map(|_| a.try_enter().unwrap()).collect();
    members.depart("local-e1", true);
    assert!(a.try_enter().is_err(), "closed while its calls drain");
    assert_eq!((members.bound(), members.in_flight()), (4, 4));
    assert_eq!((members.ceiling(), members.ids().len()), (0, 0));
    assert_eq!(members.leaving_ids(), ["local-e1"]);
    members.settle();
    members.apply(6);
    assert_eq!(a.max_concurrent(), 0);
    drop(permits);
    members.settle();
    assert_eq!(a.max_concurrent(), 10, "let go: its cap is lifted");
    assert_eq!(members.bound(), 0);
    assert!(members.leaving_ids().is_empty());
}

#[test]
fn a_member_without_calls_in_flight_leaves_at_once() {
    let mut members = Members::default();
    let a = bulkhead("local-f1", 10);
    members.add(a.clone(), Vec::new());
    members.apply(6);
    members.depart("local-f1", true);
    assert_eq!(a.max_concurrent(), 10);
    assert!(members.leaving_ids().is_empty());
}

#[test]
fn a_bulkhead_moved_to_another_fleet_resource_opens_there_once_it_drained_here() {
    let (mut from, mut to) = (Members::default(), Members::default());
    let a = bulkhead("local-g1", 10);
    from.add(a.clone(), Vec::new());
    from.apply(5);
    let permits: Vec<_> = (0..2).map(|_| a.try_enter().unwrap()).collect();
    from.depart("local-g1", false);
    let after = from.hand_over("local-g1");
    to.add(a.clone(), after);
    to.apply(5);
    assert_eq!(
        a.max_concurrent(),
        0,
        "still counted by the resource it left"
    );
    assert_eq!((from.bound(), to.bound()), (2, 2));
    drop(permits);
    to.apply(5);
    assert_eq!(a.max_concurrent(), 0, "the resource it left has not let go");
    from.settle();
    assert_eq!(a.max_concurrent(), 0, "a handover lifts no cap");
    to.apply(5);
    assert_eq!(a.max_concurrent(), 5);
}

#[test]
fn a_bulkhead_moved_back_before_it_drained_is_a_member_again() {
    let (mut a_side, mut b_side) = (Members::default(), Members::default());
    let x = bulkhead("local-h1", 10);
    a_side.add(x.clone(), Vec::new());
    a_side.apply(4);
    let permit = x.try_enter().unwrap();
    a_side.depart("local-h1", false);
    b_side.add(x.clone(), a_side.hand_over("local-h1"));
    // A second reload moves it back.
    b_side.depart("local-h1", false);
    a_side.add(x.clone(), b_side.hand_over("local-h1"));
    assert_eq!(a_side.ids(), ["local-h1"]);
    assert!(a_side.leaving_ids().is_empty());
    assert_eq!((a_side.bound(), b_side.bound()), (1, 1));
    drop(permit);
    a_side.apply(4);
    assert_eq!(
        x.max_concurrent(),
        0,
        "b still counts what it saw in flight"
    );
    b_side.settle();
    assert!(b_side.leaving_ids().is_empty());
    a_side.apply(4);
    assert_eq!(x.max_concurrent(), 4);
}

#[test]
fn a_discarded_bulkhead_never_comes_back_and_its_id_can_join_again() {
    let mut members = Members::default();
    let old = bulkhead("local-i1", 5);
    members.add(old.clone(), Vec::new());
    members.apply(5);
    let permit = old.try_enter().unwrap();
    members.discard("local-i1");
    assert!(members.ids().is_empty());
    // The id declared again is a new instance: closed until the share.
    let new = bulkhead("local-i1", 5);
    members.add(new.clone(), Vec::new());
    assert_eq!(new.max_concurrent(), 0);
    assert_eq!(members.bound(), 1, "the old one's call is still counted");
    members.apply(5);
    assert_eq!(new.max_concurrent(), 4);
    drop(permit);
    members.settle();
    assert_eq!(old.max_concurrent(), 5, "the old one is let go");
    members.apply(5);
    assert_eq!(new.max_concurrent(), 5);
}

/// An adaptive bulkhead's algorithm raises its own limit between shares,
/// up to its cap: the bound counts the cap, or a share applied while its
/// limit is below the cap would hand the difference out twice.
#[test]
fn an_adaptive_member_counts_with_its_cap_in_the_bound() {
    use std::sync::Arc;
    use std::time::Duration;

    use bulkhead_core::adaptive::Sampling;
    use bulkhead_core::{Adaptive, ManualClock, PolicyContext};

    let clock = ManualClock::new();
    let a = Bulkhead::with_context(
        "local-j1",
        BulkheadConfig::builder()
            .max_concurrent(12)
            .initial_concurrent(1)
            .adaptive(Adaptive::Gradient2)
            .sampling(Sampling::builder().min_samples(1).build().unwrap())
            .build()
            .unwrap(),
        PolicyContext::new(Arc::new(clock.clone())),
    );
    let (b, c) = (bulkhead("local-j2", 12), bulkhead("local-j3", 12));
    let mut members = Members::default();
    for member in [&a, &b, &c] {
        members.add(member.clone(), Vec::new());
    }
    let held = || -> u32 {
        [&a, &b, &c]
            .iter()
            .map(|m| m.max_concurrent().max(m.concurrent_calls()))
            .sum()
    };
    // An even split; a's algorithm holds its limit at 1, under its cap.
    members.apply(12);
    assert_eq!(
        (a.max_concurrent(), b.max_concurrent(), c.max_concurrent()),
        (1, 4, 4)
    );
    // b is busy and refuses calls: it gets 8 slots and takes them.
    let mut b_calls: Vec<_> = (0..4).map(|_| b.try_enter_owned().unwrap()).collect();
    members.refused("local-j2");
    members.sample();
    members.apply(12);
    assert_eq!(b.max_concurrent(), 8);
    b_calls.extend((0..4).map(|_| b.try_enter_owned().unwrap()));
    // a and c want more too (a's algorithm still holds it at 1): b's 8
    // calls run on above its smaller part.
    let a_call = a.try_enter_owned().unwrap();
    let _c_calls: Vec<_> = (0..2).map(|_| c.try_enter_owned().unwrap()).collect();
    members.refused("local-j1");
    members.refused("local-j3");
    members.sample();
    members.apply(12);
    assert!(members.bound() <= 12, "bound {}", members.bound());
    // a's calls go well: its algorithm raises its limit to its cap.
    let mut a_calls = vec![a_call];
    for _ in 0..200 {
        clock.advance(Duration::from_millis(10));
        a_calls.clear();
        while let Ok(permit) = a.try_enter_owned() {
            a_calls.push(permit);
        }
        assert!(held() <= 12, "{} slots held on a share of 12", held());
    }
    assert_eq!(a.max_concurrent(), 2, "a grew to its cap");
    drop(b_calls);
}
