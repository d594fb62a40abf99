//! Criterion benchmarks of the same trivial service behind three tower
//! layers: ours (`BulkheadLayer`), tower-resilience's bulkhead layer with
//! `reject_when_full()`, and tower's `LoadShed` over `ConcurrencyLimit`.
//!
//! | group | what |
//! |---|---|
//! | `tower_free` | `poll_ready` + `call` + one poll of the response future (ready), a slot free; ours also over a bulkhead with a `max_wait` (which must not allocate either) |
//! | `tower_rejected` | the same while the only slot is held: the rejection, one poll |
//! | `tower_rejected_in_runtime` | a rejected call driven to its answer by `Runtime::block_on` |
//!
//! The first two groups poll with `Waker::noop()` inside an entered Tokio
//! runtime (tower-resilience needs its timer), so no scheduler runs. A
//! tower-resilience rejection is not ready at its first poll: with
//! `reject_when_full()` it waits for a zero-length `tokio::time::timeout`,
//! which only the runtime's timer completes, at its next tick. Its
//! `tower_rejected` case is that first poll (still pending) and is marked
//! so; the third group measures all three until the answer.
//!
//! After the groups, the bytes allocated per call of each case are printed,
//! counted by this binary's global allocator. Run with
//! `cargo bench --bench tower --features tower` (see `BENCHMARKS.md`).

use std::convert::Infallible;
use std::future::{Future, Pending, Ready, pending, poll_fn, ready};
use std::hint::black_box;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bulkhead::tower::BulkheadLayer;
use bulkhead::{Bulkhead, BulkheadConfig};
use criterion::{Criterion, SamplingMode};
use tokio::runtime::Runtime;
use tokio::sync::Semaphore;
use tower::limit::GlobalConcurrencyLimitLayer;
use tower::load_shed::LoadShedLayer;
use tower::{Layer, Service, ServiceBuilder, service_fn};
use tower_resilience::bulkhead::BulkheadLayer as ResilienceLayer;

// ---- the counting allocator -------------------------------------------------

#[path = "../tests/support/counting.rs"]
mod counting;

/// Bytes allocated on this thread per run of `f`, over `runs` runs.
fn bytes_per_run(runs: usize, mut f: impl FnMut()) -> f64 {
    let (_, bytes, ()) = counting::allocated_by(|| {
        for _ in 0..runs {
            f();
        }
    });
    bytes as f64 / runs as f64
}

// ---- the services -----------------------------------------------------------

type Echo = fn(u64) -> Ready<Result<u64, Infallible>>;
type Hang = fn(u64) -> Pending<Result<u64, Infallible>>;

/// The trivial service: answers its request at once.
fn echo() -> tower::util::ServiceFn<Echo> {
    service_fn(|request| ready(Ok(request)))
}

/// A service that never answers: its call holds the only slot.
fn hang() -> tower::util::ServiceFn<Hang> {
    service_fn(|_| pending())
}

/// The three layers, each able to wrap several services that share its slots.
trait Stack {
    fn wrap<S>(&self, inner: S) -> impl Service<u64, Response = u64, Future: Send> + Send + 'static
    where
        S: Service<u64, Response = u64, Error = Infallible> + Clone + Send + 'static,
        S::Future: Send + 'static;
}

struct Ours(Bulkhead);
struct Resilience(ResilienceLayer);
struct TowerLimit(Arc<Semaphore>);

impl Ours {
    fn new(slots: u32) -> Self {
        Ours::with_max_wait(slots, Duration::ZERO)
    }

    /// A bulkhead whose requests wait up to `max_wait` for a slot.
    fn with_max_wait(slots: u32, max_wait: Duration) -> Self {
        let config = BulkheadConfig::builder()
            .max_concurrent(slots)
            .max_wait(max_wait)
            .build()
            .expect("a valid limit");
        Ours(Bulkhead::new("bench-tower", config))
    }
}

impl Resilience {
    fn new(slots: usize) -> Self {
        let (layer, _handle) = ResilienceLayer::builder()
            .max_concurrent_calls(slots)
            .reject_when_full()
            .build_with_handle() // services of this layer share one semaphore
            .expect("a valid limit");
        Resilience(layer)
    }
}

impl Stack for Ours {
    fn wrap<S>(&self, inner: S) -> impl Service<u64, Response = u64, Future: Send> + Send + 'static
    where
        S: Service<u64, Response = u64, Error = Infallible> + Clone + Send + 'static,
        S::Future: Send + 'static,
    {
        BulkheadLayer::new(self.0.clone()).layer(inner)
    }
}

impl Stack for Resilience {
    fn wrap<S>(&self, inner: S) -> impl Service<u64, Response = u64, Future: Send> + Send + 'static
    where
        S: Service<u64, Response = u64, Error = Infallible> + Clone + Send + 'static,
        S::Future: Send + 'static,
    {
        self.0.layer(inner)
    }
}

