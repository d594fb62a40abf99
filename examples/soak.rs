//! A soak run: the axum example's service (`examples/axum_service.rs`) in its
//! own process under sustained load from this one, over loopback, while the
//! reports backend switches between well, slow and failing, clients hang up
//! at random, and limits change by `reload_toml` and `set_max_concurrent`.
//! At the end it checks that every bulkhead is idle with its full capacity,
//! and prints what it measured as a Markdown table.
//!
//! ```sh
//! cargo run --release --example soak --features tower,metrics -- --minutes 10
//! ```
//!
//! Options: `--minutes M` (default 10), `--max-requests N` (default 50
//! million: a bound, not a target), `--phase-secs S` (how long the backend
//! stays in one state, default 5). It exits with an error if the service is
//! not idle with full capacity at the end, or if a request failed in a way
//! the run does not expect (anything but 200, 503 and the failing
//! backend's 500).

#[allow(dead_code)]
#[path = "axum_service.rs"]
mod example;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::post;
use bulkhead::Registry;
use example::{CHECKOUT_SLOTS, Health, REPORTS_SLOTS, ReportsBackend};
use reqwest::Client;
use serde_json::Value;

/// A slow report takes this long: long enough to fill the reports bulkhead
/// at the load below, short enough that slots turn over within a phase.
const SLOW_REPORT: Duration = Duration::from_millis(800);
/// How long a reports caller may wait for a slot: the soak exercises queued
/// waiters (hand-offs, deadlines, cancellation), not only rejections.
const REPORTS_MAX_WAIT: &str = "150ms";
/// Client loops per route, each sending one request after another.
const CHECKOUT_CLIENTS: usize = 16;
const REPORTS_CLIENTS: usize = 24;
/// A pause between one client's requests, so the load is sustained but does
/// not take every cycle of a small machine.
const THINK: Duration = Duration::from_millis(2);
/// Share of report requests whose client hangs up after a random delay.
const REPORT_HANG_UPS: f64 = 0.1;
/// Share of checkout requests whose client hangs up almost at once.
const CHECKOUT_HANG_UPS: f64 = 0.02;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut options = Options::default();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| -> Result<u64, String> {
            args.next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{name} needs a whole number"))
        };
        match arg.as_str() {
            "serve" => return serve(),
            "--minutes" => options.minutes = value("--minutes")?,
            "--max-requests" => options.max_requests = value("--max-requests")?,
            "--phase-secs" => options.phase_secs = value("--phase-secs")?.max(1),
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(drive(options))
}

#[derive(Debug, Clone, Copy)]
struct Options {
    minutes: u64,
    max_requests: u64,
    phase_secs: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            minutes: 10,
            max_requests: 50_000_000,
            phase_secs: 5,
        }
    }
}

// ------------------------------------------------------------ the service

/// The child process: the example's app, its reports bulkhead waiting up to
/// `REPORTS_MAX_WAIT`, plus two routes the driver changes limits with.
fn serve() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let registry = Registry::builder().config_toml(&base_config())?.build();
        let backend = ReportsBackend::new(SLOW_REPORT);
        let admin = Router::new()
            .route("/soak/reload", post(reload))
            .route("/soak/limit/{id}/{limit}", post(set_limit))
            .with_state(registry.clone());
        let app = example::app(&registry, backend)?.merge(admin);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        println!("listening on {}", listener.local_addr()?);
        axum::serve(listener, app).await?;
        Ok(())
    })
}

/// The configuration the service starts with, and returns to at the end.
fn base_config() -> String {
    limits_config(REPORTS_SLOTS)
}

fn limits_config(reports: u32) -> String {
    format!(
        "[bulkhead.instances.reports]\nmax_concurrent = {reports}\nmax_wait = \"{REPORTS_MAX_WAIT}\"\n"
    )
}

async fn reload(State(registry): State<Registry>, toml: String) -> (StatusCode, String) {
    match registry.reload_toml(&toml) {
        Ok(changes) => (StatusCode::OK, format!("{changes:?}")),
        Err(error) => (StatusCode::BAD_REQUEST, error.to_string()),
    }
}

