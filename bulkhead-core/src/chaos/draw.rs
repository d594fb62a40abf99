//! # Implementation details
//!
//! What chaos does to one call, as a pure function of the seed and the
//! call's number ([`Draw::of`]): the same seed gives the same injections to
//! the same sequence of calls, whatever the threads and the clock.
//!
//! Each call `n` takes three words of a SplitMix64 stream (Steele, Lea and
//! Flood, *Fast splittable pseudorandom number generators*, 2014): the
//! words at positions `3n + 1`, `3n + 2` and `3n + 3` after the seed, each
//! the stream's mix of `seed + position * GAMMA`, which needs no state but
//! the call's number. The first decides the fault, the second the latency,
//! the third where in its range the latency falls.
//!
//! A rate is compared on 53 bits: a call is picked if its word's top 53
//! bits are below `rate * 2^53` ([`threshold`]), so a rate of 0 picks
//! nothing and a rate of 1 every call.

use std::time::Duration;

/// SplitMix64's increment, the golden ratio in 64 bits.
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// How many bits of a word a rate is compared on.
const RATE_BITS: u32 = 53;

/// The rates and the latency a draw is made against, as the atomics of a
/// chaos policy hold them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Odds {
    /// A fault when the fault word is below it (see [`threshold`]).
    pub(super) fault_below: u64,
    /// A latency when the latency word is below it.
    pub(super) latency_below: u64,
    /// The shortest latency, in nanoseconds.
    pub(super) latency_min: u64,
    /// How much longer the longest latency is, in nanoseconds.
    pub(super) latency_span: u64,
}

/// What chaos does to one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Draw {
    /// The latency to inject before the call, if any.
    pub(super) latency: Option<Duration>,
    /// Whether a fault takes the call's place.
    pub(super) fault: bool,
}

impl Draw {
    /// What chaos does to call number `n` under `seed`.
    pub(super) fn of(seed: u64, n: u64, odds: &Odds) -> Draw {
        let word =
            |k: u64| mix(seed.wrapping_add(n.wrapping_mul(3).wrapping_add(k).wrapping_mul(GAMMA)));
        let picked = |word: u64, below: u64| word >> (64 - RATE_BITS) < below;
        let latency = picked(word(2), odds.latency_below).then(|| {
            // Uniform in `0..=span`: the top 64 bits of a 128-bit product.
            let within = (u128::from(word(3)) * (u128::from(odds.latency_span) + 1)) >> 64;
            Duration::from_nanos(odds.latency_min.saturating_add(within as u64))
        });
        Draw {
            latency,
            fault: picked(word(1), odds.fault_below),
        }
    }

    /// Whether chaos does anything to the call.
    pub(super) fn injects(&self) -> bool {
        self.fault || self.latency.is_some()
    }
}

/// The threshold of a rate from 0 to 1: `rate * 2^53`, rounded.
pub(super) fn threshold(rate: f64) -> u64 {
    (rate.clamp(0.0, 1.0) * (1u64 << RATE_BITS) as f64).round() as u64
}

/// SplitMix64's output function: a bijection of 64-bit words that mixes
/// every input bit into every output bit.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn odds(fault: f64, latency: f64, min: u64, span: u64) -> Odds {
        Odds {
            fault_below: threshold(fault),
            latency_below: threshold(latency),
            latency_min: min,
            latency_span: span,
        }
    }

    #[test]
    fn splitmix_matches_its_reference_stream() {
        // The first outputs of SplitMix64 seeded with 0 (the reference
        // implementation's `next`, which adds GAMMA before mixing).
        assert_eq!(mix(GAMMA), 0xE220_A839_7B1D_CDAF);
        assert_eq!(mix(GAMMA.wrapping_mul(2)), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn rates_of_zero_and_one_pick_nothing_and_everything() {
        let never = odds(0.0, 0.0, 0, 0);
        let always = odds(1.0, 1.0, 5, 0);
        for n in 0..10_000 {
            assert!(!Draw::of(7, n, &never).injects());
            let draw = Draw::of(7, n, &always);
            assert!(draw.fault);
            assert_eq!(draw.latency, Some(Duration::from_nanos(5)));
        }
    }

    #[test]
    fn a_latency_falls_within_its_range_and_reaches_both_ends() {
        let odds = odds(0.0, 1.0, 100, 3);
        let mut seen = [false; 4];
        for n in 0..1_000 {
            let nanos = Draw::of(1, n, &odds).latency.unwrap().as_nanos() as usize;
            assert!((100..=103).contains(&nanos));
            seen[nanos - 100] = true;
        }
        assert_eq!(seen, [true; 4]);
        let widest = Odds {
            latency_min: 0,
            latency_span: u64::MAX,
            ..odds
        };
        assert!(Draw::of(1, 1, &widest).latency.is_some());
    }
}
