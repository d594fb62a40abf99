//! Model checks of a chaos policy's live settings with loom: a reload
//! ([`Live::set`]) racing calls ([`Live::enabled`], then [`Live::next`]).
//!
//! What `live.rs` promises (its *Memory ordering*): every access is
//! relaxed, a call racing a reload may mix old and new settings, and the
//! calls that follow a reload take its settings. Checked here: the count's
//! `fetch_add` gives no number twice while the seed stays; a call that
//! sees chaos disabled draws nothing and takes no number; once `set`
//! returns, the thread that called it sees every new setting and, after a
//! new seed, a count started again; and each setting a racing call reads
//! is the old or the new one; and a call racing a reload that changes the
//! seed takes the seed and its number together (the count word holds the
//! seed's generation): no two calls are drawn alike, and the new seed's
//! draws start from its first.
//!
//! Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=4 cargo test -p
//! bulkhead-core --release --lib --target-dir target/loom chaos`.

use std::sync::Arc;
use std::time::Duration;

use loom::thread;

use super::Chaos;
use super::config::{ChaosConfig, ChaosFault, ChaosLatency};
use super::draw::{Odds, threshold};
use super::live::Live;

/// A configuration with a seed (without one, `Live` draws one from the
/// system's entropy).
fn config(enabled: bool, fault_rate: f64, seed: u64) -> ChaosConfig {
    ChaosConfig::builder()
        .enabled(enabled)
        .fault_rate(fault_rate)
        .seed(seed)
        .build()
        .unwrap()
}

/// The odds `config` gives a call, from its values (not from `Live`'s
/// stores, which they check).
fn odds_of(config: ChaosConfig) -> Odds {
    let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap();
    let (min, max) = (config.latency().min(), config.latency().max());
    Odds {
        fault_below: threshold(config.fault_rate()),
        latency_below: threshold(config.latency_rate()),
        latency_min: nanos(min),
        latency_span: nanos(max) - nanos(min),
    }
}

/// What one call reads: its seed, number and odds, if it saw chaos
/// enabled.
fn call(live: &Live) -> Option<(u64, u64, Odds)> {
    live.enabled().then(|| live.next())
}

#[test]
fn calls_racing_a_reload_that_keeps_the_seed_never_share_a_number() {
    let old = config(true, 1.0, 1);
    let new = ChaosConfig::builder()
        .enabled(true)
        .latency_rate(0.5)
        .latency(ChaosLatency::range(
            Duration::from_millis(1),
            Duration::from_millis(3),
        ))
        .seed(1)
        .build()
        .unwrap();
    loom::model(move || {
        let (old_odds, new_odds) = (odds_of(old), odds_of(new));
        let live = Arc::new(Live::new(old));
        let caller = {
            let live = Arc::clone(&live);
            thread::spawn(move || [call(&live), call(&live)])
        };
        live.set(new);
        let mine = call(&live).expect("enabled");
        assert_eq!(mine.2, new_odds, "set returned: the new settings here");
        let mut drawn: Vec<_> = caller
            .join()
            .unwrap()
            .map(|drawn| drawn.expect("enabled before and after"))
            .into();
        drawn.push(mine);
        let mut numbers: Vec<u64> = drawn.iter().map(|&(_, n, _)| n).collect();
        numbers.sort_unstable();
        assert_eq!(numbers, [0, 1, 2], "each number once");
        for (seed, _, odds) in drawn {
            assert_eq!(seed, 1);
            // Each setting is the old one or the new one, not a third.
            let pick = |f: fn(&Odds) -> u64| [f(&old_odds), f(&new_odds)].contains(&f(&odds));
            assert!(pick(|o| o.fault_below), "{odds:?}");
            assert!(pick(|o| o.latency_below), "{odds:?}");
            assert!(pick(|o| o.latency_min), "{odds:?}");
            assert!(pick(|o| o.latency_span), "{odds:?}");
        }
        assert_eq!(live.next(), (1, 3, new_odds), "the count went on");
    });
}

#[test]
fn a_call_that_sees_chaos_disabled_draws_nothing_and_takes_no_number() {
    loom::model(|| {
        let chaos = Chaos::new("loom-chaos", config(true, 1.0, 1));
        let caller = {
            let chaos = chaos.clone();
            thread::spawn(move || [chaos.draw().is_some(), chaos.draw().is_some()])
        };
        chaos.set_config(config(false, 1.0, 1));
        assert!(
            chaos.draw().is_none(),
            "set returned: disabled on this thread"
        );
        let drew = caller.join().unwrap();
        let drawn = drew.iter().filter(|&&d| d).count() as u64;
        assert_eq!(
            chaos.shared.live.next().1,
            drawn,
            "only the calls that drew took a number"
        );
    });
}

