//! Throughput of a bulkhead under contention, by number of threads, against
//! `tokio::sync::Semaphore` and a `Mutex` + `Condvar` semaphore.
//!
//! Three cases, each run with 1, 2, 4, 8 and 16 threads (or tasks), sync
//! and async:
//!
//! | case | what every thread (task) does in a loop |
//! |---|---|
//! | `free` | takes a slot and gives it back: the semaphore always has room |
//! | `reject` | tries to take a slot of a full semaphore (its only slot is held) and is refused |
//! | `saturated` | waits for the only slot (`max_wait` 10 s), holds it for about `HOLD` of busy work, gives it back: every release hands the slot on to a waiter |
//!
//! Sync: `threads` OS threads. Async: `threads` tasks on a tokio
//! multi-thread runtime of `threads` workers (so both oversubscribe the
//! machine's cores the same way). A `Mutex` + `Condvar` semaphore has no
//! async form: the async tables compare ours with tokio's. tokio's
//! semaphore waits, sync, through a minimal `block_on` that parks the
//! thread (its `acquire()` future polled with a waker that unparks it).
//! Sync `saturated` also runs `ours_fifo`: the same bulkhead with bounded
//! barging off (`set_barging(0)`), every slot handed to a blocked thread
//! kept for it while it wakes up.
//!
//! For each point, `ROUNDS` runs of `RUN` each; the table gives the median
//! run's throughput in millions of operations per second (all threads
//! together) and, in parentheses, the CPUs the process kept busy meanwhile
//! (on a machine shared with other work, more threads win it a larger share
//! of the CPUs, which can raise the throughput of a case that does not
//! contend, such as `reject`), and for `saturated` how evenly the slot was
//! shared (the thread with the fewest operations, as a share of an even
//! split) and the longest wait for the slot. Everything is printed as markdown; with
//! `BULKHEAD_CONTENTION_CSV=path` the points are also written as CSV for
//! `benches/contention_plot.py`.
//!
//! Run with `cargo bench --bench contention` (about 2 minutes);
//! `cargo bench --bench contention -- sync saturated` runs only the points
//! whose flavor or case is named.

use std::fmt::Write as _;
use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Condvar, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::{Duration, Instant};

use bulkhead::{Bulkhead, BulkheadConfig};
use tokio::sync::Semaphore;

const THREADS: [usize; 5] = [1, 2, 4, 8, 16];
const RUN: Duration = Duration::from_millis(250);
const ROUNDS: usize = 3;
/// How long a `saturated` caller holds the slot (busy work).
const HOLD: Duration = Duration::from_micros(1);
/// Long enough that no `saturated` caller times out.
const MAX_WAIT: Duration = Duration::from_secs(10);

/// Which of the three loops.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Case {
    Free,
    Reject,
    Saturated,
}

impl Case {
    const ALL: [Case; 3] = [Case::Free, Case::Reject, Case::Saturated];

    fn name(self) -> &'static str {
        match self {
            Case::Free => "free",
            Case::Reject => "reject",
            Case::Saturated => "saturated",
        }
    }

    /// Slots of the semaphore (in `reject`, one, held by the harness).
    fn slots(self) -> u32 {
        match self {
            Case::Free => 1 << 20,
            Case::Reject | Case::Saturated => 1,
        }
    }
}

/// A semaphore taking part, sync.
trait SyncSemaphore: Sync {
    /// Takes a free slot without waiting and gives it back at once.
    fn try_cycle(&self) -> bool;
    /// Waits for a slot, runs `hold`, gives it back.
    fn wait_cycle(&self, hold: impl FnOnce(), waker: &Waker) -> bool;
    /// Takes a slot and keeps it until the guard drops (`reject`).
    fn hold_one(&self) -> Box<dyn Sync + '_>;
}

fn bulkhead(case: Case) -> Bulkhead {
    let max_wait = match case {
        Case::Free | Case::Reject => Duration::ZERO,
        Case::Saturated => MAX_WAIT,
    };
    let config = BulkheadConfig::builder()
        .max_concurrent(case.slots())
        .max_wait(max_wait)
        .build()
        .expect("a valid configuration");
    Bulkhead::new("contention", config)
}

