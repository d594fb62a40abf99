//! A soak run: the axum example's service (`examples/axum_service.rs`) in its
//! own process under sustained load from this one, over loopback, while
//! chaos makes the reports backend well, slow or failing (reloads of the
//! chaos policy `reports` that its `render` carries), clients hang up at
//! random, and limits change by `reload_toml` and `set_max_concurrent`.
//! At the end it checks that every bulkhead is idle with its full capacity,
//! that every answer was one the run expects and that the service's memory
//! stayed flat, and prints what it measured as a Markdown table.
//!
//! ```sh
//! cargo run --release --example soak --features tower,metrics -- --minutes 10
//! ```
//!
//! Options: `--minutes M` (default 10), `--max-requests N` (default 50
//! million: a bound, not a target), `--phase-secs S` (how long the backend
//! stays in one state, default 5). It exits with an error if the service is
//! not idle with full capacity at the end, if a request failed in a way
//! the run does not expect (anything but 200, 503 and, for reports, the
//! injected fault's 500), or if the service's resident memory at the end is
//! more than [`RSS_GROWTH_LIMIT`] times what it was after
//! [`RSS_WARM_SECS`] (Linux only; elsewhere memory is not measured).

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
use example::{CHECKOUT_SLOTS, METRICS_INTERVAL, REPORTS_SLOTS};
use reqwest::Client;
use serde_json::Value;

/// The latency chaos injects into a report while the backend is slow: long
/// enough to fill the reports bulkhead at the load below, short enough
/// that slots turn over within a phase.
const SLOW_REPORT: &str = "800ms";
/// The answer to a report that chaos failed.
const INJECTED_BODY: &str = r#"chaos "reports" injected a fault"#;
/// How often the driver reads the service's resident memory.
const RSS_EVERY: Duration = Duration::from_secs(10);
/// The reference for memory: the service's RSS once it has been under load
/// this long (connection buffers, the allocator's pools and the tokio
/// runtime's are all warm by then; from start to there RSS grows anyway).
const RSS_WARM_SECS: u64 = 60;
/// The run fails if the service's RSS at the end is more than this times
/// its RSS at [`RSS_WARM_SECS`]. At some 8,500 requests/s for 10 minutes,
/// a leak of one byte per request would add about 4.4 MiB after the first
/// minute to some 7.7 MiB, and fail it; fragmentation and buffers sized to
/// a burst stay well within (RELIABILITY.md: 0.5 MiB).
const RSS_GROWTH_LIMIT: f64 = 1.5;
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

/// The child process: the example's app (its reports bulkhead waiting up to
/// `REPORTS_MAX_WAIT`, its chaos `reports` off) and `/metrics`, plus two
/// routes the driver changes limits and chaos with.
fn serve() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let registry = Registry::builder().config_toml(&base_config())?.build();
        let admin = Router::new()
            .route("/soak/reload", post(reload))
            .route("/soak/limit/{id}/{limit}", post(set_limit))
            .with_state(registry.clone());
        // `/metrics` for the chaos injections' counts; its exporter stops
        // when `_exporter` is dropped, after the server.
        let (metrics, _exporter) = example::metrics(&registry, METRICS_INTERVAL)?;
        let app = example::app(&registry)?.merge(admin).merge(metrics);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        println!("listening on {}", listener.local_addr()?);
        axum::serve(listener, app).await?;
        Ok(())
    })
}

/// How the driver makes the reports backend behave, through chaos.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Health {
    /// Chaos off: reports are quick.
    Well,
    /// Every report delayed [`SLOW_REPORT`].
    Slow,
    /// Every report fails at once with an injected fault (500).
    Failing,
}

const HEALTHS: [Health; 3] = [Health::Well, Health::Slow, Health::Failing];

/// The configuration the service starts with, and returns to at the end.
fn base_config() -> String {
    config(REPORTS_SLOTS, Health::Well)
}

