//! The random numbers behind jitter: a xorshift generator per thread.
//!
//! Jitter only has to spread retries of different callers apart, not resist
//! prediction, so a few shifts per draw are enough. Each thread seeds its
//! generator on first use from the standard library's per-thread hash keys
//! (random at process start), which allocates nothing.

use std::cell::Cell;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

thread_local! {
    /// The generator's state; 0 until seeded (xorshift never yields 0).
    static STATE: Cell<u64> = const { Cell::new(0) };
}

/// A uniformly distributed number in `0.0..1.0`.
pub(crate) fn unit() -> f64 {
    STATE.with(|state| {
        let mut x = state.get();
        if x == 0 {
            x = seed(state);
        }
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        state.set(x);
        // xorshift64*: the multiply mixes the high bits, which we keep.
        let bits = x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11;
        bits as f64 / (1u64 << 53) as f64
    })
}

#[cold]
fn seed(state: &Cell<u64>) -> u64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_usize(std::ptr::from_ref(state).addr());
    hasher.finish() | 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_fall_in_the_unit_interval_and_spread_out() {
        let draws: Vec<f64> = (0..10_000).map(|_| unit()).collect();
        assert!(draws.iter().all(|u| (0.0..1.0).contains(u)));
        let low = draws.iter().filter(|u| **u < 0.5).count();
        assert!((4_000..6_000).contains(&low), "{low} of 10000 below 0.5");
    }

    #[test]
    fn threads_draw_different_sequences() {
        let here: Vec<f64> = (0..4).map(|_| unit()).collect();
        let there = std::thread::spawn(|| (0..4).map(|_| unit()).collect::<Vec<f64>>())
            .join()
            .unwrap();
        assert_ne!(here, there);
    }
}
