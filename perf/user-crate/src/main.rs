//! What a `#[resilient]` wrapper costs a call, measured from a user's
//! crate: a trait with one bulkhead that always has room (`free`) and one
//! that is always full (`full`), an `#[inline(never)]` implementation, and
//! loops of calls against the floors any counting semaphore has to pay;
//! and a second trait (`Chaotic`) whose methods go through `Policies` (a
//! circuit breaker and a bulkhead), with and without a disabled `#[chaos]`,
//! sync and async, for what disabled chaos costs a call; and issue 29's
//! cost target for an adaptive bulkhead: a free-slot `try_enter()` + drop
//! (and `enter_async()` polled once) on adaptive bulkheads built through a
//! `Pipeline` as the adaptive guide shows, beside the same plain bulkhead
//! alone, with the two recent clock readings an adaptive call takes, and
//! with those and one locked read-modify-write (the target's bound).
//! Issue 31's cost targets for a keyed bulkhead (`bulkhead_core::
//! KeyedBulkhead`, which the facade does not re-export yet):
//! `try_enter(&key)` + drop on a live `u64` key and on a `String` key by
//! `&str` beside `try_enter()` + drop, the same rejected (the key at its
//! `per_key`) beside `try_enter()` rejected, and one bare hash lookup of
//! each key (foldhash's fast hasher, a hashbrown `HashTable` of boxed
//! entries) to define the rejection's bound.
//!
//! Every case is a loop of `CALLS` calls in a function of its own
//! (`#[inline(never)]`); the cases run interleaved, one loop each per
//! round, for `ROUNDS` rounds, and each case's best round is reported (load
//! from elsewhere only ever adds time), with its median round beside it.
//! Each loop is timed twice: by the wall clock (`Instant`) and by the
//! thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), which leaves out the
//! time the thread was descheduled, so that a machine shared with other
//! work still gives usable figures. Each call's result is folded into an
//! accumulator, as a caller would use it; the objects are passed through
//! `black_box` once per call so that nothing is hoisted out of the loop.
//!
//! Two cases copy the call's result the way the repository's criterion
//! harness does (`black_box(&value)` on a moved value, its `consume` /
//! `keep`): they show what the criterion cases pay that a user's loop does
//! not (see BENCHMARKS.md, "The wrapper as a user's crate sees it").
//!
//! `cargo run --release` (or `./run.sh`, which also records the machine);
//! `BULKHEAD_CALLS` and `BULKHEAD_ROUNDS` override the defaults, and case
//! names given as arguments run only those cases.

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use bulkhead::clock::RecentTime;
use bulkhead::{Adaptive, Bulkhead, BulkheadConfig, Pipeline, Registry, Rejection, resilient};
use bulkhead_core::KeyedBulkhead;
use dashmap::DashMap;
use tokio::sync::Semaphore;

/// The caller's error: a rejection, kept.
#[derive(Debug)]
pub struct Busy(pub Rejection);

impl From<Rejection> for Busy {
    fn from(rejection: Rejection) -> Self {
        Busy(rejection)
    }
}

#[resilient]
#[allow(async_fn_in_trait)] // a crate's own trait: no `Send` bound needed
pub trait Service: Send + Sync {
    #[bulkhead(name = "free", max_concurrent = 1000000)]
    fn free(&self, x: u64) -> Result<u64, Busy>;

    #[bulkhead(name = "full", max_concurrent = 1)]
    fn full(&self, x: u64) -> Result<u64, Busy>;

    /// Issue 33 item 4: the async wrapper, free and rejected.
    #[bulkhead(name = "free_async", max_concurrent = 1000000)]
    async fn free_async(&self, x: u64) -> Result<u64, Busy>;

    #[bulkhead(name = "full_async", max_concurrent = 1)]
    async fn full_async(&self, x: u64) -> Result<u64, Busy>;
}

/// Chaos, disabled as it is by default, against the same method without
/// it: `composed` has a circuit breaker and a bulkhead (a call through
/// `Policies`), `composed_chaos` the same and a chaos policy that is not
/// enabled, so that the difference is what disabled chaos costs a call.
#[resilient]
trait Chaotic: Send + Sync {
    #[bulkhead(name = "composed", max_concurrent = 1000000)]
    #[circuit_breaker(name = "composed")]
    fn composed(&self, x: u64) -> Result<u64, Busy>;

    #[bulkhead(name = "composed_chaos", max_concurrent = 1000000)]
    #[circuit_breaker(name = "composed_chaos")]
    #[chaos(name = "off")]
    fn composed_chaos(&self, x: u64) -> Result<u64, Busy>;

    #[bulkhead(name = "composed_async", max_concurrent = 1000000)]
    #[circuit_breaker(name = "composed_async")]
    async fn composed_async(&self, x: u64) -> Result<u64, Busy>;

    #[bulkhead(name = "composed_chaos_async", max_concurrent = 1000000)]
    #[circuit_breaker(name = "composed_chaos_async")]
    #[chaos(name = "off")]
    async fn composed_chaos_async(&self, x: u64) -> Result<u64, Busy>;
}

/// The delegate: next to no work, out of line, as a real method would be.
pub struct Backend;

impl Chaotic for Backend {
    #[inline(never)]
    fn composed(&self, x: u64) -> Result<u64, Busy> {
        Ok(x.wrapping_mul(31))
    }

    #[inline(never)]
    fn composed_chaos(&self, x: u64) -> Result<u64, Busy> {
        Ok(x.wrapping_mul(31))
    }

    async fn composed_async(&self, x: u64) -> Result<u64, Busy> {
        Ok(x.wrapping_mul(31))
    }

    async fn composed_chaos_async(&self, x: u64) -> Result<u64, Busy> {
        Ok(x.wrapping_mul(31))
    }
}

impl Service for Backend {
    #[inline(never)]
    fn free(&self, x: u64) -> Result<u64, Busy> {
        Ok(x.wrapping_mul(31))
    }

    #[inline(never)]
    fn full(&self, x: u64) -> Result<u64, Busy> {
        Ok(x.wrapping_mul(17))
    }

    async fn free_async(&self, x: u64) -> Result<u64, Busy> {
        Ok(x.wrapping_mul(31))
    }

    async fn full_async(&self, x: u64) -> Result<u64, Busy> {
        Ok(x.wrapping_mul(17))
    }
}

const DEFAULT_CALLS: u64 = 4_000_000;
const DEFAULT_ROUNDS: usize = 15;

/// A slot count no loop comes near: the semaphores below always have room.
const ROOMY: u64 = 1_000_000;

/// The limit of the bulkheads of issue 29's cases, and the floor of the
/// adaptive ones: a limit the algorithms may not move, so that no call is
/// refused (one thread holds one slot) while windows close and every call
/// is a sample.
const FIXED: u32 = 1000;

/// What a call's result adds to the accumulator.
#[inline(always)]
fn fold(result: Result<u64, Busy>) -> u64 {
    result.unwrap_or(1)
}

#[inline(never)]
/// Issue 33: `Pipeline::execute` of a call that cannot fail.
fn pipeline_execute(calls: u64, pipeline: &Pipeline) -> u64 {
    let mut acc = 0_u64;
    for i in 0..calls {
        let result = black_box(pipeline).execute(|| Ok::<u64, ()>(black_box(i)));
        acc = acc.wrapping_add(result.map_or(1, |v| v));
    }
    acc
}

/// Issue 33: `Pipeline::execute_async` of a call that cannot fail, polled
/// once (ready at once).
#[inline(never)]
fn pipeline_execute_async(calls: u64, pipeline: &Pipeline) -> u64 {
    let mut acc = 0_u64;
    let mut cx = Context::from_waker(Waker::noop());
    for i in 0..calls {
        let future =
            black_box(pipeline).execute_async(|| async move { Ok::<u64, ()>(black_box(i)) });
        acc = acc.wrapping_add(match pin!(future).poll(&mut cx) {
            Poll::Ready(result) => result.map_or(1, |v| v),
            Poll::Pending => 3,
        });
    }
    acc
}