impl SyncSemaphore for Bulkhead {
    fn try_cycle(&self) -> bool {
        self.try_enter().is_ok()
    }

    fn wait_cycle(&self, hold: impl FnOnce(), _: &Waker) -> bool {
        match self.enter() {
            Ok(permit) => {
                hold();
                drop(permit);
                true
            }
            Err(_) => false,
        }
    }

    fn hold_one(&self) -> Box<dyn Sync + '_> {
        Box::new(self.try_enter().expect("a free slot"))
    }
}

impl SyncSemaphore for Semaphore {
    fn try_cycle(&self) -> bool {
        self.try_acquire().is_ok()
    }

    fn wait_cycle(&self, hold: impl FnOnce(), waker: &Waker) -> bool {
        match block_on(self.acquire(), waker) {
            Ok(permit) => {
                hold();
                drop(permit);
                true
            }
            Err(_) => false,
        }
    }

    fn hold_one(&self) -> Box<dyn Sync + '_> {
        Box::new(self.try_acquire().expect("a free permit"))
    }
}

/// The textbook blocking semaphore: a count under a mutex, and a condition
/// variable that a release signals.
struct CondvarSemaphore {
    free: Mutex<u32>,
    freed: Condvar,
}

impl CondvarSemaphore {
    fn new(slots: u32) -> Self {
        CondvarSemaphore {
            free: Mutex::new(slots),
            freed: Condvar::new(),
        }
    }

    fn release(&self) {
        *self.free.lock().unwrap() += 1;
        self.freed.notify_one();
    }
}

impl SyncSemaphore for CondvarSemaphore {
    fn try_cycle(&self) -> bool {
        let mut free = self.free.lock().unwrap();
        if *free == 0 {
            return false;
        }
        *free -= 1;
        drop(free);
        self.release();
        true
    }

    fn wait_cycle(&self, hold: impl FnOnce(), _: &Waker) -> bool {
        let free = self.free.lock().unwrap();
        let (mut free, timeout) = self
            .freed
            .wait_timeout_while(free, MAX_WAIT, |free| *free == 0)
            .unwrap();
        if timeout.timed_out() {
            return false;
        }
        *free -= 1;
        drop(free);
        hold();
        self.release();
        true
    }

    fn hold_one(&self) -> Box<dyn Sync + '_> {
        *self.free.lock().unwrap() -= 1;
        Box::new(())
    }
}

/// Unparks the thread that polls.
struct Unpark(thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls `future` on this thread, parking between polls.
fn block_on<F: Future>(future: F, waker: &Waker) -> F::Output {
    let mut cx = Context::from_waker(waker);
    let mut future = pin!(future);
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(output) => return output,
            Poll::Pending => thread::park(),
        }
    }
}

/// Busy work of about `HOLD`: `spins` turns of a loop the optimiser keeps.
fn spin(spins: u64) {
    for i in 0..spins {
        black_box(i);
    }
}

/// Turns of [`spin`] that take about `HOLD` on this machine.
fn calibrate() -> u64 {
    let spins = 1_000_000;
    let best = (0..5)
        .map(|_| {
            let start = Instant::now();
            spin(spins);
            start.elapsed()
        })
        .min()
        .expect("five runs");
    (HOLD.as_nanos() as u64 * spins / best.as_nanos().max(1) as u64).max(1)
}

/// What one thread (task) did in one run.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    ops: u64,
    /// The longest wait for a slot (`saturated`).
    longest_wait: Duration,
}

/// One run's outcome.
#[derive(Debug, Clone)]
struct Run {
    elapsed: Duration,
    /// CPU time the whole process used meanwhile.
    cpu: Duration,
    tallies: Vec<Tally>,
}

