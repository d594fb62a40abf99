//! Model checks of the adaptive parts' races with loom: samples racing the
//! window's closer, growth racing for a budget's room, and seats settling
//! their fair shares while another leaves.
//!
//! Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=4 cargo test -p
//! bulkhead-core --release --lib --target-dir target/loom adaptive`.

use std::sync::Arc;

use loom::thread;

use super::CallOutcome;
use super::room::Room;
use super::window::{Histogram, Samples, Taken};
use crate::bulkhead::semaphore::Released;

const FULL: Released = Released {
    in_flight: 2,
    max: 2,
    pooled: false,
};

/// Two writers (a bound success held `held`, and a drop) race a closer's
/// take; returns the two windows the closer and a last take found.
fn race(samples: Samples, held: u64) -> (Taken, Taken) {
    let samples = Arc::new(samples);
    let writers: Vec<_> = [(CallOutcome::Success, held), (CallOutcome::Dropped, 20)]
        .into_iter()
        .map(|(outcome, held)| {
            let samples = Arc::clone(&samples);
            thread::spawn(move || samples.record(0, held, outcome, FULL))
        })
        .collect();
    let first = samples.take();
    writers.into_iter().for_each(|t| t.join().unwrap());
    (first, samples.take())
}

#[test]
fn samples_racing_the_closer_are_each_counted_once() {
    loom::model(|| {
        let (first, second) = race(Samples::default(), 10);
        let total = |f: fn(&Taken) -> u64| f(&first) + f(&second);
        assert_eq!(total(|t| t.counts.bound), 1);
        assert_eq!(total(|t| t.counts.drops), 1);
        assert_eq!(total(|t| t.counts.free + t.counts.errors), 0);
        for taken in [first, second] {
            assert_eq!(
                taken.bound,
                Histogram::of(&vec![10; taken.counts.bound as usize]),
                "a hold time is taken with its count, a drop's left out"
            );
            assert_eq!(taken.free.count(), 0);
        }
    });
}

#[test]
fn growth_racing_for_a_room_never_takes_more_than_its_capacity() {
    loom::model(|| {
        let room = Arc::new(Room::new(3));
        let growers: Vec<_> = (0..2)
            .map(|_| {
                let room = Arc::clone(&room);
                thread::spawn(move || room.take(2))
            })
            .collect();
        room.set_capacity(2);
        let granted: u32 = growers.into_iter().map(|t| t.join().unwrap()).sum();
        assert!(granted <= 3, "granted {granted}");
        assert_eq!(room.taken(), granted);
        // What the lowered capacity no longer holds is the excess to give
        // back; nothing more can be taken meanwhile.
        assert_eq!(room.excess(), granted.saturating_sub(2));
        assert_eq!(room.take(1), u32::from(granted < 2));
    });
}

#[test]
fn seats_settling_their_shares_at_once_never_hold_more_than_the_capacity() {
    loom::model(|| {
        let room = Arc::new(Room::new(3));
        let mut first = Room::join(Arc::clone(&room));
        assert_eq!(first.settle(3, 0), 3);
        let mut second = Room::join(Arc::clone(&room));
        // The second asks for its share, takes what is free, and leaves
        // with it given back; meanwhile the first settles again and gives
        // back what it holds above its share.
        let leaver = thread::spawn(move || {
            let got = second.settle(3, 0);
            let share = second.share();
            second.give(got);
            drop(second);
            (got, share)
        });
        let keep = first.settle(3, 3);
        assert!(keep == 3 || keep == 2, "kept {keep}");
        room.give(3 - keep);
        let (got, share) = leaver.join().unwrap();
        assert_eq!(share, 1, "the first seated gets the spare slot");
        assert!(got <= share);
        assert_eq!(room.seats(), 1);
        assert_eq!(room.taken(), keep);
        // Alone again: its share is the whole room.
        assert_eq!(first.settle(3, keep), 3);
        assert_eq!(room.taken(), 3);
    });
}
