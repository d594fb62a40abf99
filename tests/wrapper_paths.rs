#![allow(missing_docs, missing_debug_implementations)]
//! The generated sync method of a bulkhead-only method takes a free slot
//! or rejects quietly inline (`enter_at_once`) and leaves everything else
//! to `enter_then`: both paths against the bulkhead rules (B1-B12) under
//! stress, live limit changes, listeners that subscribe mid-run, disabled
//! and pooled bulkheads, sizing counts and panicking delegates.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::SeqCst};
use std::thread;
use std::time::{Duration, Instant};

use bulkhead::events::{BulkheadEvent, BulkheadEventKind, Event};
use bulkhead::{ManualClock, Registry, Rejection, RejectionKind, resilient};

#[derive(Debug)]
pub enum Error {
    Rejected(Rejection),
    Backend,
}

impl From<Rejection> for Error {
    fn from(r: Rejection) -> Self {
        Error::Rejected(r)
    }
}

fn is_full(r: &Result<u32, Error>) -> bool {
    matches!(r, Err(Error::Rejected(r)) if r.kind() == RejectionKind::BulkheadFull)
}

#[resilient]
pub trait Svc: Send + Sync {
    #[bulkhead(name = "stress_wait", max_concurrent = 3, max_wait = "20ms")]
    fn waits(&self) -> Result<u32, Error>;

    #[bulkhead(name = "stress_nowait", max_concurrent = 3)]
    fn no_wait(&self) -> Result<u32, Error>;

    #[bulkhead(name = "quiet", max_concurrent = 1)]
    fn quiet(&self) -> Result<u32, Error>;

    #[bulkhead(name = "off", max_concurrent = 1, enabled = false)]
    fn off(&self) -> Result<u32, Error>;

    #[bulkhead(name = "panics", max_concurrent = 4)]
    fn panics(&self, panic: bool, fail: bool) -> Result<u32, Error>;

    #[bulkhead(name = "pooled", max_concurrent = 3)]
    fn pooled(&self) -> Result<u32, Error>;
}

#[derive(Default)]
pub struct Backend {
    inside: AtomicU32,
    most: AtomicU32,
    hold: AtomicBool,
    clock: Option<ManualClock>,
}

impl Backend {
    fn enter(&self) -> Result<u32, Error> {
        let now = self.inside.fetch_add(1, SeqCst) + 1;
        self.most.fetch_max(now, SeqCst);
        while self.hold.load(SeqCst) {
            thread::yield_now();
        }
        for _ in 0..50 {
            std::hint::spin_loop();
        }
        self.inside.fetch_sub(1, SeqCst);
        Ok(now)
    }
}

impl Svc for Backend {
    fn waits(&self) -> Result<u32, Error> {
        self.enter()
    }
    fn no_wait(&self) -> Result<u32, Error> {
        self.enter()
    }
    fn quiet(&self) -> Result<u32, Error> {
        self.enter()
    }
    fn off(&self) -> Result<u32, Error> {
        self.enter()
    }
    fn pooled(&self) -> Result<u32, Error> {
        self.enter()
    }
    fn panics(&self, panic: bool, fail: bool) -> Result<u32, Error> {
        if let Some(clock) = &self.clock {
            clock.advance(Duration::from_millis(1));
        }
        if panic {
            panic!("the delegate panicked");
        }
        if fail { Err(Error::Backend) } else { Ok(1) }
    }
}

fn stress(call: fn(&ResilientSvc<Backend>) -> Result<u32, Error>, id: &str) {
    let registry = Registry::new();
    let service = ResilientSvc::new(Backend::default(), &registry).unwrap();
    let handle = registry.bulkhead(id).unwrap();
    let (ok, full) = (AtomicU32::new(0), AtomicU32::new(0));
    thread::scope(|s| {
        for _ in 0..16 {
            s.spawn(|| {
                for _ in 0..5_000 {
                    match call(&service) {
                        Ok(n) => {
                            assert!(n <= 3, "{n} calls inside");
                            ok.fetch_add(1, SeqCst);
                        }
                        r => {
                            assert!(is_full(&r), "{r:?}");
                            full.fetch_add(1, SeqCst);
                        }
                    }
                }
            });
        }
    });
    assert!(service.delegate().most.load(SeqCst) <= 3);
    assert_eq!(handle.concurrent_calls(), 0);
    assert_eq!(handle.waiting_calls(), 0);
    assert_eq!(ok.load(SeqCst) + full.load(SeqCst), 16 * 5_000);
    assert!(ok.load(SeqCst) > 0);
}