/// The CPU time this process has used so far (user and system, all
/// threads), from `/proc/self/stat` (in clock ticks, 10 ms); zero where it
/// cannot be read.
fn process_cpu() -> Duration {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return Duration::ZERO;
    };
    // The fields after the command name, which is in parentheses.
    let Some((_, fields)) = stat.rsplit_once(')') else {
        return Duration::ZERO;
    };
    let mut fields = fields.split_whitespace().skip(11);
    let ticks = |f: Option<&str>| f.and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    let (user, system) = (ticks(fields.next()), ticks(fields.next()));
    Duration::from_millis((user + system) * 10)
}

impl Run {
    /// The CPUs the process kept busy on average: the share of the machine
    /// it got, which other processes on a shared machine reduce.
    fn cpus(&self) -> f64 {
        self.cpu.as_secs_f64() / self.elapsed.as_secs_f64()
    }

    fn throughput(&self) -> f64 {
        self.tallies.iter().map(|t| t.ops).sum::<u64>() as f64 / self.elapsed.as_secs_f64()
    }

    /// The fewest operations of a thread, as a share of an even split.
    fn fairness(&self) -> f64 {
        let total: u64 = self.tallies.iter().map(|t| t.ops).sum();
        let least = self.tallies.iter().map(|t| t.ops).min().unwrap_or(0);
        if total == 0 {
            return 0.0;
        }
        least as f64 * self.tallies.len() as f64 / total as f64
    }

    fn longest_wait(&self) -> Duration {
        self.tallies
            .iter()
            .map(|t| t.longest_wait)
            .max()
            .unwrap_or_default()
    }
}

/// One loop of a sync thread until `stop`.
fn sync_loop<S: SyncSemaphore>(case: Case, semaphore: &S, spins: u64, stop: &AtomicBool) -> Tally {
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut tally = Tally::default();
    while !stop.load(Ordering::Relaxed) {
        match case {
            Case::Free | Case::Reject => {
                black_box(semaphore.try_cycle());
            }
            Case::Saturated => {
                let start = Instant::now();
                let admitted = semaphore.wait_cycle(
                    || {
                        tally.longest_wait = tally.longest_wait.max(start.elapsed());
                        spin(spins);
                    },
                    &waker,
                );
                assert!(admitted, "no caller waits {MAX_WAIT:?}");
            }
        }
        tally.ops += 1;
    }
    tally
}

fn run_sync<S: SyncSemaphore>(case: Case, semaphore: &S, threads: usize, spins: u64) -> Run {
    let _held = (case == Case::Reject).then(|| semaphore.hold_one());
    let stop = AtomicBool::new(false);
    let barrier = Barrier::new(threads + 1);
    thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    sync_loop(case, semaphore, spins, &stop)
                })
            })
            .collect();
        barrier.wait();
        let (start, cpu) = (Instant::now(), process_cpu());
        thread::sleep(RUN);
        stop.store(true, Ordering::Relaxed);
        let tallies = workers
            .into_iter()
            .map(|w| w.join().expect("a worker does not panic"))
            .collect();
        Run {
            elapsed: start.elapsed(),
            cpu: process_cpu().saturating_sub(cpu),
            tallies,
        }
    })
}

/// An async semaphore taking part.
#[derive(Clone)]
enum AsyncSemaphore {
    Ours(Bulkhead),
    Tokio(Arc<Semaphore>),
}

impl AsyncSemaphore {
    async fn cycle(&self, case: Case, spins: u64, longest_wait: &mut Duration) {
        match (self, case) {
            (AsyncSemaphore::Ours(bulkhead), Case::Free | Case::Reject) => {
                black_box(bulkhead.enter_async().await.is_ok());
            }
            (AsyncSemaphore::Tokio(semaphore), Case::Free) => {
                black_box(semaphore.acquire().await.is_ok());
            }
            (AsyncSemaphore::Tokio(semaphore), Case::Reject) => {
                // tokio's `acquire` waits without a bound: its refusal is
                // `try_acquire`.
                black_box(semaphore.try_acquire().is_ok());
            }
            (AsyncSemaphore::Ours(bulkhead), Case::Saturated) => {
                let start = Instant::now();
                let permit = bulkhead.enter_async().await.expect("no caller waits 10 s");
                *longest_wait = (*longest_wait).max(start.elapsed());
                spin(spins);
                drop(permit);
            }
            (AsyncSemaphore::Tokio(semaphore), Case::Saturated) => {
                let start = Instant::now();
                let permit = semaphore.acquire().await.expect("never closed");
                *longest_wait = (*longest_wait).max(start.elapsed());
                spin(spins);
                drop(permit);
            }
        }
    }
}

