//! The rate limiter under contention, on the system clock: a caller that
//! loses a race for the permit counter to one already in a later period
//! must judge the permits by a time no earlier than the winner's.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use bulkhead_core::{RateLimiter, RateLimiterConfig};

/// Periods hold far more permits than 8 threads can take in one (20 µs):
/// `try_acquire` must never be refused.
#[test]
fn try_acquire_is_never_refused_while_permits_are_left() {
    let config = RateLimiterConfig::builder()
        .limit_for_period(1_000_000)
        .refresh_period(Duration::from_micros(20))
        .max_wait(Duration::ZERO)
        .build()
        .unwrap();
    let limiter = Arc::new(RateLimiter::new("stale", config));
    let refused = Arc::new(AtomicU64::new(0));
    let threads = 8;
    let barrier = Arc::new(Barrier::new(threads));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (limiter, refused, barrier) = (limiter.clone(), refused.clone(), barrier.clone());
            thread::spawn(move || {
                barrier.wait();
                let end = Instant::now() + Duration::from_secs(1);
                while Instant::now() < end {
                    for _ in 0..1000 {
                        if limiter.try_acquire().is_err() {
                            refused.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(refused.load(Ordering::Relaxed), 0);
}
