//! An adaptive bulkhead driven call by call on a `ManualClock`: the
//! controller's windows, probes, bounds, room and events, each outcome as
//! a user sees it through the bulkhead.

use std::sync::Arc;
use std::time::Duration;

use super::{Adaptive, CallOutcome, Room, Sampling};
use crate::bulkhead::{Bulkhead, BulkheadConfig, OwnedBulkheadPermit};
use crate::clock::ManualClock;
use crate::context::PolicyContext;
use crate::events::{BulkheadEventKind, Event, EventBus, EventStream};

const MS: Duration = Duration::from_millis(1);
const SECOND: Duration = Duration::from_secs(1);

/// A bulkhead kept full: every call holds its slot for the same time, and
/// a released slot is taken again at once (so every release finds the
/// bulkhead full: the windows are bound and saturated).
struct Rig {
    clock: ManualClock,
    bulkhead: Bulkhead,
    events: EventStream,
    held: Vec<OwnedBulkheadPermit>,
}

fn rig(adaptive: Adaptive, bounds: (u32, u32, u32)) -> Rig {
    rig_sampled(
        adaptive,
        bounds,
        Sampling::builder().min_samples(4).build().unwrap(),
    )
}

fn rig_sampled(
    adaptive: Adaptive,
    (min, initial, max): (u32, u32, u32),
    sampling: Sampling,
) -> Rig {
    let clock = ManualClock::new();
    let bus = EventBus::new(4096);
    let events = bus.subscribe();
    let config = BulkheadConfig::builder()
        .max_concurrent(max)
        .min_concurrent(min)
        .initial_concurrent(initial)
        .adaptive(adaptive)
        .sampling(sampling)
        .build()
        .unwrap();
    let context = PolicyContext::new(Arc::new(clock.clone())).with_events(bus);
    let bulkhead = Bulkhead::with_context("adaptive", config, context);
    Rig {
        clock,
        bulkhead,
        events,
        held: Vec::new(),
    }
}

impl Rig {
    /// The calls in flight run for `hold` and end with `outcome`; each is
    /// replaced at once, and new slots are filled.
    fn round(&mut self, hold: Duration, outcome: CallOutcome) {
        self.clock.advance(hold);
        for mut permit in std::mem::take(&mut self.held) {
            permit.set_outcome(outcome);
            drop(permit);
            if let Ok(permit) = self.bulkhead.try_enter_owned() {
                self.held.push(permit);
            }
        }
        while let Ok(permit) = self.bulkhead.try_enter_owned() {
            self.held.push(permit);
        }
        assert!(self.held.len() as u32 <= self.bulkhead.max_concurrent() + 1);
    }

    /// A round in front of a dependency that serves `capacity` calls at
    /// once in 100 ms and shares itself among more (processor sharing):
    /// the calls in flight take 100 ms times their number over the
    /// capacity, if more.
    fn round_on(&mut self, capacity: u32) {
        let calls = self.held.len() as u32;
        self.round(
            100 * MS * calls.max(capacity) / capacity,
            CallOutcome::Success,
        );
    }

    /// Rounds until `done` says so (at most `rounds`); the limits seen.
    fn until(
        &mut self,
        hold: Duration,
        rounds: usize,
        done: impl Fn(&Bulkhead) -> bool,
    ) -> Vec<u32> {
        let mut limits = Vec::new();
        for _ in 0..rounds {
            if done(&self.bulkhead) {
                break;
            }
            self.round(hold, CallOutcome::Success);
            limits.push(self.bulkhead.max_concurrent());
        }
        assert!(
            done(&self.bulkhead),
            "not done after {rounds} rounds: {limits:?}"
        );
        limits
    }

    fn no_load(&self) -> Option<Duration> {
        self.bulkhead.adaptive().unwrap().no_load
    }

    /// Whether the no-load latency is `expected` to within the window's
    /// histogram buckets (1/32: a window is summarised by its median,
    /// read from log-linear buckets).
    fn no_load_near(&self, expected: Duration) -> bool {
        self.no_load()
            .is_some_and(|n| (n.as_secs_f64() / expected.as_secs_f64() - 1.0).abs() <= 1.0 / 32.0)
    }