async fn set_limit(
    State(registry): State<Registry>,
    Path((id, limit)): Path<(String, u32)>,
) -> (StatusCode, String) {
    match registry
        .bulkhead(&id)
        .and_then(|bulkhead| bulkhead.set_max_concurrent(limit))
    {
        Ok(()) => (StatusCode::OK, String::new()),
        Err(error) => (StatusCode::BAD_REQUEST, error.to_string()),
    }
}

// ------------------------------------------------------------- the driver

/// The child process, killed when dropped.
struct Service {
    child: Child,
    base: String,
}

impl Service {
    fn start() -> Result<Self, Box<dyn std::error::Error>> {
        let mut child = Command::new(std::env::current_exe()?)
            .arg("serve")
            .stdout(Stdio::piped())
            .spawn()?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line)?;
        let address = line
            .trim()
            .strip_prefix("listening on ")
            .ok_or_else(|| format!("unexpected first line from the service: {line:?}"))?;
        Ok(Service {
            base: format!("http://{address}"),
            child,
        })
    }

    /// The service's resident memory, in KiB (Linux only).
    fn rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the load generator saw, per route.
#[derive(Default)]
struct Tally {
    statuses: BTreeMap<u16, u64>,
    /// The client gave up before the answer came.
    hung_up: u64,
    /// The connection failed (not expected on loopback).
    errors: u64,
    /// Latencies in microseconds of answered requests, by the reports
    /// backend's state when the request was sent.
    latencies: [Vec<u32>; 3],
}

#[derive(Default)]
struct Tallies {
    checkout: Mutex<Tally>,
    reports: Mutex<Tally>,
}

/// The state the driver last gave the reports backend.
fn health_index(health: Health) -> usize {
    match health {
        Health::Well => 0,
        Health::Slow => 1,
        Health::Failing => 2,
    }
}

const HEALTHS: [Health; 3] = [Health::Well, Health::Slow, Health::Failing];

