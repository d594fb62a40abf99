//! What `#[hedge]` does to a slow tail: latency percentiles and the load on
//! the dependency, with and without a hedge, side by side.
//!
//! The dependency answers in 5 ms, but one call in ten takes 20 times
//! longer (100 ms). 32 clients call it through a `#[resilient]` wrapper:
//! once through a method without a hedge, once through one with
//! `#[hedge(max_hedged = 1, delay = "10ms")]`, which starts a second attempt
//! when the first has not answered in 10 ms and takes whichever answers
//! first, and once with `delay = "p85"`, which finds such a delay itself
//! from the latency it sees. The tail shrinks to about the delay plus a
//! usual answer; the price is the extra attempts, about one call in ten
//! (those still running at the delay).
//!
//! (Why p85 and not p90: nine calls in ten take 5 ms here, so every
//! latency from 5 ms to 100 ms is a 90th percentile, and an estimate of it
//! wanders between the two; p85 lies among the fast calls.)
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

    /// With a hedge at the 85th percentile of the latency seen.
    #[hedge(name = "search-p85", max_hedged = 1, delay = "p85")]
    #[bulkhead(name = "search-p85", max_concurrent = 64)]
    async fn find_p85(&self, query: u64) -> Result<u64, Unavailable>;
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

    async fn find_p85(&self, query: u64) -> Result<u64, Unavailable> {
        self.answer(query).await
    }
}

const CLIENTS: u64 = 32;
const CALLS_PER_CLIENT: u64 = 100;

/// Which method the clients call.
#[derive(Clone, Copy)]
enum Method {
    Plain,
    Hedged,
    P85,
}

/// Each client's calls, one after another; every call's latency.
async fn run(search: &Arc<ResilientSearch<Replica>>, method: Method) -> Vec<Duration> {
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let search = Arc::clone(search);
            tokio::spawn(async move {
                let mut latencies = Vec::with_capacity(CALLS_PER_CLIENT as usize);
                for i in 0..CALLS_PER_CLIENT {
                    let started = Instant::now();
                    let query = client * CALLS_PER_CLIENT + i;
                    let answer = match method {
                        Method::Plain => search.find(query).await,
                        Method::Hedged => search.find_hedged(query).await,
                        Method::P85 => search.find_p85(query).await,
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

    println!(
        "{CLIENTS} clients x {CALLS_PER_CLIENT} calls; the dependency takes 5 ms, 100 ms for one call in ten\n"
    );
    println!(
        "  {:<26} {:>8} {:>8} {:>8} {:>8} {:>8} {:>12} {:>11}",
        "", "p50", "p90", "p99", "p99.9", "max", "dependency", "extra load"
    );
    let methods = [
        (Method::Plain, "no hedge"),
        (Method::Hedged, "hedge after 10 ms"),
        (Method::P85, "hedge at p85 (estimated)"),
    ];
    for (method, label) in methods {
        let before = search.delegate().calls.load(Relaxed);
        let latencies = run(&search, method).await;
        let load = search.delegate().calls.load(Relaxed) - before;
        let ms = |d: Duration| format!("{:.1}ms", d.as_secs_f64() * 1e3);
        println!(
            "  {:<26} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7} calls {:>10.1}%",
            label,
            ms(percentile(&latencies, 0.50)),
            ms(percentile(&latencies, 0.90)),
            ms(percentile(&latencies, 0.99)),
            ms(percentile(&latencies, 0.999)),
            ms(*latencies.last().expect("calls were made")),
            load,
            100.0 * (load as f64 / (CLIENTS * CALLS_PER_CLIENT) as f64 - 1.0),
        );
    }
    let estimate = registry.hedge("search-p85")?.snapshot().current_delay;
    println!("\nthe p85 estimate at the end: {estimate:?}");
    Ok(())
}
