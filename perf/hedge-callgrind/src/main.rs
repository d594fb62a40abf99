//! Instructions per call of an untriggered hedge, from a user's crate: a
//! `#[resilient]` trait whose async methods answer at once, one with
//! `#[hedge(delay = "1s")]` and one with `#[retry(max_attempts = 3)]` (each
//! over a bulkhead that always has room), and the same through a
//! `Pipeline`. Each case is a loop of `CALLS` calls in an `#[inline(never)]`
//! function named `case_<name>`, each call polled once with a no-op waker;
//! `run.sh` counts each loop's instructions with callgrind
//! (`--toggle-collect`) and divides by the number of calls.
//!
//! `cargo run --release -- <case>...` runs the named cases (every case
//! without arguments); `BULKHEAD_CALLS` overrides 100,000.

#![allow(async_fn_in_trait)]

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use bulkhead::{CallError, Pipeline, Registry, Rejection, resilient};

/// The caller's error: a rejection, kept.
#[derive(Debug)]
pub struct Busy(pub Rejection);

impl From<Rejection> for Busy {
    fn from(rejection: Rejection) -> Self {
        Busy(rejection)
    }
}

#[resilient]
pub trait Service: Send + Sync {
    #[hedge(delay = "1s")]
    #[bulkhead(name = "hedged", max_concurrent = 1000000)]
    async fn hedged(&self, x: u64) -> Result<u64, Busy>;

    #[retry(max_attempts = 3)]
    #[bulkhead(name = "retried", max_concurrent = 1000000)]
    async fn retried(&self, x: u64) -> Result<u64, Busy>;
}

/// The delegate: next to no work, out of line, as a real method would be.
pub struct Backend;

impl Service for Backend {
    #[inline(never)]
    async fn hedged(&self, x: u64) -> Result<u64, Busy> {
        Ok(x.wrapping_mul(31))
    }

    #[inline(never)]
    async fn retried(&self, x: u64) -> Result<u64, Busy> {
        Ok(x.wrapping_mul(17))
    }
}

/// What the pipelines call: ready at its first poll.
#[inline(never)]
async fn answer(x: u64) -> Result<u64, std::io::Error> {
    Ok(x.wrapping_mul(13))
}

/// Polls `future` once with a no-op waker: every case is ready at once.
#[inline(always)]
fn poll_once<F: Future>(future: F) -> F::Output {
    let future = pin!(future);
    match future.poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("every case answers at its first poll"),
    }
}

#[inline(never)]
fn case_wrapper_hedge(calls: u64, service: &ResilientService<Backend>) -> u64 {
    let mut acc = 0_u64;
    for i in 0..calls {
        acc = acc.wrapping_add(poll_once(black_box(service).hedged(i)).unwrap_or(1));
    }
    acc
}

#[inline(never)]
fn case_wrapper_retry(calls: u64, service: &ResilientService<Backend>) -> u64 {
    let mut acc = 0_u64;
    for i in 0..calls {
        acc = acc.wrapping_add(poll_once(black_box(service).retried(i)).unwrap_or(1));
    }
    acc
}

/// The loop of a pipeline case; `salt` keeps the cases' functions apart
/// (identical functions would be merged into one symbol).
#[inline(always)]
fn pipeline_loop(calls: u64, pipeline: &Pipeline, salt: u64) -> u64 {
    let mut acc = salt;
    for i in 0..calls {
        let result: Result<u64, CallError<std::io::Error>> =
            poll_once(black_box(pipeline).execute_async(|| answer(i)));
        acc = acc.wrapping_add(result.unwrap_or(1));
    }
    acc
}

#[inline(never)]
fn case_pipeline_hedge(calls: u64, pipeline: &Pipeline) -> u64 {
    pipeline_loop(calls, pipeline, 1)
}

#[inline(never)]
fn case_pipeline_retry(calls: u64, pipeline: &Pipeline) -> u64 {
    pipeline_loop(calls, pipeline, 2)
}

#[inline(never)]
fn case_pipeline_none(calls: u64, pipeline: &Pipeline) -> u64 {
    pipeline_loop(calls, pipeline, 4)
}

#[inline(never)]
fn case_pipeline_bulkhead(calls: u64, pipeline: &Pipeline) -> u64 {
    pipeline_loop(calls, pipeline, 3)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let calls: u64 = std::env::var("BULKHEAD_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let registry = Registry::new();
    let service = ResilientService::new(Backend, &registry)?;
    let pipeline =
        |id: &str| Pipeline::builder(&registry, id).bulkhead(|b| b.max_concurrent(1_000_000));
    let hedge = pipeline("p-hedge")
        .hedge(|h| h.delay(std::time::Duration::from_secs(1)))
        .build()?;
    let retry = pipeline("p-retry").retry(|r| r.max_attempts(3)).build()?;
    let plain = pipeline("p-bulkhead").build()?;
    let none = Pipeline::builder(&registry, "p-none").build()?;

    let only: Vec<String> = std::env::args().skip(1).collect();
    if only.iter().any(|o| o == "sizes") {
        println!(
            "wrapper hedge future: {} bytes",
            std::mem::size_of_val(&service.hedged(1))
        );
        println!(
            "wrapper retry future: {} bytes",
            std::mem::size_of_val(&service.retried(1))
        );
        println!(
            "pipeline hedge future: {} bytes",
            std::mem::size_of_val(&hedge.execute_async(|| answer(1)))
        );
        println!(
            "pipeline retry future: {} bytes",
            std::mem::size_of_val(&retry.execute_async(|| answer(1)))
        );
        return Ok(());
    }
    let runs = |name: &str| only.is_empty() || only.iter().any(|o| o == name);
    let mut acc = 0_u64;
    if runs("wrapper_hedge") {
        acc ^= case_wrapper_hedge(calls, &service);
    }
    if runs("wrapper_retry") {
        acc ^= case_wrapper_retry(calls, &service);
    }
    if runs("pipeline_hedge") {
        acc ^= case_pipeline_hedge(calls, &hedge);
    }
    if runs("pipeline_retry") {
        acc ^= case_pipeline_retry(calls, &retry);
    }
    if runs("pipeline_none") {
        acc ^= case_pipeline_none(calls, &none);
    }
    if runs("pipeline_bulkhead") {
        acc ^= case_pipeline_bulkhead(calls, &plain);
    }
    println!("{acc}");
    Ok(())
}