async fn drive(options: Options) -> Result<(), Box<dyn std::error::Error>> {
    let service = Service::start()?;
    let base = service.base.clone();
    let client = Client::builder().pool_max_idle_per_host(64).build()?;
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let health = Arc::new(AtomicU8::new(0));
    let tallies = Arc::new(Tallies::default());
    let started = Instant::now();
    let rss_at_start = service.rss_kib();
    eprintln!(
        "soak: {} min against {base}, the backend changing every {} s",
        options.minutes, options.phase_secs
    );

    let mut clients = tokio::task::JoinSet::new();
    for (route, count) in [("checkout", CHECKOUT_CLIENTS), ("reports", REPORTS_CLIENTS)] {
        for n in 0..count {
            let (client, base, stop, sent, health, tallies) = (
                client.clone(),
                base.clone(),
                Arc::clone(&stop),
                Arc::clone(&sent),
                Arc::clone(&health),
                Arc::clone(&tallies),
            );
            clients.spawn(async move {
                let mut i = 0u64;
                while !stop.load(Relaxed) {
                    if sent.fetch_add(1, Relaxed) >= options.max_requests {
                        stop.store(true, Relaxed);
                        break;
                    }
                    i += 1;
                    let state = usize::from(health.load(Relaxed));
                    let (request, tally, hang_up) = if route == "checkout" {
                        let request = client.post(format!("{base}/checkout"));
                        let hang_up = rand::random_bool(CHECKOUT_HANG_UPS)
                            .then(|| Duration::from_micros(rand::random_range(0..500)));
                        (request, &tallies.checkout, hang_up)
                    } else {
                        let request = client.get(format!("{base}/reports/r-{n}-{i}"));
                        let hang_up = rand::random_bool(REPORT_HANG_UPS)
                            .then(|| Duration::from_millis(rand::random_range(1..400)));
                        (request, &tallies.reports, hang_up)
                    };
                    let began = Instant::now();
                    let answer = async {
                        let response = request.send().await?;
                        let status = response.status().as_u16();
                        response.bytes().await?;
                        Ok::<_, reqwest::Error>(status)
                    };
                    let outcome = match hang_up {
                        Some(after) => tokio::time::timeout(after, answer).await.ok(),
                        None => Some(answer.await),
                    };
                    let took = u32::try_from(began.elapsed().as_micros()).unwrap_or(u32::MAX);
                    {
                        let mut tally = tally.lock().unwrap();
                        match outcome {
                            None => tally.hung_up += 1,
                            Some(Err(_)) => tally.errors += 1,
                            Some(Ok(status)) => {
                                *tally.statuses.entry(status).or_default() += 1;
                                tally.latencies[state].push(took);
                            }
                        }
                    }
                    tokio::time::sleep(THINK).await;
                }
            });
        }
    }

    // The chaos: the backend's state every phase, a limit change every
    // other phase (a reload of the reports limit, or set_max_concurrent on
    // checkout, in turn).
    let deadline = started + Duration::from_secs(options.minutes * 60);
    let phase = Duration::from_secs(options.phase_secs);
    let mut rss = vec![(0u64, rss_at_start)];
    let mut last_report = Instant::now();
    let mut changes = 0u64;
    let mut phase_no = 0u64;
    while Instant::now() < deadline && !stop.load(Relaxed) {
        let next = HEALTHS[rand::random_range(0..3)];
        let path = match next {
            Health::Well => "recover",
            Health::Slow => "degrade",
            Health::Failing => "fail",
        };
        // Tag requests sent from now on with the new state.
        health.store(health_index(next) as u8, Relaxed);
        client
            .post(format!("{base}/reports/{path}"))
            .send()
            .await?
            .error_for_status()?;
        if phase_no % 2 == 1 {
            let response = if phase_no % 4 == 1 {
                let limit = rand::random_range(1..=2 * REPORTS_SLOTS);
                client
                    .post(format!("{base}/soak/reload"))
                    .body(limits_config(limit))
                    .send()
                    .await?
            } else {
                let limit = rand::random_range(1..=2 * CHECKOUT_SLOTS);
                client
                    .post(format!("{base}/soak/limit/checkout/{limit}"))
                    .send()
                    .await?
            };
            response.error_for_status()?;
            changes += 1;
        }
        phase_no += 1;
        tokio::time::sleep(phase.min(deadline.saturating_duration_since(Instant::now()))).await;
        if last_report.elapsed() >= Duration::from_secs(30) {
            last_report = Instant::now();
            let at = started.elapsed().as_secs();
            rss.push((at, service.rss_kib()));
            eprintln!(
                "soak: {at:>4} s, {} requests, service RSS {} KiB",
                sent.load(Relaxed),
                service.rss_kib().unwrap_or(0)
            );
        }
    }
    stop.store(true, Relaxed);
    while clients.join_next().await.is_some() {}
    let elapsed = started.elapsed();

    // Back to the start: well, the original limits; then every bulkhead must
    // drain to idle with its full capacity.
    client
        .post(format!("{base}/reports/recover"))
        .send()
        .await?
        .error_for_status()?;
    client
        .post(format!("{base}/soak/reload"))
        .body(base_config())
        .send()
        .await?
        .error_for_status()?;
    client
        .post(format!("{base}/soak/limit/checkout/{CHECKOUT_SLOTS}"))
        .send()
        .await?
        .error_for_status()?;
    let idle = wait_idle(&client, &base).await?;
    rss.push((elapsed.as_secs(), service.rss_kib()));

    let mut tallies = Arc::try_unwrap(tallies).map_err(|_| "clients still running")?;
    let mut report = Report {
        elapsed,
        options,
        changes,
        rss,
        checkout: tallies.checkout.get_mut().unwrap(),
        reports: tallies.reports.get_mut().unwrap(),
        idle: &idle,
    };
    print!("{}", report.markdown());
    report.verdict()
}