#[test]
fn stress_with_max_wait() {
    stress(|s| s.waits(), "stress_wait");
}

#[test]
fn stress_without_max_wait() {
    stress(|s| s.no_wait(), "stress_nowait");
}

/// B12: a listener that subscribes while the bulkhead is full receives the
/// next rejection; before it, the rejection is quiet.
#[test]
fn b12_a_listener_subscribing_later_receives_the_next_rejection() {
    let registry = Registry::new();
    let service = ResilientSvc::new(Backend::default(), &registry).unwrap();
    let handle = registry.bulkhead("quiet").unwrap();
    let held = handle.bulkhead().try_enter_owned().unwrap();
    assert!(is_full(&service.quiet()));
    let mut events = registry.subscribe();
    assert!(is_full(&service.quiet()));
    let mut got = false;
    while let Some(event) = events.try_recv() {
        if matches!(
            event,
            Event::Bulkhead(BulkheadEvent {
                kind: BulkheadEventKind::Rejected { .. },
                ..
            })
        ) {
            got = true;
        }
    }
    assert!(got, "the rejection after subscribing was not published");
    drop(held);
    assert_eq!(service.quiet().unwrap(), 1);
    assert_eq!(handle.concurrent_calls(), 0);
}

/// B5: a disabled bulkhead lets every call pass and counts nothing.
#[test]
fn b5_a_disabled_bulkhead_lets_concurrent_calls_pass() {
    let registry = Registry::new();
    let service = ResilientSvc::new(Backend::default(), &registry).unwrap();
    let handle = registry.bulkhead("off").unwrap();
    service.delegate().hold.store(true, SeqCst);
    thread::scope(|s| {
        let a = s.spawn(|| service.off());
        let b = s.spawn(|| service.off());
        let deadline = Instant::now() + Duration::from_secs(10);
        while service.delegate().inside.load(SeqCst) < 2 {
            assert!(
                Instant::now() < deadline,
                "a call of a disabled bulkhead was held back"
            );
            thread::yield_now();
        }
        assert_eq!(handle.concurrent_calls(), 0);
        service.delegate().hold.store(false, SeqCst);
        a.join().unwrap().unwrap();
        b.join().unwrap().unwrap();
    });
}

/// Sizing counts every rejection and admission made through the wrapper.
#[test]
fn sizing_counts_rejections_and_admissions_through_the_wrapper() {
    let registry = Registry::builder().track_sizing(true).build();
    let service = ResilientSvc::new(Backend::default(), &registry).unwrap();
    let handle = registry.bulkhead("quiet").unwrap();
    assert_eq!(service.quiet().unwrap(), 1);
    let held = handle.bulkhead().try_enter_owned().unwrap();
    for _ in 0..3 {
        assert!(is_full(&service.quiet()));
    }
    drop(held);
    let traffic = handle.snapshot().traffic.unwrap();
    assert_eq!(traffic.rejected, 3, "{traffic:?}");
    assert_eq!(traffic.admitted, 2, "{traffic:?}");
}

/// B1 and docs/adaptive.md: a panicking delegate gives its slot back, and
/// an adaptive bulkhead counts the panic as an error.
#[test]
fn b1_a_panicking_delegate_gives_its_slot_back_and_counts_as_an_error() {
    let clock = ManualClock::new();
    let sampling = bulkhead::adaptive::Sampling::builder()
        .min_samples(4)
        .build()
        .unwrap();
    let registry = Registry::builder()
        .clock(clock.clone())
        .bulkhead_instance("panics", move |b| {
            b.min_concurrent(1)
                .initial_concurrent(4)
                .adaptive(bulkhead::Adaptive::Gradient2)
                .sampling(sampling)
        })
        .build();
    let service = ResilientSvc::new(
        Backend {
            clock: Some(clock.clone()),
            ..Backend::default()
        },
        &registry,
    )
    .unwrap();
    let handle = registry.bulkhead("panics").unwrap();
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut panics = 0;
    for i in 0..400 {
        clock.advance(Duration::from_millis(1));
        let panic = i % 4 == 0;
        let result = catch_unwind(AssertUnwindSafe(|| service.panics(panic, false)));
        if panic {
            assert!(result.is_err());
            panics += 1;
        } else {
            assert_eq!(result.unwrap().unwrap(), 1);
        }
        assert_eq!(handle.concurrent_calls(), 0, "call {i} kept its slot");
    }
    std::panic::set_hook(hook);
    let adaptive = handle.snapshot().adaptive.unwrap();
    assert!(adaptive.windows > 3, "{adaptive:?}");
    assert!(adaptive.errors > 0, "{panics} panics, {adaptive:?}");
    assert_eq!(adaptive.drops, 0, "{adaptive:?}");
}

