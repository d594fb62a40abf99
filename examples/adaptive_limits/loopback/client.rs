//! The open-loop client: the simulation's arrivals on real time, each
//! through our real adaptive bulkhead (on the system clock) and over a
//! real TCP connection to the [`Server`](super::server::Server).

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bulkhead::{Bulkhead, CallOutcome};
use tokio::net::TcpStream;
use tokio::task::JoinSet;

use super::server::{read_word, write_word};
use crate::limiters::{Kind, Limiter};
use crate::scenarios::Scenario;
use crate::simulate::{Done, Random, Row, Run};
use crate::{TRACE_NS, model};

/// The seed of `simulate.rs`'s arrivals and work (a test checks that
/// [`arrivals`] draws what the simulation does).
const SEED: u64 = 0x5EED;

/// One arrival of the simulation: when (ns into the scenario), the work it
/// brings (seconds at full speed) and the base latency of its time (s).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Arrival {
    pub(crate) at: u64,
    pub(crate) work: f64,
    pub(crate) base: f64,
}

/// The arrivals of `scenario` and their work, as `simulate.rs` draws them:
/// an exponential gap at the rate of the phase of the last arrival, then
/// two draws of work per arrival, admitted or not, so the sequence does not
/// depend on the limiter. (Scenarios without chaos: its draws are the
/// limiter's business.)
pub(crate) fn arrivals(scenario: &Scenario) -> Vec<Arrival> {
    let service = scenario.service();
    let mut random = Random(SEED);
    let end = scenario.seconds() * 1_000_000_000;
    let rate = |at: u64| scenario.phase_at(at).load * model().c / (model().b * service.mean());
    let gap = |random: &mut Random, rate: f64| {
        let seconds = -(1.0 - random.unit()).ln() / rate;
        (seconds * 1e9).round() as u64
    };
    let mut all = Vec::new();
    let mut at = gap(&mut random, rate(0));
    while at < end {
        let base = model().b * scenario.phase_at(at).slow;
        let work = random.work(base, service);
        all.push(Arrival { at, work, base });
        at += gap(&mut random, rate(at)).max(1);
    }
    all
}

/// Our bulkhead for `kind` (ours or the static limit), as the simulation
/// configures it, on the system clock: the configuration of the
/// simulation's own, with its instance id (which seeds its probes).
pub(crate) fn bulkhead(kind: Kind) -> Bulkhead {
    match Limiter::new(kind) {
        Limiter::Bulkhead { bulkhead, .. } => Bulkhead::new(bulkhead.instance(), bulkhead.config()),
        Limiter::Tower { .. } => panic!("only our bulkheads run on real sockets"),
    }
}

/// One admitted call, as the client saw it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Call {
    /// When it was admitted, ns into the run.
    pub(crate) start: u64,
    pub(crate) work: f64,
    pub(crate) base: f64,
    /// From admission to the answer read, s.
    pub(crate) latency: f64,
    /// What the server held it, s.
    pub(crate) held: f64,
}

/// A loopback run: the harness's [`Run`] (what its reports read), and what
/// only a run on real time has.
pub(crate) struct Loopback {
    pub(crate) run: Run,
    /// Every call answered, ended within the run or not.
    pub(crate) calls: Vec<Call>,
    /// Calls whose connection failed.
    pub(crate) errors: u64,
    /// The latest an arrival was sent after its time.
    pub(crate) lag: Duration,
}

impl Loopback {
    /// Calls admitted: answered, failed, or cut off by nothing (every call
    /// is waited for).
    pub(crate) fn admitted(&self) -> u64 {
        self.calls.len() as u64 + self.errors
    }
}

/// Idle connections to the server, one per call in flight.
struct Pool {
    addr: SocketAddr,
    idle: Mutex<Vec<TcpStream>>,
}

impl Pool {
    async fn take(&self) -> io::Result<TcpStream> {
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        match idle {
            Some(stream) => Ok(stream),
            None => {
                let stream = TcpStream::connect(self.addr).await?;
                stream.set_nodelay(true)?;
                Ok(stream)
            }
        }
    }