impl Stack for TowerLimit {
    fn wrap<S>(&self, inner: S) -> impl Service<u64, Response = u64, Future: Send> + Send + 'static
    where
        S: Service<u64, Response = u64, Error = Infallible> + Clone + Send + 'static,
        S::Future: Send + 'static,
    {
        ServiceBuilder::new()
            .layer(LoadShedLayer::new())
            .layer(GlobalConcurrencyLimitLayer::with_semaphore(Arc::clone(
                &self.0,
            )))
            .service(inner)
    }
}

// ---- the harness --------------------------------------------------------------

/// One call as a server makes it: `poll_ready`, `call`, and one poll of the
/// response future, all with a waker that does nothing. Returns that poll's
/// result; the future is dropped before returning.
#[inline(always)]
fn call_once<S: Service<u64>>(
    service: &mut S,
    request: u64,
) -> Poll<Result<S::Response, S::Error>> {
    let mut cx = Context::from_waker(Waker::noop());
    match service.poll_ready(&mut cx) {
        Poll::Ready(Ok(())) => {}
        Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
        Poll::Pending => return Poll::Pending,
    }
    pin!(service.call(request)).poll(&mut cx)
}

/// Keeps `value` from being optimised away, then drops it in place (see
/// `benches/bulkhead.rs` for why it is not returned to criterion).
#[inline(always)]
fn consume<T>(value: T) {
    black_box(&value);
}

/// Takes the only slot of `stack` with a call that never completes, and
/// returns that call's future, which holds the slot while alive.
fn hold(stack: &impl Stack) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    let mut held = stack.wrap(hang());
    let mut cx = Context::from_waker(Waker::noop());
    assert!(held.poll_ready(&mut cx).is_ready());
    let mut future = Box::pin({
        let future = held.call(0);
        async move {
            let _ = future.await;
        }
    });
    // tower-resilience takes its permit on the first poll.
    assert!(future.as_mut().poll(&mut cx).is_pending());
    future
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime")
}

struct Case {
    name: &'static str,
    bytes: f64,
}

// ---- the groups -------------------------------------------------------------

fn free(c: &mut Criterion, rt: &Runtime, bytes: &mut Vec<Case>) {
    let _entered = rt.enter();
    let mut group = c.benchmark_group("tower_free");

    let mut bare = echo();
    assert!(matches!(call_once(&mut bare, 1), Poll::Ready(Ok(1))));
    group.bench_function("bare_service", |b| {
        b.iter(|| consume(call_once(black_box(&mut bare), 1)))
    });

    let mut ours = Ours::new(25).wrap(echo());
    assert!(matches!(call_once(&mut ours, 1), Poll::Ready(Ok(1))));
    group.bench_function("ours_bulkhead_layer", |b| {
        b.iter(|| consume(call_once(black_box(&mut ours), 1)))
    });
    bytes.push(Case {
        name: "tower_free/ours_bulkhead_layer",
        bytes: bytes_per_run(1000, || consume(call_once(&mut ours, 1))),
    });

    let mut waiting = Ours::with_max_wait(25, Duration::from_millis(250)).wrap(echo());
    assert!(matches!(call_once(&mut waiting, 1), Poll::Ready(Ok(1))));
    group.bench_function("ours_bulkhead_layer_max_wait", |b| {
        b.iter(|| consume(call_once(black_box(&mut waiting), 1)))
    });
    bytes.push(Case {
        name: "tower_free/ours_bulkhead_layer_max_wait",
        bytes: bytes_per_run(1000, || consume(call_once(&mut waiting, 1))),
    });

    let mut resilience = Resilience::new(25).wrap(echo());
    assert!(matches!(call_once(&mut resilience, 1), Poll::Ready(Ok(1))));
    group.bench_function("tower_resilience_bulkhead", |b| {
        b.iter(|| consume(call_once(black_box(&mut resilience), 1)))
    });
    bytes.push(Case {
        name: "tower_free/tower_resilience_bulkhead",
        bytes: bytes_per_run(1000, || consume(call_once(&mut resilience, 1))),
    });

    let mut limit = TowerLimit(Arc::new(Semaphore::new(25))).wrap(echo());
    assert!(matches!(call_once(&mut limit, 1), Poll::Ready(Ok(1))));
    group.bench_function("tower_load_shed_concurrency_limit", |b| {
        b.iter(|| consume(call_once(black_box(&mut limit), 1)))
    });
    bytes.push(Case {
        name: "tower_free/tower_load_shed_concurrency_limit",
        bytes: bytes_per_run(1000, || consume(call_once(&mut limit, 1))),
    });
    group.finish();
}