#[test]
fn once_set_returns_its_thread_sees_every_new_setting_and_a_new_seeds_count() {
    let old = config(false, 1.0, 1);
    let new = ChaosConfig::builder()
        .enabled(true)
        .fault_rate(0.5)
        .latency_rate(0.25)
        .latency(ChaosLatency::fixed(Duration::from_millis(5)))
        .fault(ChaosFault::Panic)
        .seed(2)
        .build()
        .unwrap();
    loom::model(move || {
        let new_odds = odds_of(new);
        // No calls of seed 1 before the race: loom 0.7 lets a racing
        // `fetch_add` read a count older than the reset `set` stores
        // (tokio-rs/loom#282, a read-modify-write not respecting the
        // modification order), which would give this thread a number past
        // the racing calls' that the memory model rules out. From 0, the
        // reset is checked by the next model, on one thread.
        let live = Arc::new(Live::new(old));
        let caller = {
            let live = Arc::clone(&live);
            thread::spawn(move || [call(&live), call(&live)])
        };
        live.set(new);
        assert!(live.enabled());
        assert_eq!(live.fault(), ChaosFault::Panic);
        let (seed, n, odds) = live.next();
        assert_eq!((seed, odds), (2, new_odds));
        // Counted again from 0 by the reload: only the racing calls may
        // have come in between.
        let racing = caller.join().unwrap();
        assert!(n <= racing.iter().flatten().count() as u64, "number {n}");
        assert_eq!(live.config(), new);
    });
}

#[test]
fn a_new_seed_counts_from_zero_for_the_calls_that_follow_it() {
    loom::model(|| {
        let live = Live::new(config(true, 1.0, 1));
        assert_eq!((live.next().1, live.next().1), (0, 1));
        live.set(config(true, 1.0, 2));
        assert_eq!(live.next().0, 2);
        assert_eq!(live.next().1, 1, "from 0, as the seed's first calls");
        live.set(config(true, 0.5, 2));
        assert_eq!(live.next().1, 2, "the same seed: the count goes on");
        live.set(config(true, 0.5, 1));
        assert_eq!(live.next(), (1, 0, odds_of(config(true, 0.5, 1))));
    });
}

/// With the seed and the count two words, each taken on its own, a call
/// racing a reload that changes the seed could pair the old count's number
/// with the new seed (it takes its number, the reload stores the seed,
/// the call loads it, the reload resets the count), and the first call
/// after the reload was given the same seed and number; no memory ordering
/// prevented it. The count word now holds the seed's generation.
#[test]
fn a_call_racing_a_seed_change_never_repeats_a_seed_and_number() {
    loom::model(|| {
        let live = Arc::new(Live::new(config(true, 1.0, 1)));
        let caller = {
            let live = Arc::clone(&live);
            thread::spawn(move || live.next())
        };
        live.set(config(true, 1.0, 2));
        let after = live.next();
        let (seed, n, _) = caller.join().unwrap();
        assert_ne!((seed, n), (after.0, after.1), "two calls drawn alike");
    });
}

/// With every access relaxed, the racing call's `fetch_add` could read the
/// reset count and its load of the seed the old seed: it took the new
/// count's number 0 with the old seed, and the new seed's draws did not
/// start from its first. The reset is a release `swap` now, the
/// `fetch_add` an acquire, and the seed is read from the slot of the
/// generation the `fetch_add` gave (loom 0.7 sees the ordering only with
/// the reset a `swap`, not a `store`: tokio-rs/loom#282).
#[test]
fn the_calls_after_a_seed_change_start_from_the_new_seeds_first_draw() {
    loom::model(|| {
        let live = Arc::new(Live::new(config(true, 1.0, 1)));
        let caller = {
            let live = Arc::clone(&live);
            thread::spawn(move || live.next())
        };
        live.set(config(true, 1.0, 2));
        let (seed, n, _) = live.next();
        let racing = caller.join().unwrap();
        assert_eq!(seed, 2);
        assert!(
            n == 0 || (racing.0, racing.1) == (2, 0),
            "seed 2's number 0 went to no call under seed 2: the racing call took {racing:?}, \
             the next {n}"
        );
    });
}