/// Issue 33 item 4: the async wrapper polled once, free or rejected.
#[inline(never)]
fn wrapper_async(calls: u64, service: &ResilientService<Backend>, full: bool) -> u64 {
    let mut acc = 0_u64;
    let mut cx = Context::from_waker(Waker::noop());
    for i in 0..calls {
        acc = acc.wrapping_add(if full {
            poll_once(black_box(service).full_async(i), &mut cx)
        } else {
            poll_once(black_box(service).free_async(i), &mut cx)
        });
    }
    acc
}

/// Issue 33: governor's `check()` on a direct (unkeyed) limiter with its
/// default clock (quanta's TSC-based one), a quota it never exhausts.
fn governor_check(calls: u64, limiter: &governor::DefaultDirectRateLimiter) -> u64 {
    let mut acc = 0_u64;
    for _ in 0..calls {
        acc = acc.wrapping_add(u64::from(black_box(limiter).check().is_ok()));
    }
    acc
}

fn direct(calls: u64, backend: &Backend) -> u64 {
    let mut acc = 0_u64;
    for i in 0..calls {
        acc = acc.wrapping_add(fold(black_box(backend).free(i)));
    }
    acc
}

#[inline(never)]
fn wrapper(calls: u64, service: &ResilientService<Backend>) -> u64 {
    let mut acc = 0_u64;
    for i in 0..calls {
        acc = acc.wrapping_add(fold(black_box(service).free(i)));
    }
    acc
}

#[inline(never)]
fn composed(calls: u64, service: &ResilientChaotic<Backend>) -> u64 {
    let mut acc = 0_u64;
    for i in 0..calls {
        acc = acc.wrapping_add(fold(black_box(service).composed(i)));
    }
    acc
}

#[inline(never)]
fn composed_chaos(calls: u64, service: &ResilientChaotic<Backend>) -> u64 {
    let mut acc = 0_u64;
    for i in 0..calls {
        acc = acc.wrapping_add(fold(black_box(service).composed_chaos(i)));
    }
    acc
}

/// The future of `call`, polled once (it is ready at once).
#[inline(always)]
fn poll_once<F: Future<Output = Result<u64, Busy>>>(future: F, cx: &mut Context<'_>) -> u64 {
    match pin!(future).poll(cx) {
        Poll::Ready(result) => fold(result),
        Poll::Pending => 3,
    }
}

#[inline(never)]
fn composed_async(calls: u64, service: &ResilientChaotic<Backend>) -> u64 {
    let mut acc = 0_u64;
    let mut cx = Context::from_waker(Waker::noop());
    for i in 0..calls {
        acc = acc.wrapping_add(poll_once(black_box(service).composed_async(i), &mut cx));
    }
    acc
}

#[inline(never)]
fn composed_chaos_async(calls: u64, service: &ResilientChaotic<Backend>) -> u64 {
    let mut acc = 0_u64;
    let mut cx = Context::from_waker(Waker::noop());
    for i in 0..calls {
        acc = acc.wrapping_add(poll_once(
            black_box(service).composed_chaos_async(i),
            &mut cx,
        ));
    }
    acc
}

/// What the wrapper does, written by hand and inlined into the caller's
/// loop: the same work without the wrapper method's own call and frame.
#[inline(always)]
fn by_hand(bulkhead: &Bulkhead, backend: &Backend, x: u64) -> Result<u64, Busy> {
    let permit = bulkhead
        .enter()
        .map_err(|full| Busy(Rejection::from(full)))?;
    let output = backend.free(x);
    drop(permit);
    output
}

#[inline(never)]
fn inlined(calls: u64, bulkhead: &Bulkhead, backend: &Backend) -> u64 {
    let mut acc = 0_u64;
    for i in 0..calls {
        acc = acc.wrapping_add(fold(by_hand(black_box(bulkhead), black_box(backend), i)));
    }
    acc
}

#[inline(never)]
fn wrapper_rejected(calls: u64, service: &ResilientService<Backend>) -> u64 {
    let mut acc = 0_u64;
    for i in 0..calls {
        acc = acc.wrapping_add(fold(black_box(service).full(i)));
    }
    acc
}

/// The floor of every counting semaphore: one read-modify-write to take a
/// slot and one to give it back.
#[inline(never)]
fn floor_pair(calls: u64, counter: &AtomicU64) -> u64 {
    let mut acc = 0_u64;
    for _ in 0..calls {
        let counter = black_box(counter);
        acc = acc.wrapping_add(counter.fetch_add(1, Ordering::Acquire));
        acc = acc.wrapping_add(counter.fetch_sub(1, Ordering::Release));
    }
    acc
}

/// A semaphore that refuses with a plain load: load, compare-exchange
/// adding one unless full, and a `fetch_sub` whose result is tested (as a
/// release that may have to wake someone tests it).
#[inline(always)]
fn cas_acquire(state: &AtomicU64, max: u64) -> bool {
    let mut current = state.load(Ordering::Relaxed);
    loop {
        if current >= max {
            return false;
        }
        match state.compare_exchange_weak(
            current,
            current + 1,
            Ordering::Acquire,
            Ordering::Relaxed,
        ) {
            Ok(_) => return true,
            Err(actual) => current = actual,
        }
    }
}

#[cold]
#[inline(never)]
fn wake_someone() {
    black_box(());
}

#[inline(never)]
fn floor_cas(calls: u64, state: &AtomicU64, max: u64) -> u64 {
    let mut acc = 0_u64;
    for _ in 0..calls {
        let state = black_box(state);
        if cas_acquire(state, max) {
            acc = acc.wrapping_add(1);
            if state.fetch_sub(1, Ordering::Release) > max {
                wake_someone();
            }
        } else {
            acc = acc.wrapping_add(2);
        }
    }
    acc
}

/// The same, with the delegate's call between taking and giving back the
/// slot, as a wrapper makes it: the floor of a wrapper, whose delegate call
/// sits between two locked instructions.
#[inline(never)]
fn floor_cas_call(calls: u64, state: &AtomicU64, max: u64, backend: &Backend) -> u64 {
    let mut acc = 0_u64;
    for i in 0..calls {
        let state = black_box(state);
        if cas_acquire(state, max) {
            acc = acc.wrapping_add(fold(black_box(backend).free(i)));
            if state.fetch_sub(1, Ordering::Release) > max {
                wake_someone();
            }
        } else {
            acc = acc.wrapping_add(2);
        }
    }
    acc
}

#[inline(never)]
fn tokio_try_acquire(calls: u64, semaphore: &Semaphore) -> u64 {
    let mut acc = 0_u64;
    for _ in 0..calls {
        acc = acc.wrapping_add(match black_box(semaphore).try_acquire() {
            Ok(permit) => {
                drop(permit);
                1
            }
            Err(_) => 2,
        });
    }
    acc
}

#[inline(never)]
fn try_enter(calls: u64, bulkhead: &Bulkhead) -> u64 {
    let mut acc = 0_u64;
    for _ in 0..calls {
        acc = acc.wrapping_add(match black_box(bulkhead).try_enter() {
            Ok(permit) => {
                drop(permit);
                1
            }
            Err(_) => 2,
        });
    }
    acc
}

/// Issue 31: `try_enter(&key)` + drop on a keyed bulkhead, the key live.
#[inline(never)]
fn keyed_try_enter<K, Q>(calls: u64, keyed: &KeyedBulkhead<K>, key: &Q) -> u64
where
    K: std::hash::Hash + Eq + Send + Sync + 'static + std::borrow::Borrow<Q>,
    Q: std::hash::Hash + Eq + ToOwned<Owned = K> + ?Sized,
{
    let mut acc = 0_u64;
    for _ in 0..calls {
        acc = acc.wrapping_add(match black_box(keyed).try_enter(black_box(key)) {
            Ok(permit) => {
                drop(permit);
                1
            }
            Err(_) => 2,
        });
    }
    acc
}