    fn give(&self, stream: TcpStream) {
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(stream);
    }
}

/// Runs `plan` (from [`arrivals`]) against the server at `addr` through
/// `bulkhead`, on a single-threaded runtime of this thread; `end` is the
/// scenario's end (ns): calls answered later are left out of the run, as
/// the simulation leaves them out. Blocks until every admitted call is
/// answered.
pub(crate) fn run(
    kind: Kind,
    plan: &[Arrival],
    end: u64,
    bulkhead: Bulkhead,
    addr: SocketAddr,
) -> io::Result<Loopback> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(drive(kind, plan, end, bulkhead, addr))
}

async fn drive(
    kind: Kind,
    plan: &[Arrival],
    end: u64,
    bulkhead: Bulkhead,
    addr: SocketAddr,
) -> io::Result<Loopback> {
    let pool = Arc::new(Pool {
        addr,
        idle: Mutex::new(Vec::new()),
    });
    // A connection for each call the ceiling lets in, opened beforehand.
    let mut opened = Vec::new();
    for _ in 0..bulkhead.config().max_concurrent() {
        opened.push(pool.take().await?);
    }
    for stream in opened {
        pool.give(stream);
    }
    let start = Instant::now() + Duration::from_millis(20);
    let since = move |at: Instant| {
        u64::try_from(at.saturating_duration_since(start).as_nanos()).unwrap_or(u64::MAX)
    };
    let trace = {
        let bulkhead = bulkhead.clone();
        tokio::spawn(async move {
            let mut rows = Vec::new();
            let mut at = 0;
            while at < end {
                tokio::time::sleep_until((start + Duration::from_nanos(at)).into()).await;
                rows.push(Row {
                    at,
                    limit: bulkhead.max_concurrent(),
                    probing: bulkhead.adaptive().is_some_and(|a| a.probing),
                });
                at += TRACE_NS;
            }
            rows
        })
    };
    let mut calls = JoinSet::new();
    let (mut rejected, mut lag) = (0, Duration::ZERO);
    for arrival in plan {
        let due = start + Duration::from_nanos(arrival.at);
        tokio::time::sleep_until(due.into()).await;
        let now = Instant::now();
        lag = lag.max(now - due);
        let Ok(mut permit) = bulkhead.try_enter_owned() else {
            rejected += 1;
            continue;
        };
        let pool = Arc::clone(&pool);
        let Arrival { work, base, .. } = *arrival;
        calls.spawn(async move {
            let answer = async {
                let stream = pool.take().await?;
                write_word(&stream, (work * 1e9).round() as u64).await?;
                let held = read_word(&stream).await?;
                pool.give(stream);
                io::Result::Ok(held)
            };
            let answered = answer.await;
            let latency = now.elapsed().as_secs_f64();
            permit.set_outcome(if answered.is_ok() {
                CallOutcome::Success
            } else {
                CallOutcome::Error
            });
            drop(permit);
            answered.ok().map(|held| Call {
                start: since(now),
                work,
                base,
                latency,
                held: Duration::from_nanos(held).as_secs_f64(),
            })
        });
    }
    let mut answered = Vec::new();
    let mut errors = 0;
    while let Some(call) = calls.join_next().await {
        match call.expect("a call does not panic") {
            Some(call) => answered.push(call),
            None => errors += 1,
        }
    }
    answered.sort_by_key(|c| c.start);
    let rows = trace.await.expect("the trace does not panic");
    let done = answered
        .iter()
        .filter(|c| c.start + (c.latency * 1e9) as u64 <= end)
        .map(|c| Done {
            start: c.start,
            ratio: (c.latency / c.base) as f32,
        })
        .collect();
    Ok(Loopback {
        run: Run {
            kind,
            done,
            rows,
            arrivals: plan.len() as u64,
            rejected,
            delayed: 0,
            faulted: errors,
            no_load: bulkhead
                .adaptive()
                .and_then(|a| a.no_load)
                .map(|d| d.as_secs_f64()),
        },
        calls: answered,
        errors,
        lag,
    })
}