    fn limit_changes(&mut self) -> Vec<(u32, u32)> {
        self.events
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
}

#[test]
fn the_first_window_measures_the_no_load_latency_at_the_initial_limit() {
    let mut rig = rig(Adaptive::Gradient2, (1, 4, 100));
    assert_eq!(rig.bulkhead.max_concurrent(), 4);
    let snapshot = rig.bulkhead.adaptive().unwrap();
    assert_eq!(
        (snapshot.floor, snapshot.ceiling, snapshot.limit),
        (1, 100, 4)
    );
    assert!(snapshot.probing && snapshot.no_load.is_none());
    rig.until(10 * MS, 100, |b| b.adaptive().unwrap().no_load.is_some());
    assert!(rig.no_load_near(10 * MS), "{:?}", rig.no_load());
    let snapshot = rig.bulkhead.adaptive().unwrap();
    assert_eq!(
        (snapshot.probes, snapshot.algorithm),
        (1, Adaptive::Gradient2)
    );
    assert!(!snapshot.probing);
}

#[test]
fn a_saturated_limit_at_the_no_load_latency_doubles_up_to_the_ceiling() {
    let mut rig = rig(Adaptive::Gradient2, (1, 4, 100));
    rig.until(10 * MS, 100, |b| b.adaptive().unwrap().no_load.is_some());
    let limits = rig.until(10 * MS, 200, |b| b.max_concurrent() == 100);
    let mut distinct = limits.clone();
    distinct.dedup();
    assert_eq!(distinct, [4, 8, 16, 32, 64, 100], "{limits:?}");
    rig.until(10 * MS, 100, |_| true);
    for _ in 0..100 {
        rig.round(10 * MS, CallOutcome::Success);
        assert!(rig.bulkhead.max_concurrent() <= 100);
    }
    assert_eq!(rig.bulkhead.config().max_concurrent(), 100, "the ceiling");
}

#[test]
fn a_dependency_five_times_slower_is_found_by_probes_and_the_limit_stays_above_its_floor() {
    for adaptive in [Adaptive::Aimd, Adaptive::Vegas, Adaptive::Gradient2] {
        let mut rig = rig(adaptive, (3, 20, 40));
        rig.until(10 * MS, 100, |b| b.adaptive().unwrap().no_load.is_some());
        let mut lowest = u32::MAX;
        for _ in 0..400 {
            rig.round(50 * MS, CallOutcome::Success);
            lowest = lowest.min(rig.bulkhead.max_concurrent());
        }
        assert!(lowest >= 3, "{adaptive}: {lowest}");
        let no_load = rig.no_load().unwrap();
        assert!(
            no_load >= 40 * MS && no_load <= 60 * MS,
            "{adaptive}: re-anchored at {no_load:?}"
        );
    }
}

#[test]
fn errors_are_counted_and_do_not_shrink_the_limit_but_drops_do() {
    let mut rig = rig(Adaptive::Aimd, (1, 8, 8));
    rig.until(10 * MS, 100, |b| b.adaptive().unwrap().no_load.is_some());
    for _ in 0..100 {
        rig.round(10 * MS, CallOutcome::Error);
    }
    let snapshot = rig.bulkhead.adaptive().unwrap();
    assert_eq!(snapshot.limit, 8);
    assert!(snapshot.errors > 0 && snapshot.drops == 0);
    for _ in 0..30 {
        rig.round(10 * MS, CallOutcome::Dropped);
    }
    let snapshot = rig.bulkhead.adaptive().unwrap();
    assert!(snapshot.limit < 8, "{snapshot:?}");
    assert!(snapshot.drops > 0);
}

/// A bulkhead kept full in front of a dependency that serves `capacity`
/// calls at once in 100 ms and shares itself among more (each call then
/// takes 100 ms times the calls in flight over the capacity). From 20 s
/// on, outside probes, AIMD's and Gradient2's limits are within ±25 % of
/// the capacity down to a capacity of 5 (at 5, AIMD's steps of one call
/// reach two above it); Vegas' is above it by its queue
/// allowance, between alpha and beta calls (3 and 6): within ±25 % only
/// from a capacity of 24 (the adaptive guide's measurements).
#[test]
fn on_a_saturated_dependency_each_algorithm_settles_where_the_guide_says() {
    for capacity in [5u32, 10, 20] {
        for adaptive in [Adaptive::Aimd, Adaptive::Vegas, Adaptive::Gradient2] {
            let start = (2 * capacity).div_ceil(5);
            let mut rig = rig(adaptive, (1, start, 4 * capacity));
            let band = match adaptive {
                Adaptive::Vegas => capacity + 2..=capacity + 6,
                // ±25 %, or two calls at the smallest capacities, where
                // one step of AIMD is a fifth of the capacity.
                _ => (capacity * 3).div_ceil(4)..=(capacity * 5 / 4).max(capacity + 2),
            };
            let mut seen = Vec::new();
            while rig.clock.elapsed() < 120 * SECOND {
                rig.round_on(capacity);
                let snapshot = rig.bulkhead.adaptive().unwrap();
                if rig.clock.elapsed() >= 20 * SECOND && !snapshot.probing {
                    seen.push(snapshot.limit);
                }
            }
            assert!(
                seen.iter().all(|limit| band.contains(limit)),
                "{adaptive} at a capacity of {capacity}: {seen:?}"
            );
        }
    }
}

/// The dependency of the test above loses half its capacity (40 to 20
/// calls at once) at 60 s. Three slow windows start a probe, which finds the
/// no-load latency where it was: the limit comes back at most at what
/// carried the load, not at the limit the algorithm had (Vegas then took
/// one call off per window, 5 s from twice the capacity).
#[test]
fn after_the_capacity_halves_every_algorithm_follows_within_three_seconds() {
    for adaptive in [Adaptive::Aimd, Adaptive::Vegas, Adaptive::Gradient2] {
        let mut rig = rig(adaptive, (1, 16, 160));
        while rig.clock.elapsed() < 60 * SECOND {
            rig.round_on(40);
        }
        let mut seen = Vec::new();
        while rig.clock.elapsed() < 90 * SECOND {
            rig.round_on(20);
            let snapshot = rig.bulkhead.adaptive().unwrap();
            if rig.clock.elapsed() >= 63 * SECOND && !snapshot.probing {
                seen.push(snapshot.limit);
            }
        }
        assert!(
            seen.iter().all(|limit| (15..=25).contains(limit)),
            "{adaptive}: {seen:?}"
        );
    }
}

/// A limit of 2 in front of calls of 150 ms lets 13 calls end a second:
/// no window of the default sampling (20 calls, at most 1 s) fills, and
/// each used to be discarded, so the limit never moved. A bound window
/// now waits for its calls.
#[test]
fn a_small_limit_whose_windows_cannot_fill_in_max_window_still_grows() {
    for adaptive in [Adaptive::Aimd, Adaptive::Vegas, Adaptive::Gradient2] {
        let mut rig = rig_sampled(adaptive, (1, 2, 16), Sampling::default());
        let limits = rig.until(150 * MS, 400, |b| b.max_concurrent() == 16);
        assert!(limits.len() < 200, "{adaptive}: {limits:?}");
    }
}

/// Issue 26, item 6: every call times out from the first one, before any
/// call has succeeded; with the default sampling (20 calls a window).
#[test]
fn a_dependency_that_hangs_from_the_first_call_lowers_the_limit_to_the_floor() {
    for adaptive in [Adaptive::Aimd, Adaptive::Vegas, Adaptive::Gradient2] {
        let mut rig = rig_sampled(adaptive, (1, 8, 100), Sampling::default());
        let mut limits = Vec::new();
        // Each call holds its slot 300 ms, until its timeout drops it.
        for _ in 0..40 {
            rig.round(300 * MS, CallOutcome::Dropped);
            limits.push(rig.bulkhead.max_concurrent());
        }
        let snapshot = rig.bulkhead.adaptive().unwrap();
        assert_eq!(snapshot.limit, 1, "{adaptive}: {limits:?}");
        assert!(
            limits[..4].iter().any(|&l| l < 8),
            "{adaptive}: lowered within 1.2 s: {limits:?}"
        );
        assert!(snapshot.no_load.is_none() && snapshot.successes == 0);
        let changes = rig.limit_changes();
        assert_eq!(changes.first().map(|c| c.0), Some(8), "{changes:?}");
        assert!(changes.iter().all(|(from, to)| to < from), "{changes:?}");
        // Once it answers, the no-load latency is measured at the floor and
        // the limit regrows as at first, doubling.
        let regrown = rig.until(10 * MS, 400, |b| b.max_concurrent() == 100);
        assert!(regrown.len() < 200, "{adaptive}: {} rounds", regrown.len());
        assert!(rig.no_load_near(10 * MS), "{adaptive}: {:?}", rig.no_load());
    }
}

/// Every call fails with an error from the first one: `errors_as_drops`
/// makes that a congestion signal before any no-load latency was
/// measured, as after.
#[test]
fn errors_as_drops_lower_the_limit_before_any_call_succeeded() {
    let sampling = Sampling::builder()
        .min_samples(4)
        .errors_as_drops(true)
        .build()
        .unwrap();
    for adaptive in [Adaptive::Aimd, Adaptive::Vegas, Adaptive::Gradient2] {
        let mut rig = rig_sampled(adaptive, (2, 8, 100), sampling);
        for _ in 0..200 {
            rig.round(10 * MS, CallOutcome::Error);
        }
        let snapshot = rig.bulkhead.adaptive().unwrap();
        assert_eq!(snapshot.limit, 2, "{adaptive}: {snapshot:?}");
    }
}

#[test]
fn errors_count_as_drops_when_told_to() {
    let clock = ManualClock::new();
    let config = BulkheadConfig::builder()
        .max_concurrent(8)
        .initial_concurrent(8)
        .adaptive(Adaptive::Aimd)
        .sampling(
            Sampling::builder()
                .min_samples(4)
                .errors_as_drops(true)
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    let bulkhead = Bulkhead::with_context(
        "errors",
        config,
        PolicyContext::new(Arc::new(clock.clone())),
    );
    let mut rig = Rig {
        clock,
        bulkhead,
        events: EventBus::new(1).subscribe(),
        held: Vec::new(),
    };
    rig.until(10 * MS, 100, |b| b.adaptive().unwrap().no_load.is_some());
    for _ in 0..30 {
        rig.round(10 * MS, CallOutcome::Error);
    }
    assert!(rig.bulkhead.max_concurrent() < 8);
}

#[test]
fn a_manual_limit_moves_the_ceiling_and_clamps_the_limit_in_force() {
    let mut rig = rig(Adaptive::Vegas, (2, 20, 50));
    rig.until(10 * MS, 100, |b| b.adaptive().unwrap().no_load.is_some());
    rig.limit_changes();
    rig.bulkhead.set_max_concurrent(10).unwrap();
    assert_eq!(rig.bulkhead.max_concurrent(), 10);
    assert_eq!(rig.bulkhead.config().max_concurrent(), 10);
    assert_eq!(rig.limit_changes(), [(20, 10)]);
    for _ in 0..200 {
        rig.round(10 * MS, CallOutcome::Success);
        assert!(rig.bulkhead.max_concurrent() <= 10);
    }
    // Not below the floor.
    let err = rig.bulkhead.set_max_concurrent(1).unwrap_err();
    assert_eq!((err.code(), err.key()), ("ATR-015", "min_concurrent"));
    rig.bulkhead.set_max_concurrent(2).unwrap();
    let snapshot = rig.bulkhead.adaptive().unwrap();
    assert_eq!(
        (snapshot.floor, snapshot.ceiling, snapshot.limit),
        (2, 2, 2)
    );
}

#[test]
fn the_limit_changes_at_most_once_per_window() {
    let mut rig = rig(Adaptive::Aimd, (1, 4, 64));
    let mut changes = 0;
    for round in 0..600 {
        let hold = if (round / 100) % 2 == 0 { 10 } else { 30 };
        rig.round(hold * MS, CallOutcome::Success);
        changes += rig.limit_changes().len() as u64;
    }
    let snapshot = rig.bulkhead.adaptive().unwrap();
    assert!(changes > 5, "{changes}");
    assert!(
        changes <= snapshot.windows + 1,
        "{changes} changes in {} windows",
        snapshot.windows
    );
}

#[test]
fn adaptive_bulkheads_grow_only_into_their_rooms_free_slots() {
    let room = Arc::new(Room::new(6));
    let mut rigs: Vec<Rig> = (0..2)
        .map(|_| rig(Adaptive::Gradient2, (2, 2, 50)))
        .collect();
    for rig in &rigs {
        rig.bulkhead.set_room(Some(Arc::clone(&room)));
    }
    let extras =
        |rigs: &[Rig]| -> u32 { rigs.iter().map(|r| r.bulkhead.max_concurrent() - 2).sum() };
    for _ in 0..300 {
        for rig in &mut rigs {
            rig.round(10 * MS, CallOutcome::Success);
        }
        assert!(extras(&rigs) <= 6, "{}", extras(&rigs));
        assert!(room.taken() <= room.capacity());
    }
    assert_eq!(extras(&rigs), 6, "the free room was used");
    // A lowered capacity is given back, down to the floors at most.
    room.set_capacity(1);
    for rig in &rigs {
        rig.bulkhead.reclaim_room();
    }
    assert!(extras(&rigs) <= 1, "{}", extras(&rigs));
    assert_eq!(room.excess(), 0);
    // Leaving the budget gives the room back.
    for rig in &rigs {
        rig.bulkhead.set_room(None);
    }
    assert_eq!((room.taken(), room.seats()), (0, 0));
}

#[test]
fn a_dropped_bulkhead_gives_its_room_back() {
    let room = Arc::new(Room::new(10));
    let mut rig = rig(Adaptive::Aimd, (1, 5, 50));
    rig.bulkhead.set_room(Some(Arc::clone(&room)));
    assert_eq!(room.taken(), 4, "initial 5 over a floor of 1");
    assert_eq!(room.seats(), 1);
    rig.held.clear();
    drop(rig);
    assert_eq!(room.taken(), 0);
    assert_eq!(room.seats(), 0, "it left the fair shares");
}

#[test]
fn its_own_reserved_holds_its_limit_without_room_and_moves_it_live() {
    let room = Arc::new(Room::new(10));
    let rig = rig(Adaptive::Aimd, (1, 5, 50));
    let bulkhead = rig.bulkhead;
    bulkhead.set_room(Some(Arc::clone(&room)));
    assert_eq!((bulkhead.max_concurrent(), room.taken()), (5, 4));
    // Reserved 8: its limit of 5 is within what it keeps, no room held.
    bulkhead.set_reserved(Some(8)).unwrap();
    assert_eq!((bulkhead.max_concurrent(), room.taken()), (5, 0));
    // Reserved 2: the 5 it holds count 3 above it, taken from the room.
    bulkhead.set_reserved(Some(2)).unwrap();
    assert_eq!((bulkhead.max_concurrent(), room.taken()), (5, 3));
    // Back to the floor of 1.
    bulkhead.set_reserved(None).unwrap();
    assert_eq!((bulkhead.max_concurrent(), room.taken()), (5, 4));
    drop(bulkhead);
    assert_eq!(room.taken(), 0, "all of it given back");
}

#[test]
fn a_room_too_small_for_the_initial_limit_lowers_it() {
    let room = Arc::new(Room::new(3));
    let rig = rig(Adaptive::Aimd, (2, 20, 50));
    let mut seen = rig.events;
    let bulkhead = rig.bulkhead;
    bulkhead.set_room(Some(room));
    assert_eq!(bulkhead.max_concurrent(), 5);
    let changes: Vec<_> = seen.drain().collect();
    assert_eq!(changes.len(), 1);
}

#[test]
fn a_bulkhead_that_does_not_adapt_has_no_adaptive_snapshot() {
    let bulkhead = Bulkhead::new("static", BulkheadConfig::default());
    assert!(bulkhead.adaptive().is_none());
    bulkhead.set_room(Some(Arc::new(Room::new(0))));
    assert_eq!(bulkhead.max_concurrent(), 25);
}

#[test]
fn a_cap_bounds_the_limit_in_force_and_the_algorithm_regrows_once_it_is_lifted() {
    let mut rig = rig(Adaptive::Gradient2, (2, 4, 100));
    rig.until(10 * MS, 100, |b| b.max_concurrent() >= 32);
    // A fleet's share: the limit in force falls to the cap at once, and
    // however well the calls go under it, stays at most the cap.
    assert_eq!(rig.bulkhead.set_limit_cap(Some(6)), 6);
    assert_eq!(rig.bulkhead.max_concurrent(), 6);
    for _ in 0..200 {
        rig.round(10 * MS, CallOutcome::Success);
        assert!(rig.bulkhead.max_concurrent() <= 6);
    }
    let snapshot = rig.bulkhead.adaptive().unwrap();
    assert!(snapshot.limit <= 6, "the algorithm works under the cap");
    assert_eq!(rig.bulkhead.config().max_concurrent(), 100, "the ceiling");
    // A cap below the floor, even 0, closes it as far as the cap says.
    assert_eq!(rig.bulkhead.set_limit_cap(Some(0)), 0);
    rig.round(10 * MS, CallOutcome::Success);
    assert_eq!(rig.bulkhead.max_concurrent(), 0);
    assert!(rig.bulkhead.try_enter().is_err());
    // Lifted: the limit grows again, doubling while the calls go well.
    rig.bulkhead.set_limit_cap(None);
    assert!(rig.bulkhead.max_concurrent() >= 2);
    let limits = rig.until(10 * MS, 100, |b| b.max_concurrent() >= 32);
    assert!(limits.len() < 40, "regrown in {} rounds", limits.len());
    let changes = rig.limit_changes();
    assert!(
        changes.contains(&(6, 0)) && changes.contains(&(0, 2)),
        "{changes:?}"
    );
}