/// Issue 33: `enter_async(&key)` on a keyed bulkhead polled once with a
/// noop waker (`max_wait` zero: admitted or rejected at the first poll),
/// the permit dropped.
#[inline(never)]
fn keyed_enter_async<K, Q>(calls: u64, keyed: &KeyedBulkhead<K>, key: &Q) -> u64
where
    K: std::hash::Hash + Eq + Send + Sync + 'static + std::borrow::Borrow<Q>,
    Q: std::hash::Hash + Eq + ToOwned<Owned = K> + ?Sized,
{
    let mut acc = 0_u64;
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..calls {
        let enter = pin!(black_box(keyed).enter_async(black_box(key)));
        acc = acc.wrapping_add(match enter.poll(&mut cx) {
            Poll::Ready(Ok(permit)) => {
                drop(permit);
                1
            }
            Poll::Ready(Err(_)) => 2,
            Poll::Pending => 3,
        });
    }
    acc
}

/// Issue 33: the contention bench's async keyed reference, uncontended: a
/// tokio `Semaphore` per key in a `DashMap`, the key's looked up and
/// `try_acquire_owned()` on a clone of its `Arc` (refused when the key
/// holds its one permit), the permit dropped.
#[inline(never)]
fn tokio_dashmap_try_acquire(
    calls: u64,
    keys: &DashMap<u64, std::sync::Arc<Semaphore>>,
    key: u64,
) -> u64 {
    let mut acc = 0_u64;
    for _ in 0..calls {
        let semaphore = match black_box(keys).get(&black_box(key)) {
            Some(semaphore) => std::sync::Arc::clone(&semaphore),
            None => return acc,
        };
        acc = acc.wrapping_add(match semaphore.try_acquire_owned() {
            Ok(permit) => {
                drop(permit);
                1
            }
            Err(_) => 2,
        });
    }
    acc
}

/// Issue 31's "one hash lookup": a key hashed by foldhash's fast hasher
/// and found in a hashbrown `HashTable` of boxed entries, as the keyed
/// bulkhead's table holds them (one key in it), a load of the entry's
/// first word kept.
#[inline(never)]
fn hash_lookup<K, Q>(
    calls: u64,
    table: &hashbrown::HashTable<Box<(AtomicU64, K)>>,
    hasher: &foldhash::fast::RandomState,
    key: &Q,
) -> u64
where
    K: std::borrow::Borrow<Q>,
    Q: std::hash::Hash + Eq + ?Sized,
{
    use std::hash::BuildHasher;
    let mut acc = 0_u64;
    for _ in 0..calls {
        let key = black_box(key);
        let hash = black_box(hasher).hash_one(key);
        acc = acc.wrapping_add(
            match black_box(table).find(hash, |entry| entry.1.borrow() == key) {
                Some(entry) => entry.0.load(Ordering::Relaxed),
                None => 2,
            },
        );
    }
    acc
}

/// What criterion's harness does with a result: moves it into a function
/// that escapes its address (`benches/bulkhead.rs`'s `consume`).
#[inline(always)]
fn consume<T>(value: T) {
    black_box(&value);
}

#[inline(never)]
fn try_enter_consumed(calls: u64, bulkhead: &Bulkhead) -> u64 {
    for _ in 0..calls {
        consume(black_box(bulkhead).try_enter());
    }
    calls
}

#[inline(never)]
fn wrapper_consumed(calls: u64, service: &ResilientService<Backend>) -> u64 {
    for i in 0..calls {
        consume(black_box(service).free(black_box(i)));
    }
    calls
}

#[inline(never)]
fn enter_async_once(calls: u64, bulkhead: &Bulkhead) -> u64 {
    let mut acc = 0_u64;
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..calls {
        let enter = pin!(black_box(bulkhead).enter_async());
        acc = acc.wrapping_add(match enter.poll(&mut cx) {
            Poll::Ready(Ok(permit)) => {
                drop(permit);
                1
            }
            Poll::Ready(Err(_)) => 2,
            Poll::Pending => 3,
        });
    }
    acc
}

/// `try_enter()` + drop with what an adaptive call adds, written by hand
/// on a plain bulkhead: the two recent clock readings (one at admission,
/// one at release: the `RecentTime` of the registry's clock, as the
/// adaptive bulkhead's timeline reads it), and, given a `sample` word, one
/// locked addition of the hold time and a count to it, as a sample is
/// recorded. The bound issue 29 sets for an adaptive call.
#[inline(always)]
fn enter_timed(bulkhead: &Bulkhead, recent: RecentTime, sample: Option<&AtomicU64>) -> u64 {
    match bulkhead.try_enter() {
        Ok(permit) => {
            let started = black_box(recent).nanos();
            let held = black_box(recent).nanos().saturating_sub(started);
            drop(permit);
            match sample {
                Some(word) => {
                    let delta = 1 << 52 | held.min(1 << 40);
                    let after = word.fetch_add(delta, Ordering::Relaxed).wrapping_add(delta);
                    1 + (after >> 63)
                }
                None => 1 + held,
            }
        }
        Err(_) => 2,
    }
}

#[inline(never)]
fn try_enter_timed(
    calls: u64,
    bulkhead: &Bulkhead,
    recent: RecentTime,
    sample: Option<&AtomicU64>,
) -> u64 {
    let mut acc = 0_u64;
    for _ in 0..calls {
        acc = acc.wrapping_add(enter_timed(black_box(bulkhead), recent, black_box(sample)));
    }
    acc
}

/// The same, async: `enter_async()` polled once, then the readings and the
/// addition.
#[inline(never)]
fn enter_async_timed(
    calls: u64,
    bulkhead: &Bulkhead,
    recent: RecentTime,
    sample: &AtomicU64,
) -> u64 {
    let mut acc = 0_u64;
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..calls {
        let enter = pin!(black_box(bulkhead).enter_async());
        acc = acc.wrapping_add(match enter.poll(&mut cx) {
            Poll::Ready(Ok(permit)) => {
                let started = black_box(recent).nanos();
                let held = black_box(recent).nanos().saturating_sub(started);
                drop(permit);
                let word = black_box(sample);
                let delta = 1 << 52 | held.min(1 << 40);
                let after = word.fetch_add(delta, Ordering::Relaxed).wrapping_add(delta);
                1 + (after >> 63)
            }
            Poll::Ready(Err(_)) => 2,
            Poll::Pending => 3,
        });
    }
    acc
}

/// One locked read-modify-write a call: what the target allows an adaptive
/// call over the bulkhead and its readings, alone.
#[inline(never)]
fn floor_rmw(calls: u64, word: &AtomicU64) -> u64 {
    let mut acc = 0_u64;
    for _ in 0..calls {
        acc = acc.wrapping_add(black_box(word).fetch_add(1, Ordering::Relaxed));
    }
    acc
}

/// One case: its name, the row label, and a loop to time.
struct Case<'a> {
    name: &'static str,
    what: &'static str,
    run: Box<dyn Fn(u64) -> u64 + 'a>,
    /// ns per call of each round, by the wall clock.
    wall: Vec<f64>,
    /// ns per call of each round, in the thread's CPU time.
    cpu: Vec<f64>,
}

impl<'a> Case<'a> {
    fn new(name: &'static str, what: &'static str, run: impl Fn(u64) -> u64 + 'a) -> Self {
        Case {
            name,
            what,
            run: Box::new(run),
            wall: Vec::new(),
            cpu: Vec::new(),
        }
    }
}

fn best(times: &[f64]) -> f64 {
    times.iter().copied().fold(f64::INFINITY, f64::min)
}