fn rejected(c: &mut Criterion, rt: &Runtime, bytes: &mut Vec<Case>) {
    let _entered = rt.enter();
    let mut group = c.benchmark_group("tower_rejected");

    let stack = Ours::new(1);
    let _held = hold(&stack);
    let mut ours = stack.wrap(echo());
    assert!(matches!(call_once(&mut ours, 1), Poll::Ready(Err(_))));
    group.bench_function("ours_bulkhead_layer", |b| {
        b.iter(|| consume(call_once(black_box(&mut ours), 1)))
    });
    bytes.push(Case {
        name: "tower_rejected/ours_bulkhead_layer",
        bytes: bytes_per_run(1000, || consume(call_once(&mut ours, 1))),
    });

    let stack = Resilience::new(1);
    let _held = hold(&stack);
    let mut resilience = stack.wrap(echo());
    // Not answered yet: the zero timeout completes at the timer's next tick.
    assert!(call_once(&mut resilience, 1).is_pending());
    group.bench_function("tower_resilience_bulkhead_first_poll_pending", |b| {
        b.iter(|| consume(call_once(black_box(&mut resilience), 1)))
    });
    bytes.push(Case {
        name: "tower_rejected/tower_resilience_bulkhead_first_poll_pending",
        bytes: bytes_per_run(1000, || consume(call_once(&mut resilience, 1))),
    });

    let stack = TowerLimit(Arc::new(Semaphore::new(1)));
    let _held = hold(&stack);
    let mut limit = stack.wrap(echo());
    assert!(matches!(call_once(&mut limit, 1), Poll::Ready(Err(_))));
    group.bench_function("tower_load_shed_concurrency_limit", |b| {
        b.iter(|| consume(call_once(black_box(&mut limit), 1)))
    });
    bytes.push(Case {
        name: "tower_rejected/tower_load_shed_concurrency_limit",
        bytes: bytes_per_run(1000, || consume(call_once(&mut limit, 1))),
    });
    group.finish();
}

/// A rejected call driven to its answer on the runtime.
fn answer<S: Service<u64>>(rt: &Runtime, service: &mut S) -> Result<S::Response, S::Error> {
    rt.block_on(async {
        poll_fn(|cx| service.poll_ready(cx)).await?;
        service.call(1).await
    })
}

fn rejected_in_runtime(c: &mut Criterion, rt: &Runtime, bytes: &mut Vec<Case>) {
    // Entered only to set the held calls up; each measured call enters it
    // again through `block_on`.
    let entered = rt.enter();
    let mut group = c.benchmark_group("tower_rejected_in_runtime");
    // tower-resilience's case takes about a millisecond per call.
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(20)
        .measurement_time(Duration::from_secs(4));

    let stack = Ours::new(1);
    let _held = hold(&stack);
    let mut ours = stack.wrap(echo());
    assert!(answer(rt, &mut ours).is_err());
    group.bench_function("ours_bulkhead_layer", |b| {
        b.iter(|| consume(answer(rt, black_box(&mut ours))))
    });
    bytes.push(Case {
        name: "tower_rejected_in_runtime/ours_bulkhead_layer",
        bytes: bytes_per_run(1000, || consume(answer(rt, &mut ours))),
    });

    let stack = Resilience::new(1);
    let _held = hold(&stack);
    let mut resilience = stack.wrap(echo());
    assert!(answer(rt, &mut resilience).is_err());
    group.bench_function("tower_resilience_bulkhead", |b| {
        b.iter(|| consume(answer(rt, black_box(&mut resilience))))
    });
    bytes.push(Case {
        name: "tower_rejected_in_runtime/tower_resilience_bulkhead",
        bytes: bytes_per_run(100, || consume(answer(rt, &mut resilience))),
    });

    let stack = TowerLimit(Arc::new(Semaphore::new(1)));
    let _held = hold(&stack);
    let mut limit = stack.wrap(echo());
    assert!(answer(rt, &mut limit).is_err());
    group.bench_function("tower_load_shed_concurrency_limit", |b| {
        b.iter(|| consume(answer(rt, black_box(&mut limit))))
    });
    bytes.push(Case {
        name: "tower_rejected_in_runtime/tower_load_shed_concurrency_limit",
        bytes: bytes_per_run(1000, || consume(answer(rt, &mut limit))),
    });
    group.finish();
    drop(entered);
}

fn main() {
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(100)
        .configure_from_args();
    let rt = runtime();
    let mut bytes = Vec::new();
    free(&mut criterion, &rt, &mut bytes);
    rejected(&mut criterion, &rt, &mut bytes);
    rejected_in_runtime(&mut criterion, &rt, &mut bytes);
    criterion.final_summary();

    println!("\nbytes allocated per call (counting allocator, this thread):");
    for case in &bytes {
        println!("  {:<62} {:>8.1}", case.name, case.bytes);
    }
}