/// Polls `/bulkheads` until nothing is in flight or waiting; returns the
/// last snapshot.
async fn wait_idle(client: &Client, base: &str) -> Result<Value, Box<dyn std::error::Error>> {
    let give_up = Instant::now() + Duration::from_secs(30);
    loop {
        let text = client
            .get(format!("{base}/bulkheads"))
            .send()
            .await?
            .text()
            .await?;
        let snapshot: Value = serde_json::from_str(&text)?;
        let busy = snapshot.as_array().is_none_or(|all| {
            all.iter()
                .any(|b| b["concurrent_calls"] != 0 || b["waiting_calls"] != 0)
        });
        if !busy || Instant::now() > give_up {
            return Ok(snapshot);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

struct Report<'a> {
    elapsed: Duration,
    options: Options,
    changes: u64,
    rss: Vec<(u64, Option<u64>)>,
    checkout: &'a mut Tally,
    reports: &'a mut Tally,
    idle: &'a Value,
}

impl Report<'_> {
    fn markdown(&mut self) -> String {
        let mut out = String::new();
        let secs = self.elapsed.as_secs_f64();
        out += &format!(
            "Soak: {:.1} min, backend state changed every {} s, {} limit changes\n\n",
            secs / 60.0,
            self.options.phase_secs,
            self.changes
        );
        out += "| route | answered | 200 | 503 (refused) | 500 (backend failed) | hung up by client | errors | answered/s |\n";
        out += "|---|---|---|---|---|---|---|---|\n";
        for (route, tally) in [("checkout", &*self.checkout), ("reports", &*self.reports)] {
            let answered: u64 = tally.statuses.values().sum();
            let status = |code| tally.statuses.get(&code).copied().unwrap_or(0);
            out += &format!(
                "| {route} | {answered} | {} | {} | {} | {} | {} | {:.0} |\n",
                status(200),
                status(503),
                status(500),
                tally.hung_up,
                tally.errors,
                answered as f64 / secs
            );
        }
        out += "\nCheckout latency (answered requests) by the reports backend's state:\n\n";
        out +=
            "| reports backend | requests | p50 | p99 | p99.9 | max |\n|---|---|---|---|---|---|\n";
        for (state, name) in ["well", "slow", "failing"].iter().enumerate() {
            let samples = &mut self.checkout.latencies[state];
            samples.sort_unstable();
            let at = |q: f64| {
                samples
                    .get(((samples.len() as f64 - 1.0) * q).round() as usize)
                    .map_or("-".to_owned(), |us| {
                        format!("{:.2} ms", f64::from(*us) / 1000.0)
                    })
            };
            out += &format!(
                "| {name} | {} | {} | {} | {} | {} |\n",
                samples.len(),
                at(0.5),
                at(0.99),
                at(0.999),
                at(1.0)
            );
        }
        out += "\nService resident memory (VmRSS):\n\n| at | RSS |\n|---|---|\n";
        for (at, kib) in &self.rss {
            let kib = kib.map_or("-".to_owned(), |k| format!("{:.1} MiB", k as f64 / 1024.0));
            out += &format!("| {at} s | {kib} |\n");
        }
        out += "\nBulkheads at the end:\n\n| instance | in flight | waiting | available | max_concurrent |\n|---|---|---|---|---|\n";
        for b in self.idle.as_array().into_iter().flatten() {
            out += &format!(
                "| {} | {} | {} | {} | {} |\n",
                b["instance"].as_str().unwrap_or("?"),
                b["concurrent_calls"],
                b["waiting_calls"],
                b["available"],
                b["max_concurrent"]
            );
        }
        out
    }

    /// An error unless the service ended idle with full capacity and every
    /// answer was one the run expects.
    fn verdict(&self) -> Result<(), Box<dyn std::error::Error>> {
        for b in self.idle.as_array().ok_or("no snapshot")? {
            let idle = b["concurrent_calls"] == 0
                && b["waiting_calls"] == 0
                && b["available"] == b["max_concurrent"];
            if !idle {
                return Err(format!("not idle with full capacity at the end: {b}").into());
            }
        }
        let unexpected = |tally: &Tally, allowed: &[u16]| {
            tally.errors
                + tally
                    .statuses
                    .iter()
                    .filter(|(code, _)| !allowed.contains(code))
                    .map(|(_, n)| n)
                    .sum::<u64>()
        };
        let odd =
            unexpected(self.checkout, &[200, 503]) + unexpected(self.reports, &[200, 500, 503]);
        if odd > 0 {
            return Err(format!("{odd} requests ended in an unexpected way").into());
        }
        Ok(())
    }
}