fn run_async(case: Case, semaphore: &AsyncSemaphore, tasks: usize, spins: u64) -> Run {
    let _held = match (case, semaphore) {
        (Case::Reject, AsyncSemaphore::Ours(bulkhead)) => {
            Some(Box::new(bulkhead.try_enter_owned().expect("a free slot")) as Box<dyn Send>)
        }
        (Case::Reject, AsyncSemaphore::Tokio(semaphore)) => Some(Box::new(
            Arc::clone(semaphore)
                .try_acquire_owned()
                .expect("a free permit"),
        ) as Box<dyn Send>),
        _ => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(tasks)
        .enable_time()
        .build()
        .expect("a runtime");
    let stop = Arc::new(AtomicBool::new(false));
    let barrier = Arc::new(tokio::sync::Barrier::new(tasks + 1));
    runtime.block_on(async {
        let workers: Vec<_> = (0..tasks)
            .map(|_| {
                let (semaphore, stop, barrier) =
                    (semaphore.clone(), Arc::clone(&stop), Arc::clone(&barrier));
                tokio::spawn(async move {
                    barrier.wait().await;
                    let mut tally = Tally::default();
                    while !stop.load(Ordering::Relaxed) {
                        semaphore.cycle(case, spins, &mut tally.longest_wait).await;
                        tally.ops += 1;
                        // A loop that never waits would keep its worker
                        // from the runtime's other duties (and from the
                        // stop flag's waker, were there one): yield now
                        // and then, as a server's request loop would.
                        if tally.ops % 64 == 0 {
                            tokio::task::yield_now().await;
                        }
                    }
                    tally
                })
            })
            .collect();
        barrier.wait().await;
        let (start, cpu) = (Instant::now(), process_cpu());
        tokio::time::sleep(RUN).await;
        stop.store(true, Ordering::Relaxed);
        let mut tallies = Vec::with_capacity(tasks);
        for worker in workers {
            tallies.push(worker.await.expect("a task does not panic"));
        }
        Run {
            elapsed: start.elapsed(),
            cpu: process_cpu().saturating_sub(cpu),
            tallies,
        }
    })
}

/// The median run (by throughput) of `ROUNDS`.
fn median_run(mut runs: Vec<Run>) -> Run {
    runs.sort_by(|a, b| a.throughput().total_cmp(&b.throughput()));
    runs.swap_remove(runs.len() / 2)
}

/// One point of the curves.
struct Point {
    flavor: &'static str,
    case: Case,
    semaphore: &'static str,
    threads: usize,
    run: Run,
}

fn main() {
    // `cargo bench` passes `--bench`; other arguments select points.
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let selected = |flavor: &str, case: Case| only.iter().all(|o| o == flavor || o == case.name());
    let spins = calibrate();
    let mut points = Vec::new();

    for case in Case::ALL.into_iter().filter(|&c| selected("sync", c)) {
        for threads in THREADS {
            let slots = case.slots();
            let ours = bulkhead(case);
            let fifo = bulkhead(case);
            fifo.set_barging(0);
            let tokio = Semaphore::new(slots as usize);
            let condvar = CondvarSemaphore::new(slots);
            let mut runs: [Vec<Run>; 4] = Default::default();
            for _ in 0..ROUNDS {
                runs[0].push(run_sync(case, &ours, threads, spins));
                if case == Case::Saturated {
                    runs[1].push(run_sync(case, &fifo, threads, spins));
                }
                runs[2].push(run_sync(case, &tokio, threads, spins));
                runs[3].push(run_sync(case, &condvar, threads, spins));
            }
            let names = ["ours", "ours_fifo", "tokio", "mutex_condvar"];
            for (semaphore, runs) in names.into_iter().zip(runs) {
                if runs.is_empty() {
                    continue;
                }
                points.push(Point {
                    flavor: "sync",
                    case,
                    semaphore,
                    threads,
                    run: median_run(runs),
                });
            }
        }
    }

    for case in Case::ALL.into_iter().filter(|&c| selected("async", c)) {
        for tasks in THREADS {
            let slots = case.slots();
            let ours = AsyncSemaphore::Ours(bulkhead(case));
            let tokio = AsyncSemaphore::Tokio(Arc::new(Semaphore::new(slots as usize)));
            let mut runs: [Vec<Run>; 2] = Default::default();
            for _ in 0..ROUNDS {
                runs[0].push(run_async(case, &ours, tasks, spins));
                runs[1].push(run_async(case, &tokio, tasks, spins));
            }
            for (semaphore, runs) in ["ours", "tokio"].into_iter().zip(runs) {
                points.push(Point {
                    flavor: "async",
                    case,
                    semaphore,
                    threads: tasks,
                    run: median_run(runs),
                });
            }
        }
    }

    print!("{}", report(&points, spins));
    if let Ok(path) = std::env::var("BULKHEAD_CONTENTION_CSV") {
        std::fs::write(&path, csv(&points)).expect("the CSV is writable");
        eprintln!("wrote {path}");
    }
}

fn report(points: &[Point], spins: u64) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Median of {ROUNDS} runs of {RUN:?} per point; hold in `saturated`: {spins} spins (about {HOLD:?}).\n"
    );
    for flavor in ["sync", "async"] {
        for case in Case::ALL {
            let of_case: Vec<&Point> = points
                .iter()
                .filter(|p| p.flavor == flavor && p.case == case)
                .collect();
            if of_case.is_empty() {
                continue;
            }
            let mut semaphores: Vec<&str> = Vec::new();
            for p in &of_case {
                if !semaphores.contains(&p.semaphore) {
                    semaphores.push(p.semaphore);
                }
            }
            let _ = writeln!(
                out,
                "**{flavor}, `{}`** (Mops/s, all threads; in parentheses the CPUs the process kept busy)\n",
                case.name()
            );
            let mut header = String::from("| threads |");
            let mut rule = String::from("|---:|");
            for s in &semaphores {
                let _ = write!(header, " {s} |");
                rule.push_str("---:|");
                if case == Case::Saturated {
                    let _ = write!(header, " {s}: least share | {s}: longest wait |");
                    rule.push_str("---:|---:|");
                }
            }
            let _ = writeln!(out, "{header}\n{rule}");
            for threads in THREADS {
                let mut row = format!("| {threads} |");
                for s in &semaphores {
                    match of_case
                        .iter()
                        .find(|p| p.threads == threads && p.semaphore == *s)
                    {
                        Some(p) => {
                            let _ = write!(
                                row,
                                " {:.3} ({:.1}) |",
                                p.run.throughput() / 1e6,
                                p.run.cpus()
                            );
                            if case == Case::Saturated {
                                let _ = write!(
                                    row,
                                    " {:.2} | {:.2?} |",
                                    p.run.fairness(),
                                    p.run.longest_wait()
                                );
                            }
                        }
                        None => row.push_str(" |"),
                    }
                }
                let _ = writeln!(out, "{row}");
            }
            out.push('\n');
        }
    }
    out
}

fn csv(points: &[Point]) -> String {
    let mut out = String::from(
        "flavor,case,semaphore,threads,ops_per_sec,cpus,least_share,longest_wait_us\n",
    );
    for p in points {
        let _ = writeln!(
            out,
            "{},{},{},{},{:.0},{:.2},{:.3},{:.1}",
            p.flavor,
            p.case.name(),
            p.semaphore,
            p.threads,
            p.run.throughput(),
            p.run.cpus(),
            p.run.fairness(),
            p.run.longest_wait().as_secs_f64() * 1e6
        );
    }
    out
}