/// The whole TOML configuration with the reports limit `reports` and chaos
/// `reports` making the backend `health`: the example's [`example::DEGRADE`],
/// [`example::FAIL`] and [`example::RECOVER`], with a latency of
/// [`SLOW_REPORT`]. A reload replaces the whole TOML configuration, so each
/// one carries the limits too.
fn config(reports: u32, health: Health) -> String {
    let chaos = match health {
        Health::Well => "enabled = false\n".to_owned(),
        Health::Slow => {
            format!("enabled = true\nlatency_rate = 1.0\nlatency = \"{SLOW_REPORT}\"\n")
        }
        Health::Failing => "enabled = true\nfault_rate = 1.0\n".to_owned(),
    };
    format!(
        "[bulkhead.instances.reports]\nmax_concurrent = {reports}\nmax_wait = \"{REPORTS_MAX_WAIT}\"\n\n[chaos.instances.reports]\n{chaos}"
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
    /// A 500 whose body is not the injected fault's.
    odd_500: u64,
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
                        let body = response.bytes().await?;
                        Ok::<_, reqwest::Error>((status, body))
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
                            Some(Ok((status, body))) => {
                                if status == 500 && body != INJECTED_BODY.as_bytes() {
                                    tally.odd_500 += 1;
                                }
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

    // The backend's state every phase, by a reload of chaos `reports`
    // (with the reports limit in force); a limit change every other phase:
    // a new reports limit in that reload, or set_max_concurrent on
    // checkout (which lasts until the next phase's reload puts checkout's
    // configured limit back), in turn.
    let deadline = started + Duration::from_secs(options.minutes * 60);
    let phase = Duration::from_secs(options.phase_secs);
    let mut rss = vec![(0u64, rss_at_start)];
    let mut last_rss = Instant::now();
    let mut last_report = Instant::now();
    let mut changes = 0u64;
    let mut phase_no = 0u64;
    let mut reports_limit = REPORTS_SLOTS;
    let mut phases = [0u64; 3];
    while Instant::now() < deadline && !stop.load(Relaxed) {
        let next = HEALTHS[rand::random_range(0..3)];
        phases[health_index(next)] += 1;
        if phase_no % 4 == 1 {
            reports_limit = rand::random_range(1..=2 * REPORTS_SLOTS);
            changes += 1;
        }
        // Tag requests sent from now on with the new state.
        health.store(health_index(next) as u8, Relaxed);
        client
            .post(format!("{base}/soak/reload"))
            .body(config(reports_limit, next))
            .send()
            .await?
            .error_for_status()?;
        if phase_no % 4 == 3 {
            let limit = rand::random_range(1..=2 * CHECKOUT_SLOTS);
            client
                .post(format!("{base}/soak/limit/checkout/{limit}"))
                .send()
                .await?
                .error_for_status()?;
            changes += 1;
        }
        phase_no += 1;
        let phase_ends =
            Instant::now() + phase.min(deadline.saturating_duration_since(Instant::now()));
        while Instant::now() < phase_ends {
            tokio::time::sleep(RSS_EVERY.min(phase_ends.saturating_duration_since(Instant::now())))
                .await;
            if last_rss.elapsed() >= RSS_EVERY {
                last_rss = Instant::now();
                rss.push((started.elapsed().as_secs(), service.rss_kib()));
            }
        }
        if last_report.elapsed() >= Duration::from_secs(30) {
            last_report = Instant::now();
            eprintln!(
                "soak: {:>4} s, {} requests, service RSS {} KiB",
                started.elapsed().as_secs(),
                sent.load(Relaxed),
                service.rss_kib().unwrap_or(0)
            );
        }
    }
    stop.store(true, Relaxed);
    while clients.join_next().await.is_some() {}
    let elapsed = started.elapsed();

    // Back to the start: chaos off, the original limits (the reload puts
    // checkout's back too; set it anyway); then every bulkhead must drain
    // to idle with its full capacity.
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
    // The exporter counts events on a thread of its own: let it catch up.
    tokio::time::sleep(METRICS_INTERVAL + Duration::from_secs(1)).await;
    let scrape = client
        .get(format!("{base}/metrics"))
        .send()
        .await?
        .error_for_status()?
        .text()
        .await?;
    let injected = Injected::read(&scrape);

    let mut tallies = Arc::try_unwrap(tallies).map_err(|_| "clients still running")?;
    let mut report = Report {
        elapsed,
        options,
        changes,
        phases,
        injected,
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

/// What chaos `reports` injected, from the service's `/metrics`
/// (`bulkhead_chaos_injections_total{kind}`), and the events its exporter
/// lost (counted in none of these).
#[derive(Debug, Default)]
struct Injected {
    faults: u64,
    latencies: u64,
    latency_secs: f64,
    events_lost: u64,
}

impl Injected {
    fn read(scrape: &str) -> Self {
        let value = |name: &str, labels: &[&str]| -> f64 {
            scrape
                .lines()
                .filter(|line| !line.starts_with('#'))
                .filter_map(|line| line.rsplit_once(' '))
                .filter(|(key, _)| {
                    key.split('{').next() == Some(name)
                        && labels.iter().all(|label| key.contains(label))
                })
                .filter_map(|(_, value)| value.parse::<f64>().ok())
                .sum()
        };
        let reports = r#"instance="reports""#;
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        Injected {
            faults: value(
                "bulkhead_chaos_injections_total",
                &[reports, r#"kind="fault""#],
            ) as u64,
            latencies: value(
                "bulkhead_chaos_injections_total",
                &[reports, r#"kind="latency""#],
            ) as u64,
            latency_secs: value("bulkhead_chaos_latency_microseconds_total", &[reports]) / 1e6,
            events_lost: value("bulkhead_observer_events_lost_total", &[]) as u64,
        }
    }
}

struct Report<'a> {
    elapsed: Duration,
    options: Options,
    changes: u64,
    /// Phases in each state of the backend: well, slow, failing.
    phases: [u64; 3],
    injected: Injected,
    rss: Vec<(u64, Option<u64>)>,
    checkout: &'a mut Tally,
    reports: &'a mut Tally,
    idle: &'a Value,
}

impl Report<'_> {
    /// The RSS once warm (the first sample at or after [`RSS_WARM_SECS`])
    /// and at the end, in KiB: `None` if the run was shorter than that or
    /// memory could not be read.
    fn rss_warm_and_last(&self) -> Option<(u64, u64)> {
        let warm = self
            .rss
            .iter()
            .find(|(at, _)| *at >= RSS_WARM_SECS)
            .and_then(|(_, kib)| *kib)?;
        let last = self.rss.last().and_then(|(_, kib)| *kib)?;
        Some((warm, last))
    }

    fn markdown(&mut self) -> String {
        let mib = |kib: u64| format!("{:.1} MiB", kib as f64 / 1024.0);
        let mut out = String::new();
        let secs = self.elapsed.as_secs_f64();
        let [well, slow, failing] = self.phases;
        out += &format!(
            "Soak: {:.1} min, the reports backend's state drawn every {} s by a chaos reload \
             (well {well}, slow {slow}, failing {failing} phases), {} limit changes\n\n",
            secs / 60.0,
            self.options.phase_secs,
            self.changes
        );
        out += "| route | answered | 200 | 503 (refused) | 500 (injected fault) | hung up by client | errors | answered/s |\n";
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
        let injected = &self.injected;
        out +=
            "\nInjected by chaos `reports` (the service's `bulkhead_chaos_injections_total`):\n\n";
        out += "| faults | latencies | latency injected in all | observer events lost |\n|---|---|---|---|\n";
        out += &format!(
            "| {} | {} | {:.0} s | {} |\n",
            injected.faults, injected.latencies, injected.latency_secs, injected.events_lost
        );
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
        out += &format!(
            "\nService resident memory (VmRSS), read every {} s ({} readings):\n\n",
            RSS_EVERY.as_secs(),
            self.rss.len()
        );
        let readings: Vec<(u64, u64)> = self
            .rss
            .iter()
            .filter_map(|(at, kib)| kib.map(|kib| (*at, kib)))
            .collect();
        if let (Some(first), Some(last), Some(max)) = (
            readings.first(),
            readings.last(),
            readings.iter().max_by_key(|(_, kib)| *kib),
        ) {
            let warm = match self.rss_warm_and_last() {
                Some((warm, _)) => format!(
                    "{} (limit at the end: {RSS_GROWTH_LIMIT} x = {})",
                    mib(warm),
                    mib((warm as f64 * RSS_GROWTH_LIMIT) as u64)
                ),
                None => "- (run too short: not checked)".to_owned(),
            };
            out += &format!(
                "| first ({} s) | after {RSS_WARM_SECS} s | max ({} s) | last ({} s) |\n|---|---|---|---|\n| {} | {warm} | {} | {} |\n\n",
                first.0,
                max.0,
                last.0,
                mib(first.1),
                mib(max.1),
                mib(last.1)
            );
            // One reading a minute, and the last.
            out += "| at | RSS |\n|---|---|\n";
            let mut minute = 0;
            for (i, (at, kib)) in readings.iter().enumerate() {
                if *at >= minute || i == readings.len() - 1 {
                    out += &format!("| {at} s | {} |\n", mib(*kib));
                    minute = (at / 60 + 1) * 60;
                }
            }
        } else {
            out += "not measured (no /proc on this system)\n";
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

    /// An error unless the service ended idle with full capacity, every
    /// answer was one the run expects, and its memory at the end is within
    /// [`RSS_GROWTH_LIMIT`] times what it was once warm.
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
                + tally.odd_500
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
        if let Some((warm, last)) = self.rss_warm_and_last()
            && last as f64 > warm as f64 * RSS_GROWTH_LIMIT
        {
            return Err(format!(
                "the service's memory grew: {last} KiB at the end, {warm} KiB after {RSS_WARM_SECS} s"
            )
            .into());
        }
        Ok(())
    }
}
