//! # Implementation details
//!
//! A chaos policy's settings as its calls read them: atomics that a
//! reload rewrites ([`Live::set`]) while calls run.
//!
//! # Memory ordering
//!
//! A call reads `enabled` first, and only if it is set the rest; a call
//! that runs during a reload may see some rates and latencies old and
//! others new, and each is taken by the calls that follow the reload
//! within the time the store takes to be seen (`Relaxed`: no other memory
//! is published through these words).
//!
//! The seed and the call's number are taken together, so that no two
//! calls are drawn alike and a new seed's draws start from its first: the
//! count word holds the seed's generation above the number
//! ([`NUMBER_BITS`]), and each generation's seed has its slot in `seeds`
//! (one of [`SEEDS`], by the generation). A reload that changes the seed
//! (reloads are serialised by the config's lock) stores the new seed in
//! the next generation's slot, then swaps the count word for that
//! generation and number 0 (`Release`); a call's `fetch_add` (`Acquire`)
//! gives it a generation and a number at once, and the seed it then loads
//! from that generation's slot is the one stored before the swap. A call
//! could read a slot reused since only if [`SEEDS`] reloads changed the
//! seed between its `fetch_add` and its next load.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

use super::config::{ChaosConfig, ChaosFault};
use super::draw::{Odds, threshold};
use crate::clock::nanos;
use crate::loom::atomic::{
    AtomicBool, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};
use crate::loom::{Mutex, lock};

/// The settings of a chaos policy, and its count of calls.
/// The bits of the count word that hold a call's number (7 * 10^16 calls
/// of one seed); the bits above hold the seed's generation.
const NUMBER_BITS: u32 = 56;

/// How many seeds are kept, by generation (a divisor of the 256
/// generations the count word holds).
const SEEDS: usize = 4;

#[derive(Debug)]
pub(super) struct Live {
    /// What one load tells a call: whether to draw at all.
    enabled: AtomicBool,
    fault_below: AtomicU64,
    latency_below: AtomicU64,
    latency_min: AtomicU64,
    latency_span: AtomicU64,
    panics: AtomicBool,
    /// The seed the draws use (the configured one, or one drawn at random)
    /// of each generation, in the slot of its generation modulo [`SEEDS`].
    seeds: [AtomicU64; SEEDS],
    /// The seed's generation and the number of the next call drawn for
    /// (enabled calls only).
    calls: AtomicU64,
    /// The configuration as last set, for [`Chaos::config`](super::Chaos::config).
    config: Mutex<ChaosConfig>,
}

impl Live {
    pub(super) fn new(config: ChaosConfig) -> Self {
        let live = Live {
            enabled: AtomicBool::new(false),
            fault_below: AtomicU64::new(0),
            latency_below: AtomicU64::new(0),
            latency_min: AtomicU64::new(0),
            latency_span: AtomicU64::new(0),
            panics: AtomicBool::new(false),
            seeds: [(); SEEDS].map(|()| AtomicU64::new(0)),
            calls: AtomicU64::new(0),
            config: Mutex::new(config),
        };
        live.seeds[0].store(config.seed().unwrap_or_else(entropy), Relaxed);
        live.store(&config);
        live
    }

    /// Whether calls are drawn for: the one load a call pays when chaos is
    /// disabled.
    #[inline]
    pub(super) fn enabled(&self) -> bool {
        self.enabled.load(Relaxed)
    }

    /// The next call's number, the seed and the odds to draw it with.
    pub(super) fn next(&self) -> (u64, u64, Odds) {
        let word = self.calls.fetch_add(1, Acquire);
        let n = word & ((1 << NUMBER_BITS) - 1);
        let seed = self.seeds[slot(word)].load(Relaxed);
        let odds = Odds {
            fault_below: self.fault_below.load(Relaxed),
            latency_below: self.latency_below.load(Relaxed),
            latency_min: self.latency_min.load(Relaxed),
            latency_span: self.latency_span.load(Relaxed),
        };
        (seed, n, odds)
    }

    /// What an injected fault is now.
    pub(super) fn fault(&self) -> ChaosFault {
        if self.panics.load(Relaxed) {
            ChaosFault::Panic
        } else {
            ChaosFault::Error
        }
    }

    /// The configuration as last set.
    pub(super) fn config(&self) -> ChaosConfig {
        *lock(&self.config)
    }

    /// Takes `config` for the calls that follow. A new seed (a configured
    /// one, or none after one: then one drawn at random) starts the count
    /// of calls again, so that the draws after it are the seed's from the
    /// first.
    pub(super) fn set(&self, config: ChaosConfig) {
        let mut current = lock(&self.config);
        if current.seed() != config.seed() {
            // The next generation (the count's own carries never reach it).
            let next = (self.calls.load(Relaxed) >> NUMBER_BITS).wrapping_add(1) << NUMBER_BITS;
            self.seeds[slot(next)].store(config.seed().unwrap_or_else(entropy), Relaxed);
            self.calls.swap(next, Release);
        }
        self.store(&config);
        *current = config;
    }

    fn store(&self, config: &ChaosConfig) {
        let latency = config.latency();
        let min = nanos(latency.min());
        self.fault_below
            .store(threshold(config.fault_rate()), Relaxed);
        self.latency_below
            .store(threshold(config.latency_rate()), Relaxed);
        self.latency_min.store(min, Relaxed);
        self.latency_span
            .store(nanos(latency.max()).saturating_sub(min), Relaxed);
        self.panics
            .store(config.fault() == ChaosFault::Panic, Relaxed);
        // Last, so that turning chaos on usually finds the rest in place;
        // a call racing the reload may still mix old and new settings (see
        // the module's *Memory ordering*).
        self.enabled.store(config.enabled(), Relaxed);
    }
}

/// The slot in `seeds` of the generation in the count word `word`.
fn slot(word: u64) -> usize {
    (word >> NUMBER_BITS) as usize % SEEDS
}

/// A seed from the system's entropy (the random keys of std's hash maps).
fn entropy() -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write(b"chaos");
    hasher.finish()
}
