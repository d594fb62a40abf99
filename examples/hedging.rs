//! What `#[hedge]` does to a slow tail: latency percentiles and the load on
//! the dependency, with and without a hedge, side by side.
//!
//! The dependency answers in 5 ms, but one call in ten takes 20 times
//! longer (100 ms). 32 clients call it through a `#[resilient]` wrapper:
//! once through a method without a hedge, once through one with
//! `#[hedge(max_hedged = 1, delay = "10ms")]`, which starts a second attempt
//! when the first has not answered in 10 ms and takes whichever answers
//! first. The tail shrinks to about the delay plus a usual answer; the price
//! is the extra attempts, about one call in ten (those still running at
//! 10 ms) plus what the budget of a retry would allow.
//!
//! Run it with `cargo run --release --example hedging`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use bulkhead::{Registry, Rejection, resilient};

#[derive(Debug)]
struct Unavailable;

impl From<Rejection> for Unavailable {
    fn from(_: Rejection) -> Self {
        Unavailable
    }
}

#[resilient]
trait Search: Send + Sync {
    /// Without a hedge: the slow tail is the caller's.
    #[bulkhead(name = "search-plain", max_concurrent = 64)]
    async fn find(&self, query: u64) -> Result<u64, Unavailable>;

    /// With a hedge after 10 ms.
    #[hedge(name = "search-hedged", max_hedged = 1, delay = "10ms")]
    #[bulkhead(name = "search-hedged", max_concurrent = 64)]
    async fn find_hedged(&self, query: u64) -> Result<u64, Unavailable>;
}

/// A dependency with a slow tail: 5 ms, or 100 ms for one call in ten
/// (which calls is decided by a hash of the call's number, so that a hedge
/// is as likely to be slow as any call).
#[derive(Default)]
struct Replica {
    calls: AtomicU64,
}

impl Replica {
    async fn answer(&self, query: u64) -> Result<u64, Unavailable> {
        let n = self.calls.fetch_add(1, Relaxed);
        let slow = n.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32 & 0xFFFF < 6554; // 10%
        let latency = if slow { 100 } else { 5 };
        tokio::time::sleep(Duration::from_millis(latency)).await;
        Ok(query)
    }
}

impl Search for Replica {
    async fn find(&self, query: u64) -> Result<u64, Unavailable> {
        self.answer(query).await
    }

    async fn find_hedged(&self, query: u64) -> Result<u64, Unavailable> {
        self.answer(query).await
    }
}

const CLIENTS: u64 = 32;
const CALLS_PER_CLIENT: u64 = 100;

/// Each client's calls, one after another; every call's latency.
async fn run(search: &Arc<ResilientSearch<Replica>>, hedged: bool) -> Vec<Duration> {
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let search = Arc::clone(search);
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(CALLS_PER_CLIENT as usize);
                for i in 0..CALLS_PER_CLIENT {
                    let started = Instant::now();
                    let query = client * CALLS_PER_CLIENT + i;
                    let answer = if hedged {
                        search.find_hedged(query).await
                    } else {
                        search.find(query).await
                    };
                    assert_eq!(answer.ok(), Some(query));
                    latencies.push(started.elapsed());
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for client in clients {
        latencies.extend(client.await.expect("a client panicked"));
    }
    latencies.sort();
    latencies
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let at = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[at]
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = Registry::new();
    let search = Arc::new(ResilientSearch::new(Replica::default(), &registry)?);
    let mut hedges = registry.hedge("search-hedged")?.subscribe();

    println!(
        "{CLIENTS} clients x {CALLS_PER_CLIENT} calls; the dependency takes 5 ms, 100 ms for one call in ten\n"
    );
    println!(
        "  {:<26} {:>8} {:>8} {:>8} {:>8} {:>8} {:>12}",
        "", "p50", "p90", "p99", "p99.9", "max", "dependency"
    );
    for hedged in [false, true] {
        let before = search.delegate().calls.load(Relaxed);
        let latencies = run(&search, hedged).await;
        let load = search.delegate().calls.load(Relaxed) - before;
        let ms = |d: Duration| format!("{:.1}ms", d.as_secs_f64() * 1e3);
        println!(
            "  {:<26} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7} calls",
            if hedged {
                "hedge after 10 ms"
            } else {
                "no hedge"
            },
            ms(percentile(&latencies, 0.50)),
            ms(percentile(&latencies, 0.90)),
            ms(percentile(&latencies, 0.99)),
            ms(percentile(&latencies, 0.999)),
            ms(*latencies.last().expect("calls were made")),
            load,
        );
    }
    let (mut started, mut won) = (0, 0);
    for event in hedges.drain() {
        match event.kind {
            bulkhead::events::HedgeEventKind::Started { .. } => started += 1,
            bulkhead::events::HedgeEventKind::Won { .. } => won += 1,
            _ => {}
        }
    }
    let calls = CLIENTS * CALLS_PER_CLIENT;
    println!(
        "\nhedges started: {started} ({:.1}% extra load), of which {won} answered first",
        100.0 * f64::from(started) / calls as f64
    );
    Ok(())
}
