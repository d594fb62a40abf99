//! `try_enter()` and drop, `N` times, on a bulkhead on the system clock:
//! `plain` (the bulkhead alone), `sized` (timed for sizing: two recent
//! readings and the sizing counters) or `adaptive` (Gradient2 with its
//! floor at its ceiling, as in `benches/bulkhead.rs`, so it samples every
//! call and closes windows but never moves the limit).
//!
//! Instruction counts per call, from the workspace root:
//!
//! ```text
//! cargo build --release --manifest-path perf/adaptive-loop/Cargo.toml
//! for case in plain sized adaptive; do
//!   for n in 1000000 2000000; do
//!     valgrind --tool=callgrind --fair-sched=yes --callgrind-out-file=/dev/null \
//!       perf/adaptive-loop/target/release/bulkhead-adaptive-loop $case $n 2>&1 |
//!       grep 'refs'
//!   done
//! done
//! ```
//!
//! The difference of the two runs, divided by 1,000,000, is the cost of
//! one call without the set-up. `--fair-sched=yes` lets the system clock's
//! ticker thread run under valgrind: without it the recent reading goes
//! stale and falls back to `Instant::now()` on some runs and not others.

use std::hint::black_box;

use bulkhead::pipeline::PolicyContext;
use bulkhead::{Adaptive, Bulkhead, BulkheadConfig};

const ROOMY: u32 = 25;

fn main() {
    let mut args = std::env::args().skip(1);
    let case = args.next().unwrap_or_else(|| "adaptive".to_owned());
    let n: u64 = args
        .next()
        .map_or(1_000_000, |n| n.parse().expect("a count"));
    let builder = BulkheadConfig::builder().max_concurrent(ROOMY);
    let bulkhead = match case.as_str() {
        "plain" => Bulkhead::new("plain", builder.build().expect("valid")),
        "sized" => Bulkhead::with_context(
            "sized",
            builder.build().expect("valid"),
            PolicyContext::default().with_sizing(true),
        ),
        "adaptive" => Bulkhead::with_context(
            "adaptive",
            builder
                .min_concurrent(ROOMY)
                .adaptive(Adaptive::Gradient2)
                .build()
                .expect("valid"),
            PolicyContext::default().with_sizing(false),
        ),
        other => panic!("unknown case {other}: plain, sized or adaptive"),
    };
    for _ in 0..n {
        drop(black_box(black_box(&bulkhead).try_enter()));
    }
}