/// B1 (lowered limit): set_max_concurrent while calls run through the
/// wrapper; in the end nothing is held and the new limit is in force.
#[test]
fn set_max_concurrent_while_calls_run() {
    let registry = Registry::new();
    let service = Arc::new(ResilientSvc::new(Backend::default(), &registry).unwrap());
    let handle = registry.bulkhead("stress_wait").unwrap();
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                while !stop.load(SeqCst) {
                    let r = service.waits();
                    assert!(r.is_ok() || is_full(&r), "{r:?}");
                }
            });
        }
        for i in 0..2_000u32 {
            handle.bulkhead().set_max_concurrent(1 + i % 5).unwrap();
        }
        handle.bulkhead().set_max_concurrent(2).unwrap();
        stop.store(true, SeqCst);
    });
    assert_eq!(handle.concurrent_calls(), 0);
    assert_eq!(handle.waiting_calls(), 0);
    service.delegate().most.store(0, SeqCst);
    stress_until_done(&service);
    assert!(service.delegate().most.load(SeqCst) <= 2);
}

fn stress_until_done(service: &ResilientSvc<Backend>) {
    thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..2_000 {
                    let r = service.waits();
                    assert!(r.is_ok() || is_full(&r), "{r:?}");
                }
            });
        }
    });
}

/// Reserved slots and borrowing through the wrapper: the reserved slot is
/// taken inline, the borrowed one out of line, and a call with nothing left
/// to borrow is rejected; everything is given back.
#[test]
fn a_pooled_bulkhead_behind_a_wrapper_borrows_and_gives_back() {
    let registry = Registry::builder()
        .bulkhead_instance("pooled", |b| b.resource("db").reserved(1).max_concurrent(3))
        .bulkhead_instance("other", |b| b.resource("db").reserved(1).max_concurrent(3))
        .build();
    registry.resource("db", 3).unwrap();
    let service = ResilientSvc::new(Backend::default(), &registry).unwrap();
    let other = bulkhead::Pipeline::builder(&registry, "other")
        .bulkhead(|b| b)
        .build()
        .unwrap();
    let handle = registry.bulkhead("pooled").unwrap();
    service.delegate().hold.store(true, SeqCst);
    thread::scope(|s| {
        let a = s.spawn(|| service.pooled());
        let b = s.spawn(|| service.pooled());
        let deadline = Instant::now() + Duration::from_secs(10);
        while service.delegate().inside.load(SeqCst) < 2 {
            assert!(
                Instant::now() < deadline,
                "the calls did not get in: {:?}",
                handle.snapshot()
            );
            thread::yield_now();
        }
        let snapshot = handle.snapshot();
        assert_eq!(
            (snapshot.concurrent_calls, snapshot.borrowed),
            (2, 1),
            "{snapshot:?}"
        );
        assert!(is_full(&service.pooled()));
        // The other bulkhead keeps its reserved slot.
        assert!(other.execute(|| Ok::<_, std::io::Error>(1)).is_ok());
        service.delegate().hold.store(false, SeqCst);
        a.join().unwrap().unwrap();
        b.join().unwrap().unwrap();
    });
    let snapshot = handle.snapshot();
    assert_eq!(
        (snapshot.concurrent_calls, snapshot.borrowed),
        (0, 0),
        "{snapshot:?}"
    );
    assert_eq!(registry.resource_usage("db"), Some((3, 2)));
}

/// The facade's support module is named after its version, as the macros
/// (pinned to the same version) name it: `__private_0_1_0`.
#[test]
fn the_support_module_of_generated_code_is_named_after_the_version() {
    let name = format!(
        "__private_{}",
        env!("CARGO_PKG_VERSION").replace(['.', '-', '+'], "_")
    );
    let lib = include_str!("../src/lib.rs");
    assert!(
        lib.contains(&format!("pub mod {name};")),
        "src/lib.rs must declare `pub mod {name};` for the macros of this version"
    );
}