fn median(times: &[f64]) -> f64 {
    let mut sorted = times.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted[sorted.len() / 2]
}

/// The calling thread's CPU time, in ns.
fn cpu_time() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a
    // constant the kernel supports since 2.6.12.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "CLOCK_THREAD_CPUTIME_ID is readable");
    ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
}

fn env_or<T: std::str::FromStr>(key: &str, default: T) -> T {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let calls: u64 = env_or("BULKHEAD_CALLS", DEFAULT_CALLS);
    let rounds: usize = env_or("BULKHEAD_ROUNDS", DEFAULT_ROUNDS);

    let registry = Registry::new();
    let service = ResilientService::new(Backend, &registry)?;
    let chaotic = ResilientChaotic::new(Backend, &registry)?;
    // Issue 32: the same trait on a registry whose histograms record (as
    // once `observe::export_metrics` runs).
    // Only when every case runs or a `_recorded` case is asked for by
    // name: recording sets a process-wide flag that calls which do not
    // record read, so cases named without one are measured as in a process
    // where nothing records.
    let recording = Registry::new();
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().is_none() || args.any(|arg| arg.ends_with("_recorded")) {
        recording.telemetry().record();
    }
    let chaotic_recorded = ResilientChaotic::new(Backend, &recording)?;
    assert!(!registry.chaos("off")?.chaos().is_enabled(), "chaos is off");
    let (free_handle, full_handle) = (registry.bulkhead("free")?, registry.bulkhead("full")?);
    let _held = full_handle.bulkhead().try_enter()?;
    let full_async_handle = registry.bulkhead("full_async")?;
    let _held_async = full_async_handle.bulkhead().try_enter()?;
    assert!(service.full(0).is_err(), "the full bulkhead rejects");
    assert!(service.free(0).is_ok(), "the free bulkhead admits");

    let counter = AtomicU64::new(0);
    let state = AtomicU64::new(0);
    let state_full = AtomicU64::new(1);
    let semaphore = Semaphore::new(ROOMY as usize);
    let semaphore_full = Semaphore::new(1);
    let _held_permit = semaphore_full.try_acquire()?;
    let config = |max| BulkheadConfig::builder().max_concurrent(max).build();
    let roomy = Bulkhead::new("user-roomy", config(ROOMY as u32)?);
    let full = Bulkhead::new("user-full", config(1)?);
    let _held_slot = full.try_enter()?;
    // Issue 30: two slots, one held: a Sheddable call (share 0.5, 1 slot)
    // is shed while a Normal one would be admitted.
    let shedding = Bulkhead::new("user-shedding", config(2)?);
    let _held_shedding = shedding.try_enter()?;

    // Issue 29: bulkheads built as the adaptive guide shows, through a
    // `Pipeline` on the registry, one plain and one per algorithm with
    // its defaults, the floor at the ceiling so that none refuses.
    let pipeline = |name: &str, adaptive: Adaptive| {
        Pipeline::builder(&registry, name)
            .bulkhead(|b| {
                b.max_concurrent(FIXED)
                    .min_concurrent(FIXED)
                    .adaptive(adaptive)
            })
            .build()
    };
    let names = ["fixed", "aimd", "vegas", "gradient2"];
    let algorithms = [
        Adaptive::Off,
        Adaptive::Aimd,
        Adaptive::Vegas,
        Adaptive::Gradient2,
    ];
    let _pipelines = names
        .iter()
        .zip(algorithms)
        .map(|(name, adaptive)| pipeline(name, adaptive))
        .collect::<Result<Vec<_>, _>>()?;
    let [fixed, aimd, vegas, gradient2] = names.map(|name| registry.bulkhead(name));
    let (fixed, aimd, vegas, gradient2) = (fixed?, aimd?, vegas?, gradient2?);
    assert!(
        fixed.bulkhead().adaptive().is_none(),
        "the plain one is plain"
    );
    // The clock an adaptive bulkhead reads twice a call: the registry's, by
    // its recent reading (one atomic load on the system clock).
    let recent = registry
        .clock()
        .recent_time()
        .ok_or("the registry's clock keeps a recent reading")?;
    let sample = AtomicU64::new(0);
    let rmw = AtomicU64::new(0);

    // Issue 31: keyed bulkheads (from bulkhead-core: the facade does not
    // re-export them yet), a live key each; `full` keys hold their one
    // slot.
    let keyed_config = |per_key| {
        BulkheadConfig::builder()
            .max_concurrent(ROOMY as u32)
            .per_key(per_key)
            .build()
    };
    let keyed_u64: KeyedBulkhead<u64> = KeyedBulkhead::new("user-keyed-u64", keyed_config(1000)?);
    let keyed_str: KeyedBulkhead<String> =
        KeyedBulkhead::new("user-keyed-str", keyed_config(1000)?);
    let keyed_u64_full: KeyedBulkhead<u64> =
        KeyedBulkhead::new("user-keyed-u64-full", keyed_config(1)?);
    let keyed_str_full: KeyedBulkhead<String> =
        KeyedBulkhead::new("user-keyed-str-full", keyed_config(1)?);
    let (key_u64, key_str) = (42_u64, "tenant-42");
    drop(keyed_u64.try_enter(&key_u64)?);
    drop(keyed_str.try_enter(key_str)?);
    let _held_u64 = keyed_u64_full.try_enter(&key_u64)?;
    let _held_str = keyed_str_full.try_enter(key_str)?;
    assert!(keyed_u64.is_live(&key_u64) && keyed_str.is_live(key_str));
    assert!(
        keyed_u64_full.try_enter(&key_u64).is_err() && keyed_str_full.try_enter(key_str).is_err()
    );
    // Issue 33: the contention bench's async keyed reference (tokio per
    // key in a DashMap), one live key, roomy or holding its one permit.
    let tokio_map: DashMap<u64, std::sync::Arc<Semaphore>> = DashMap::new();
    tokio_map.insert(key_u64, std::sync::Arc::new(Semaphore::new(1000)));
    let tokio_map_full: DashMap<u64, std::sync::Arc<Semaphore>> = DashMap::new();
    tokio_map_full.insert(key_u64, std::sync::Arc::new(Semaphore::new(1)));
    let _held_tokio_map = tokio_map_full
        .get(&key_u64)
        .map(|semaphore| std::sync::Arc::clone(&semaphore).try_acquire_owned())
        .ok_or("the key is live")??;
    // A keyed bulkhead where another key has a call waiting (its one slot
    // held, a second call queued for up to an hour): the free path of
    // every other key while anybody waits, as under a noisy tenant.
    let keyed_waited: KeyedBulkhead<u64> = KeyedBulkhead::new(
        "user-keyed-waited",
        BulkheadConfig::builder()
            .max_concurrent(ROOMY as u32)
            .per_key(1)
            .max_wait(Duration::from_secs(3600))
            .build()?,
    );
    let noisy_key = 7_u64;
    let _held_noisy = keyed_waited.try_enter(&noisy_key)?;
    let mut queued = Box::pin(keyed_waited.enter_async(&noisy_key));
    assert!(
        queued
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
            .is_pending(),
        "the second call of the noisy key waits"
    );
    assert_eq!(keyed_waited.waiting_calls(), 1);
    // The same with 1000 keys waiting (each at its one slot, one call
    // queued): the dispatch under the wait lock visits every waiting key.
    let keyed_waited_many: KeyedBulkhead<u64> = KeyedBulkhead::new(
        "user-keyed-waited-many",
        BulkheadConfig::builder()
            .max_concurrent(ROOMY as u32)
            .per_key(1)
            .max_wait(Duration::from_secs(3600))
            .build()?,
    );
    let waiting_keys: Vec<u64> = (1000..2000).collect();
    let _held_many = waiting_keys
        .iter()
        .map(|key| keyed_waited_many.try_enter(key))
        .collect::<Result<Vec<_>, _>>()?;
    let mut queued_many: Vec<_> = waiting_keys
        .iter()
        .map(|key| Box::pin(keyed_waited_many.enter_async(key)))
        .collect();
    for queued in &mut queued_many {
        let polled = queued
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()));
        assert!(polled.is_pending(), "each waiting key's call waits");
    }
    assert_eq!(keyed_waited_many.waiting_calls(), 1000);
    let lookup_hasher = foldhash::fast::RandomState::default();
    let mut table_u64: hashbrown::HashTable<Box<(AtomicU64, u64)>> = hashbrown::HashTable::new();
    let mut table_str: hashbrown::HashTable<Box<(AtomicU64, String)>> = hashbrown::HashTable::new();
    {
        use std::hash::BuildHasher;
        table_u64.insert_unique(
            lookup_hasher.hash_one(key_u64),
            Box::new((AtomicU64::new(1), key_u64)),
            |e| lookup_hasher.hash_one(e.1),
        );
        table_str.insert_unique(
            lookup_hasher.hash_one(key_str),
            Box::new((AtomicU64::new(1), key_str.to_owned())),
            |e| lookup_hasher.hash_one(&e.1),
        );
    }

    // Issue 33: a rate limiter on top of a `Pipeline` bulkhead, at
    // Resilience4j's default period (500 ns), 1 ms and 1 h, never out of
    // permits; the bulkhead alone; governor's check beside them.
    let limited = |name: &str, period: Option<Duration>| {
        let builder = Pipeline::builder(&registry, name).bulkhead(|b| b.max_concurrent(25));
        match period {
            None => builder.build(),
            Some(period) => builder
                .rate_limiter(|r| {
                    let r = r.limit_for_period(u32::MAX);
                    if period.is_zero() {
                        r
                    } else {
                        r.refresh_period(period)
                    }
                })
                .build(),
        }
    };
    let rl_bulkhead = limited("rl-bulkhead", None)?;
    let rl_default = limited("rl-default", Some(Duration::ZERO))?;
    let rl_1ms = limited("rl-1ms", Some(Duration::from_millis(1)))?;
    let rl_10ms = limited("rl-10ms", Some(Duration::from_millis(10)))?;
    let rl_20ms = limited("rl-20ms", Some(Duration::from_millis(20)))?;
    let rl_50ms = limited("rl-50ms", Some(Duration::from_millis(50)))?;
    let rl_1s = limited("rl-1s", Some(Duration::from_secs(1)))?;
    let rl_1h = limited("rl-1h", Some(Duration::from_secs(3600)))?;
    let governor_limiter =
        governor::RateLimiter::direct(governor::Quota::per_second(std::num::NonZeroU32::MAX));

    // Issue 33 items 2-4: each policy at its defaults (timeout: 1 s) on a
    // `Pipeline` bulkhead at its defaults, all five, and async hedging.
    let stack = |name: &str,
                 f: &dyn Fn(
        bulkhead::pipeline::PipelineBuilder<'_>,
    ) -> bulkhead::pipeline::PipelineBuilder<'_>| {
        f(Pipeline::builder(&registry, name).bulkhead(|b| b)).build()
    };
    let p_bh = stack("p33-bulkhead", &|p| p)?;
    let p_cb = stack("p33-cb", &|p| p.circuit_breaker(|c| c))?;
    let p_retry = stack("p33-retry", &|p| p.retry(|r| r))?;
    let p_timeout = stack("p33-timeout", &|p| p.timeout(|t| t))?;
    let p_rl = stack("p33-rl", &|p| p.rate_limiter(|r| r))?;
    let p_all = stack("p33-all", &|p| {
        p.circuit_breaker(|c| c)
            .retry(|r| r)
            .timeout(|t| t)
            .rate_limiter(|r| r)
    })?;
    let p_all_rl1h = stack("p33-all-rl1h", &|p| {
        p.circuit_breaker(|c| c)
            .retry(|r| r)
            .timeout(|t| t)
            .rate_limiter(|r| {
                r.refresh_period(Duration::from_secs(3600))
                    .limit_for_period(u32::MAX)
            })
    })?;
    let p_cb_untimed = stack("p33-cb-untimed", &|p| {
        p.circuit_breaker(|c| c.slow_call_threshold(Duration::MAX))
    })?;
    let p_hedge = stack("p33-hedge", &|p| p.hedge(|h| h))?;
    let mut cx = Context::from_waker(Waker::noop());
    assert_eq!(
        poll_once(service.full_async(0), &mut cx),
        1,
        "full_async rejects"
    );
    assert_eq!(
        poll_once(service.free_async(1), &mut cx),
        31,
        "free_async admits"
    );

    let mut cases = vec![
        Case::new(
            "p33_bulkhead",
            "issue 33: Pipeline bulkhead (defaults) alone",
            |n| pipeline_execute(n, &p_bh),
        ),
        Case::new("p33_cb", "issue 33: + circuit breaker, defaults", |n| {
            pipeline_execute(n, &p_cb)
        }),
        Case::new(
            "p33_cb_untimed",
            "issue 33: + circuit breaker, untimed (slow_call_threshold MAX)",
            |n| pipeline_execute(n, &p_cb_untimed),
        ),
        Case::new(
            "p33_async_cb",
            "issue 33: execute_async polled once, + circuit breaker",
            |n| pipeline_execute_async(n, &p_cb),
        ),
        Case::new(
            "p33_async_all",
            "issue 33: execute_async polled once, all five, defaults",
            |n| pipeline_execute_async(n, &p_all),
        ),
        Case::new("p33_retry", "issue 33: + retry, defaults", |n| {
            pipeline_execute(n, &p_retry)
        }),
        Case::new("p33_timeout", "issue 33: + timeout, defaults (1 s)", |n| {
            pipeline_execute(n, &p_timeout)
        }),
        Case::new("p33_rl", "issue 33: + rate limiter, defaults", |n| {
            pipeline_execute(n, &p_rl)
        }),
        Case::new("p33_all", "issue 33: all five, defaults", |n| {
            pipeline_execute(n, &p_all)
        }),
        Case::new(
            "p33_all_rl1h",
            "issue 33: all five, rate limiter 1 h",
            |n| pipeline_execute(n, &p_all_rl1h),
        ),
        Case::new(
            "p33_async_none",
            "issue 33: execute_async polled once, bulkhead alone",
            |n| pipeline_execute_async(n, &p_bh),
        ),
        Case::new(
            "p33_async_hedge",
            "issue 33: execute_async polled once, + hedge (defaults, untriggered)",
            |n| pipeline_execute_async(n, &p_hedge),
        ),
        Case::new(
            "wrapper_async",
            "issue 33: async wrapper polled once, free slot",
            |n| wrapper_async(n, &service, false),
        ),
        Case::new(
            "wrapper_async_rejected",
            "issue 33: async wrapper polled once, rejected",
            |n| wrapper_async(n, &service, true),
        ),
        Case::new(
            "rate_limiter_bulkhead",
            "issue 33: a Pipeline bulkhead alone",
            |n| pipeline_execute(n, &rl_bulkhead),
        ),
        Case::new(
            "rate_limiter_default",
            "issue 33: + rate limiter, default period (500 ns)",
            |n| pipeline_execute(n, &rl_default),
        ),
        Case::new(
            "rate_limiter_1ms",
            "issue 33: + rate limiter, 1 ms period",
            |n| pipeline_execute(n, &rl_1ms),
        ),
        Case::new(
            "rate_limiter_10ms",
            "issue 33: + rate limiter, 10 ms period",
            |n| pipeline_execute(n, &rl_10ms),
        ),
        Case::new(
            "rate_limiter_20ms",
            "issue 33: + rate limiter, 20 ms period (the shortest on recent readings)",
            |n| pipeline_execute(n, &rl_20ms),
        ),
        Case::new(
            "rate_limiter_50ms",
            "issue 33: + rate limiter, 50 ms period",
            |n| pipeline_execute(n, &rl_50ms),
        ),
        Case::new(
            "rate_limiter_1s",
            "issue 33: + rate limiter, 1 s period",
            |n| pipeline_execute(n, &rl_1s),
        ),
        Case::new(
            "rate_limiter_1h",
            "issue 33: + rate limiter, 1 h period",
            |n| pipeline_execute(n, &rl_1h),
        ),
        Case::new("governor_check", "issue 33: governor 0.10 check()", |n| {
            governor_check(n, &governor_limiter)
        }),
        Case::new("direct", "the delegate called directly", |n| {
            direct(n, &Backend)
        }),
        Case::new("wrapper", "the wrapper, free slot", |n| {
            wrapper(n, &service)
        }),
        Case::new("wrapper_rejected", "the wrapper, rejected", |n| {
            wrapper_rejected(n, &service)
        }),
        Case::new("floor_pair", "floor: `fetch_add` + `fetch_sub`", |n| {
            floor_pair(n, &counter)
        }),
        Case::new(
            "floor_cas",
            "floor: load, `compare_exchange_weak`, `fetch_sub`",
            |n| floor_cas(n, &state, ROOMY),
        ),
        Case::new(
            "floor_cas_call",
            "floor: the same around the delegate's call",
            |n| floor_cas_call(n, &state, ROOMY, &Backend),
        ),
        Case::new(
            "floor_cas_rejected",
            "floor: the same, refused by its load",
            |n| floor_cas(n, &state_full, 1),
        ),
        Case::new("tokio_try_acquire", "tokio `try_acquire()` + drop", |n| {
            tokio_try_acquire(n, &semaphore)
        }),
        Case::new(
            "tokio_try_acquire_failed",
            "tokio `try_acquire()` failed",
            |n| tokio_try_acquire(n, &semaphore_full),
        ),
        Case::new("try_enter", "`Bulkhead::try_enter()` + drop", |n| {
            try_enter(n, &roomy)
        }),
        Case::new(
            "try_enter_rejected",
            "`Bulkhead::try_enter()` rejected",
            |n| try_enter(n, &full),
        ),
        Case::new(
            "try_enter_critical",
            "issue 30: `try_enter()` + drop inside `priority::with(Critical)`",
            |n| bulkhead::priority::with(bulkhead::Priority::Critical, || try_enter(n, &roomy)),
        ),
        Case::new(
            "try_enter_sheddable",
            "issue 30: `try_enter()` + drop inside `priority::with(Sheddable)`, below its share",
            |n| bulkhead::priority::with(bulkhead::Priority::Sheddable, || try_enter(n, &roomy)),
        ),
        Case::new(
            "try_enter_shed",
            "issue 30: `try_enter()` shed: Sheddable on a bulkhead past its share",
            |n| bulkhead::priority::with(bulkhead::Priority::Sheddable, || try_enter(n, &shedding)),
        ),
        Case::new(
            "composed_deadline",
            "issue 30: `composed` inside `deadline::with(now + 1 h)`",
            |n| {
                let far = Instant::now() + Duration::from_secs(3600);
                bulkhead::deadline::with(far, || composed(n, &chaotic))
            },
        ),
        Case::new(
            "enter_async",
            "`enter_async()` polled once + drop, free slot",
            |n| enter_async_once(n, &roomy),
        ),
        Case::new(
            "enter_async_rejected",
            "`enter_async()` polled once, rejected",
            |n| enter_async_once(n, &full),
        ),
        Case::new(
            "by_hand",
            "the wrapper's work by hand, inlined in the loop, free slot",
            |n| inlined(n, free_handle.bulkhead(), &Backend),
        ),
        Case::new(
            "by_hand_rejected",
            "the wrapper's work by hand, inlined in the loop, rejected",
            |n| inlined(n, full_handle.bulkhead(), &Backend),
        ),
        Case::new(
            "try_enter_consumed",
            "`try_enter()` + drop, result moved as criterion's harness does",
            |n| try_enter_consumed(n, &roomy),
        ),
        Case::new(
            "composed",
            "a circuit breaker and a bulkhead, through `Policies`",
            |n| composed(n, &chaotic),
        ),
        Case::new(
            "composed_chaos",
            "the same and a chaos policy, disabled",
            |n| composed_chaos(n, &chaotic),
        ),
        Case::new(
            "composed_async",
            "async: a circuit breaker and a bulkhead, polled once",
            |n| composed_async(n, &chaotic),
        ),
        Case::new(
            "composed_chaos_async",
            "async: the same and a chaos policy, disabled",
            |n| composed_chaos_async(n, &chaotic),
        ),
        Case::new(
            "composed_recorded",
            "`composed` on a registry recording histograms",
            |n| composed(n, &chaotic_recorded),
        ),
        Case::new(
            "composed_async_recorded",
            "`composed_async` on a registry recording histograms",
            |n| composed_async(n, &chaotic_recorded),
        ),
        Case::new(
            "wrapper_consumed",
            "the wrapper, free slot, result moved as criterion's harness does",
            |n| wrapper_consumed(n, &service),
        ),
        Case::new(
            "fixed_try_enter",
            "issue 29 (a): `try_enter()` + drop, the plain bulkhead",
            |n| try_enter(n, fixed.bulkhead()),
        ),
        Case::new(
            "fixed_readings",
            "issue 29 (b): (a) and two recent clock readings",
            |n| try_enter_timed(n, fixed.bulkhead(), recent, None),
        ),
        Case::new(
            "fixed_readings_rmw",
            "issue 29 (c): (b) and one locked `fetch_add`: the bound",
            |n| try_enter_timed(n, fixed.bulkhead(), recent, Some(&sample)),
        ),
        Case::new(
            "aimd_try_enter",
            "issue 29 (d): `try_enter()` + drop, adaptive AIMD",
            |n| try_enter(n, aimd.bulkhead()),
        ),
        Case::new(
            "vegas_try_enter",
            "issue 29 (d): `try_enter()` + drop, adaptive Vegas",
            |n| try_enter(n, vegas.bulkhead()),
        ),
        Case::new(
            "gradient2_try_enter",
            "issue 29 (d): `try_enter()` + drop, adaptive Gradient2",
            |n| try_enter(n, gradient2.bulkhead()),
        ),
        Case::new(
            "keyed_try_enter",
            "issue 31: `KeyedBulkhead<u64>::try_enter(&key)` + drop, live key",
            |n| keyed_try_enter(n, &keyed_u64, &key_u64),
        ),
        Case::new(
            "keyed_try_enter_str",
            "issue 31: `KeyedBulkhead<String>::try_enter(\"tenant-42\")` + drop, live key",
            |n| keyed_try_enter(n, &keyed_str, key_str),
        ),
        Case::new(
            "keyed_try_enter_others_wait",
            "issue 31: `KeyedBulkhead<u64>::try_enter(&key)` + drop, live key, another key's call waiting",
            |n| keyed_try_enter(n, &keyed_waited, &key_u64),
        ),
        Case::new(
            "keyed_try_enter_1000_wait",
            "issue 31: `KeyedBulkhead<u64>::try_enter(&key)` + drop, live key, 1000 other keys' calls waiting",
            |n| keyed_try_enter(n, &keyed_waited_many, &key_u64),
        ),
        Case::new(
            "keyed_try_enter_rejected",
            "issue 31: `KeyedBulkhead<u64>::try_enter(&key)` rejected, key at its per_key",
            |n| keyed_try_enter(n, &keyed_u64_full, &key_u64),
        ),
        Case::new(
            "keyed_enter_async",
            "issue 33: `KeyedBulkhead<u64>::enter_async(&key)` polled once + drop, free slot",
            |n| keyed_enter_async(n, &keyed_u64, &key_u64),
        ),
        Case::new(
            "keyed_enter_async_rejected",
            "issue 33: `KeyedBulkhead<u64>::enter_async(&key)` polled once, key at its per_key",
            |n| keyed_enter_async(n, &keyed_u64_full, &key_u64),
        ),
        Case::new(
            "tokio_dashmap",
            "issue 33: tokio `Semaphore` per key in a `DashMap`: get + `try_acquire_owned()` + drop",
            |n| tokio_dashmap_try_acquire(n, &tokio_map, key_u64),
        ),
        Case::new(
            "tokio_dashmap_rejected",
            "issue 33: tokio `Semaphore` per key in a `DashMap`: get + `try_acquire_owned()` refused",
            |n| tokio_dashmap_try_acquire(n, &tokio_map_full, key_u64),
        ),
        Case::new(
            "keyed_try_enter_rejected_str",
            "issue 31: `KeyedBulkhead<String>::try_enter(\"tenant-42\")` rejected, key at its per_key",
            |n| keyed_try_enter(n, &keyed_str_full, key_str),
        ),
        Case::new(
            "hash_lookup",
            "issue 31: one hash lookup, u64 (foldhash fast + hashbrown `HashTable::find`)",
            |n| hash_lookup(n, &table_u64, &lookup_hasher, &key_u64),
        ),
        Case::new(
            "hash_lookup_str",
            "issue 31: one hash lookup, \"tenant-42\" as &str",
            |n| hash_lookup(n, &table_str, &lookup_hasher, key_str),
        ),
        Case::new("floor_rmw", "floor: one locked `fetch_add`", |n| {
            floor_rmw(n, &rmw)
        }),
        Case::new(
            "fixed_async",
            "issue 29 async (a): `enter_async()` polled once + drop, the plain bulkhead",
            |n| enter_async_once(n, fixed.bulkhead()),
        ),
        Case::new(
            "fixed_async_readings_rmw",
            "issue 29 async (c): the same, two readings and one locked `fetch_add`",
            |n| enter_async_timed(n, fixed.bulkhead(), recent, &sample),
        ),
        Case::new(
            "aimd_async",
            "issue 29 async (d): `enter_async()` polled once + drop, AIMD",
            |n| enter_async_once(n, aimd.bulkhead()),
        ),
        Case::new(
            "vegas_async",
            "issue 29 async (d): `enter_async()` polled once + drop, Vegas",
            |n| enter_async_once(n, vegas.bulkhead()),
        ),
        Case::new(
            "gradient2_async",
            "issue 29 async (d): `enter_async()` polled once + drop, Gradient2",
            |n| enter_async_once(n, gradient2.bulkhead()),
        ),
    ];

    // Case names as arguments run only those cases.
    let only: Vec<String> = std::env::args().skip(1).collect();
    cases.retain(|case| only.is_empty() || only.iter().any(|name| name == case.name));

    for _ in 0..rounds {
        for case in &mut cases {
            let (wall, cpu) = (Instant::now(), cpu_time());
            black_box((case.run)(black_box(calls)));
            let (cpu, wall) = (cpu_time() - cpu, wall.elapsed());
            case.wall.push(wall.as_secs_f64() * 1e9 / calls as f64);
            case.cpu.push(cpu / calls as f64);
        }
    }
    assert_eq!(roomy.concurrent_calls(), 0, "every slot was given back");
    assert_eq!(
        keyed_waited.waiting_calls(),
        1,
        "the noisy key's call still waits"
    );
    assert_eq!(
        keyed_waited.in_flight(&key_u64),
        0,
        "every keyed slot was given back"
    );
    assert_eq!(counter.load(Ordering::Relaxed), 0);
    let ran = |name: &str| cases.iter().any(|case| case.name.starts_with(name));
    for (name, handle) in [
        ("aimd", &aimd),
        ("vegas", &vegas),
        ("gradient2", &gradient2),
    ] {
        let bulkhead = handle.bulkhead();
        let adaptive = bulkhead.adaptive().ok_or("adaptive")?;
        assert_eq!(bulkhead.concurrent_calls(), 0, "every slot was given back");
        assert_eq!(adaptive.limit, FIXED, "{name}: no call was refused");
        assert!(!ran(name) || adaptive.windows > 0, "{name}: windows closed");
    }

    println!(
        "{calls} calls per loop, {rounds} interleaved rounds; ns per call\n\n\
         | case | what | best (wall) | median (wall) | best (CPU time) |\n\
         |---|---|---:|---:|---:|"
    );
    for case in &cases {
        println!(
            "| `{}` | {} | {:.2} | {:.2} | {:.2} |",
            case.name,
            case.what,
            best(&case.wall),
            median(&case.wall),
            best(&case.cpu),
        );
    }

    type Pick = fn(&Case<'_>) -> f64;
    let clocks: [(&str, Pick); 2] = [("wall", |c| best(&c.wall)), ("CPU", |c| best(&c.cpu))];
    // A sum of best rounds, each case with its sign; `None` if a case did
    // not run.
    let sum = |pick: Pick, terms: &[(&str, f64)]| -> Option<f64> {
        let of = |name: &str| cases.iter().find(|c| c.name == name).map(pick);
        terms
            .iter()
            .try_fold(0.0, |sum, (name, sign)| Some(sum + sign * of(name)?))
    };
    // Issue 31's bound for a keyed rejection: the plain rejection plus one
    // hash lookup of the same key, two cases summed.
    fn denominator_terms(denominator: &str) -> Vec<(&str, f64)> {
        match denominator {
            "plain_rejected_plus_lookup" => {
                vec![("try_enter_rejected", 1.0), ("hash_lookup", 1.0)]
            }
            "plain_rejected_plus_lookup_str" => {
                vec![("try_enter_rejected", 1.0), ("hash_lookup_str", 1.0)]
            }
            name => vec![(name, 1.0)],
        }
    }
    let ratio = |pick: Pick, numerator: &[(&str, f64)], denominator: &str| -> Option<f64> {
        Some(sum(pick, numerator)? / sum(pick, &denominator_terms(denominator))?)
    };
    // (label, numerator as signed cases, denominator case, target)
    type Ratio<'a> = (&'a str, &'a [(&'a str, f64)], &'a str, &'a str);
    println!(
        "future sizes: composed_async {} bytes, composed_chaos_async {} bytes\n",
        std::mem::size_of_val(&chaotic.composed_async(0)),
        std::mem::size_of_val(&chaotic.composed_chaos_async(0)),
    );
    println!(
        "future sizes (issue 33): free_async {} bytes, full_async {} bytes, \
         execute_async (bulkhead) {} bytes, execute_async (hedge) {} bytes\n",
        std::mem::size_of_val(&service.free_async(0)),
        std::mem::size_of_val(&service.full_async(0)),
        std::mem::size_of_val(&p_bh.execute_async(|| async { Ok::<u64, ()>(0) })),
        std::mem::size_of_val(&p_hedge.execute_async(|| async { Ok::<u64, ()>(0) })),
    );
    let ratios: [Ratio<'_>; 24] = [
        (
            "issue 31: keyed free (u64), 1000 keys waiting / `try_enter()` + drop",
            &[("keyed_try_enter_1000_wait", 1.0)],
            "try_enter",
            "-",
        ),
        (
            "issue 31: keyed free (u64), another key waiting / `try_enter()` + drop",
            &[("keyed_try_enter_others_wait", 1.0)],
            "try_enter",
            "-",
        ),
        (
            "issue 31: keyed `try_enter(&u64)` + drop / `try_enter()` + drop",
            &[("keyed_try_enter", 1.0)],
            "try_enter",
            "<= 2.0x",
        ),
        (
            "issue 31: keyed `try_enter(&str)` + drop / `try_enter()` + drop",
            &[("keyed_try_enter_str", 1.0)],
            "try_enter",
            "<= 2.0x",
        ),
        (
            "issue 31: keyed rejected (u64) / (`try_enter()` rejected + one lookup)",
            &[("keyed_try_enter_rejected", 1.0)],
            "plain_rejected_plus_lookup",
            "<= 1.0x",
        ),
        (
            "issue 31: keyed rejected (&str) / (`try_enter()` rejected + one lookup)",
            &[("keyed_try_enter_rejected_str", 1.0)],
            "plain_rejected_plus_lookup_str",
            "<= 1.0x",
        ),
        (
            "async: (composed with chaos off - composed) / load-CAS-release floor",
            &[("composed_chaos_async", 1.0), ("composed_async", -1.0)],
            "floor_cas",
            "one load",
        ),
        (
            "(composed with chaos off - composed) / load-CAS-release floor",
            &[("composed_chaos", 1.0), ("composed", -1.0)],
            "floor_cas",
            "one load",
        ),
        (
            "(wrapper - direct) / load-CAS-release floor",
            &[("wrapper", 1.0), ("direct", -1.0)],
            "floor_cas",
            "<= 1.05x",
        ),
        (
            "wrapper / the floor around the delegate's call",
            &[("wrapper", 1.0)],
            "floor_cas_call",
            "-",
        ),
        (
            "wrapper rejected / tokio failed `try_acquire`",
            &[("wrapper_rejected", 1.0)],
            "tokio_try_acquire_failed",
            "<= 1.0x",
        ),
        (
            "by hand, inlined, rejected / tokio failed `try_acquire`",
            &[("by_hand_rejected", 1.0)],
            "tokio_try_acquire_failed",
            "-",
        ),
        (
            "floor around the call - direct, / load-CAS-release floor",
            &[("floor_cas_call", 1.0), ("direct", -1.0)],
            "floor_cas",
            "-",
        ),
        (
            "load-CAS-release floor / pair floor",
            &[("floor_cas", 1.0)],
            "floor_pair",
            "-",
        ),
        (
            "`try_enter()` + drop / load-CAS-release floor",
            &[("try_enter", 1.0)],
            "floor_cas",
            "-",
        ),
        (
            "`try_enter()` rejected / tokio failed `try_acquire`",
            &[("try_enter_rejected", 1.0)],
            "tokio_try_acquire_failed",
            "-",
        ),
        (
            "`try_enter()` + drop / tokio `try_acquire()` + drop",
            &[("try_enter", 1.0)],
            "tokio_try_acquire",
            "-",
        ),
        (
            "`try_enter()` + drop, moved as criterion does / not moved",
            &[("try_enter_consumed", 1.0)],
            "try_enter",
            "-",
        ),
        (
            "issue 29: AIMD `try_enter()` + drop / (c) plain, readings, one `fetch_add`",
            &[("aimd_try_enter", 1.0)],
            "fixed_readings_rmw",
            "<= 1.0x",
        ),
        (
            "issue 29: Vegas `try_enter()` + drop / (c)",
            &[("vegas_try_enter", 1.0)],
            "fixed_readings_rmw",
            "<= 1.0x",
        ),
        (
            "issue 29: Gradient2 `try_enter()` + drop / (c)",
            &[("gradient2_try_enter", 1.0)],
            "fixed_readings_rmw",
            "<= 1.0x",
        ),
        (
            "issue 29, async: AIMD `enter_async()` / (c) async",
            &[("aimd_async", 1.0)],
            "fixed_async_readings_rmw",
            "<= 1.0x",
        ),
        (
            "issue 29, async: Vegas `enter_async()` / (c) async",
            &[("vegas_async", 1.0)],
            "fixed_async_readings_rmw",
            "<= 1.0x",
        ),
        (
            "issue 29, async: Gradient2 `enter_async()` / (c) async",
            &[("gradient2_async", 1.0)],
            "fixed_async_readings_rmw",
            "<= 1.0x",
        ),
    ];
    println!("\n| ratio of best rounds | wall | CPU time | target |\n|---|---:|---:|---|");
    for (label, numerator, denominator, target) in ratios {
        let [wall, cpu] = clocks.map(|(_, pick)| ratio(pick, numerator, denominator));
        if let (Some(wall), Some(cpu)) = (wall, cpu) {
            println!("| {label} | {wall:.2}x | {cpu:.2}x | {target} |");
        }
    }

    // Issue 29's gaps in ns: what each step adds, and what an adaptive
    // call adds over the readings against what one locked addition adds.
    let gaps: [(&str, &[(&str, f64)]); 16] = [
        (
            "issue 32: histograms recording, sync: composed_recorded - composed",
            &[("composed_recorded", 1.0), ("composed", -1.0)],
        ),
        (
            "issue 32: histograms recording, async: composed_async_recorded - composed_async",
            &[("composed_async_recorded", 1.0), ("composed_async", -1.0)],
        ),
        (
            "issue 31: keyed rejected (u64) - plain rejected",
            &[
                ("keyed_try_enter_rejected", 1.0),
                ("try_enter_rejected", -1.0),
            ],
        ),
        (
            "issue 31: keyed rejected (&str) - plain rejected",
            &[
                ("keyed_try_enter_rejected_str", 1.0),
                ("try_enter_rejected", -1.0),
            ],
        ),
        (
            "issue 31: keyed free (u64) - plain free",
            &[("keyed_try_enter", 1.0), ("try_enter", -1.0)],
        ),
        (
            "issue 31: keyed free (&str) - plain free",
            &[("keyed_try_enter_str", 1.0), ("try_enter", -1.0)],
        ),
        (
            "(b) - (a): two recent clock readings",
            &[("fixed_readings", 1.0), ("fixed_try_enter", -1.0)],
        ),
        (
            "(c) - (b): one locked `fetch_add`, in place",
            &[("fixed_readings_rmw", 1.0), ("fixed_readings", -1.0)],
        ),
        ("one locked `fetch_add` alone", &[("floor_rmw", 1.0)]),
        (
            "AIMD - (b): allowed (c) - (b)",
            &[("aimd_try_enter", 1.0), ("fixed_readings", -1.0)],
        ),
        (
            "Vegas - (b)",
            &[("vegas_try_enter", 1.0), ("fixed_readings", -1.0)],
        ),
        (
            "Gradient2 - (b)",
            &[("gradient2_try_enter", 1.0), ("fixed_readings", -1.0)],
        ),
        (
            "async: (c) - (a)",
            &[("fixed_async_readings_rmw", 1.0), ("fixed_async", -1.0)],
        ),
        (
            "async: AIMD - (a): allowed (c) - (a)",
            &[("aimd_async", 1.0), ("fixed_async", -1.0)],
        ),
        (
            "async: Vegas - (a)",
            &[("vegas_async", 1.0), ("fixed_async", -1.0)],
        ),
        (
            "async: Gradient2 - (a)",
            &[("gradient2_async", 1.0), ("fixed_async", -1.0)],
        ),
    ];
    println!("\n| issues 29 and 31: ns added, best rounds | wall | CPU time |\n|---|---:|---:|");
    for (label, terms) in gaps {
        let [wall, cpu] = clocks.map(|(_, pick)| sum(pick, terms));
        if let (Some(wall), Some(cpu)) = (wall, cpu) {
            println!("| {label} | {wall:.2} | {cpu:.2} |");
        }
    }
    for (name, handle) in [
        ("AIMD", &aimd),
        ("Vegas", &vegas),
        ("Gradient2", &gradient2),
    ] {
        if let Some(adaptive) = handle.bulkhead().adaptive() {
            println!(
                "{name}: {} windows closed ({} probes), {} successes sampled, limit {}",
                adaptive.windows, adaptive.probes, adaptive.successes, adaptive.limit
            );
        }
    }
    Ok(())
}
