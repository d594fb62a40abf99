//! Throughput of a bulkhead under contention, by number of threads, against
//! `tokio::sync::Semaphore` and a `Mutex` + `Condvar` semaphore; of a
//! bulkhead whose calls carry a priority; and of a keyed bulkhead against a
//! tokio semaphore per key in a `DashMap`.
//!
//! Eight cases, each run with 1, 2, 4, 8 and 16 threads (or tasks), sync
//! and async:
//!
//! | case | what every thread (task) does in a loop | taking part |
//! |---|---|---|
//! | `free` | takes a slot and gives it back: the semaphore always has room | ours, tokio, Mutex + Condvar |
//! | `reject` | tries to take a slot of a full semaphore (its only slot is held) and is refused | ours, tokio, Mutex + Condvar |
//! | `saturated` | waits for the only slot (`max_wait` 10 s), holds it for about `HOLD` of busy work, gives it back: every release hands the slot on to a waiter | ours, ours with strict FIFO hand-off (sync), tokio, Mutex + Condvar |
//! | `priority_free` | as `free`, on a bulkhead with classes (`shed_at` at its defaults), the threads alternately `Critical` and `Sheddable` (`priority::with` around the thread's loop, `priority::scope` around the task's): every call takes the classed path and counts itself in its class | ours, ours with no class set (`ours_untagged`, the plain path), tokio |
//! | `priority_saturated` | as `saturated` (one slot), the threads alternately `Critical` and `Sheddable`: a `Critical` call waits for the slot; a `Sheddable` one is shed when the slot is taken (its class may not use the whole limit, so it never waits), then spends about `HOLD` answering its refusal before it tries again | ours; tokio with `Critical` waiting in `acquire` and `Sheddable` refused by `try_acquire` |
//! | `keyed_same_key` | takes a slot of key 0 of a keyed bulkhead (`per_key` and `max_concurrent` roomy) and gives it back | ours, tokio per key, tokio per key and global |
//! | `keyed_own_key` | the same with the thread's own key (0, 1, 2, ...): do distinct keys contend (the shard's read lock, the global count)? | ours, tokio per key, tokio per key and global |
//! | `keyed_rejected` | tries to take a slot of key 0, which holds its `per_key` (1, held by the harness), and is refused | ours, tokio per key, tokio per key and global |
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
//! The keyed reference (`tokio_dashmap`) is what one writes by hand: a
//! `DashMap<u64, Arc<tokio::sync::Semaphore>>` of `per_key` permits each,
//! a call looking its key up under the map shard's read lock (inserting it
//! the first time) and taking a permit there (async: a free permit there,
//! else waiting on a clone of the key's `Arc`, so that no task waits
//! holding the lock); `tokio_dashmap_global` also
//! takes a permit of one global semaphore of `max_concurrent`, the second
//! limit ours enforces (ours counts every admitted call in one global word
//! too). Ours (`KeyedBulkhead<u64>`) finds the key under its shard's read
//! lock, counts the call in the key's word and the global word, and gives
//! the slot back without the lock. Neither evicts anything during a run.
//!
//! For each point, `ROUNDS` runs of `RUN` each; the table gives the median
//! run's throughput in millions of operations per second (all threads
//! together; for `priority_saturated`, the calls admitted, refusals not
//! counted) and, in parentheses, the CPUs the process kept busy meanwhile
//! (on a machine shared with other work, more threads win it a larger share
//! of the CPUs, which can raise the throughput of a case that does not
//! contend, such as `reject`); for `saturated` how evenly the slot was
//! shared (the thread with the fewest operations, as a share of an even
//! split) and the longest wait for the slot; for `priority_saturated` the
//! `Critical` calls' share of the admitted ones (an even split of the slot
//! between the threads would give the share of `Critical` threads, e.g.
//! 0.5 of 2, 4, 8 or 16 threads), the `Sheddable` calls refused in the run
//! and the longest wait of a `Critical` call. Everything is printed as
//! markdown; with `BULKHEAD_CONTENTION_CSV=path` the points are also
//! written as CSV for `benches/contention_plot.py`.
//!
//! Run with `cargo bench --bench contention` (about 3 minutes). Arguments
//! select points: a flavor (`sync`, `async`) keeps only its points, and
//! case names keep only those cases, a prefix before `_` naming all its
//! cases (`priority`, `keyed`): `cargo bench --bench contention -- sync
//! saturated` runs only sync `saturated`, `-- keyed priority_saturated`
//! the three keyed cases and `priority_saturated`, both flavors.

use std::fmt::Write as _;
use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Condvar, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::{Duration, Instant};

use bulkhead::{Bulkhead, BulkheadConfig, KeyedBulkhead, Priority, ShedAt, priority};
use dashmap::DashMap;
use dashmap::mapref::one::Ref;
use tokio::sync::Semaphore;

const THREADS: [usize; 5] = [1, 2, 4, 8, 16];
const RUN: Duration = Duration::from_millis(250);
const ROUNDS: usize = 3;
/// How long a `saturated` caller holds the slot (busy work), and how long
/// a shed `priority_saturated` caller spends on its refusal.
const HOLD: Duration = Duration::from_micros(1);
/// Long enough that no `saturated` caller times out.
const MAX_WAIT: Duration = Duration::from_secs(10);
/// Slots of a semaphore (and limit of a key) that always has room.
const ROOMY: u32 = 1 << 20;

/// Which loop.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Case {
    Free,
    Reject,
    Saturated,
    PriorityFree,
    PrioritySaturated,
    KeyedSameKey,
    KeyedOwnKey,
    KeyedRejected,
}

impl Case {
    const ALL: [Case; 8] = [
        Case::Free,
        Case::Reject,
        Case::Saturated,
        Case::PriorityFree,
        Case::PrioritySaturated,
        Case::KeyedSameKey,
        Case::KeyedOwnKey,
        Case::KeyedRejected,
    ];

    fn name(self) -> &'static str {
        match self {
            Case::Free => "free",
            Case::Reject => "reject",
            Case::Saturated => "saturated",
            Case::PriorityFree => "priority_free",
            Case::PrioritySaturated => "priority_saturated",
            Case::KeyedSameKey => "keyed_same_key",
            Case::KeyedOwnKey => "keyed_own_key",
            Case::KeyedRejected => "keyed_rejected",
        }
    }

    /// Slots of the semaphore (in `reject`, one, held by the harness); of
    /// a keyed bulkhead, its `max_concurrent`.
    fn slots(self) -> u32 {
        match self {
            Case::Reject | Case::Saturated | Case::PrioritySaturated => 1,
            Case::Free
            | Case::PriorityFree
            | Case::KeyedSameKey
            | Case::KeyedOwnKey
            | Case::KeyedRejected => ROOMY,
        }
    }

    /// A keyed case's `per_key` (in `keyed_rejected`, one, held by the
    /// harness).
    fn per_key(self) -> u32 {
        if self == Case::KeyedRejected {
            1
        } else {
            ROOMY
        }
    }

    /// Whether its callers wait for a slot (else `max_wait` is zero).
    fn waits(self) -> bool {
        matches!(self, Case::Saturated | Case::PrioritySaturated)
    }

    fn is_priority(self) -> bool {
        matches!(self, Case::PriorityFree | Case::PrioritySaturated)
    }

    /// The class of thread (task) `thread` in a priority case.
    fn class(thread: usize) -> Priority {
        if thread.is_multiple_of(2) {
            Priority::Critical
        } else {
            Priority::Sheddable
        }
    }

    /// The key of thread (task) `thread` in a keyed case.
    fn key(self, thread: usize) -> u64 {
        if self == Case::KeyedOwnKey {
            thread as u64
        } else {
            0
        }
    }

    /// Whether the points of this case are selected by the arguments
    /// `only` (see the module's docs) in `flavor`.
    fn selected(self, flavor: &str, only: &[String]) -> bool {
        let is_flavor = |o: &String| o == "sync" || o == "async";
        let flavors: Vec<&String> = only.iter().filter(|o| is_flavor(o)).collect();
        let cases: Vec<&String> = only.iter().filter(|o| !is_flavor(o)).collect();
        let name = self.name();
        (flavors.is_empty() || flavors.iter().any(|f| *f == flavor))
            && (cases.is_empty()
                || cases.iter().any(|c| {
                    name == c.as_str()
                        || name
                            .strip_prefix(c.as_str())
                            .is_some_and(|rest| rest.starts_with('_'))
                }))
    }
}

/// A semaphore taking part, sync.
trait SyncSemaphore: Sync {
    /// Takes a free slot without waiting and gives it back at once.
    fn try_cycle(&self) -> bool;
    /// Waits for a slot, runs `hold`, gives it back.
    fn wait_cycle(&self, hold: impl FnOnce(), waker: &Waker) -> bool;
    /// A `Sheddable` call of `priority_saturated`: takes the slot if it
    /// may, runs `hold` and gives it back; false if refused.
    fn shed_cycle(&self, hold: impl FnOnce()) -> bool;
    /// Takes a slot and keeps it until the guard drops (`reject`).
    fn hold_one(&self) -> Box<dyn Sync + '_>;
}

fn bulkhead(case: Case) -> Bulkhead {
    let max_wait = if case.waits() {
        MAX_WAIT
    } else {
        Duration::ZERO
    };
    let mut builder = BulkheadConfig::builder()
        .max_concurrent(case.slots())
        .max_wait(max_wait);
    if case.is_priority() {
        // The defaults, named: `Sheddable` may take half the slots (and
        // never waits), `Critical` all of them.
        builder = builder.shed_at(ShedAt::DEFAULT);
    }
    Bulkhead::new(
        "contention",
        builder.build().expect("a valid configuration"),
    )
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

    fn shed_cycle(&self, hold: impl FnOnce()) -> bool {
        // `enter`, as a `Critical` call: the bulkhead itself refuses a
        // `Sheddable` call rather than let it wait.
        self.wait_cycle(hold, Waker::noop())
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

    fn shed_cycle(&self, hold: impl FnOnce()) -> bool {
        match self.try_acquire() {
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

    fn shed_cycle(&self, hold: impl FnOnce()) -> bool {
        let mut free = self.free.lock().unwrap();
        if *free == 0 {
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

/// A keyed semaphore taking part, sync.
trait SyncKeyed: Sync {
    /// Takes a slot of `key` without waiting and gives it back at once.
    fn try_cycle(&self, key: u64) -> bool;
    /// Takes a slot of `key` and keeps it until the guard drops
    /// (`keyed_rejected`).
    fn hold_one(&self, key: u64) -> Box<dyn Send + '_>;
}

fn keyed(case: Case) -> KeyedBulkhead<u64> {
    let config = BulkheadConfig::builder()
        .max_concurrent(case.slots())
        .per_key(case.per_key())
        .max_wait(Duration::ZERO)
        .build()
        .expect("a valid configuration");
    KeyedBulkhead::new("contention", config)
}

impl SyncKeyed for KeyedBulkhead<u64> {
    fn try_cycle(&self, key: u64) -> bool {
        self.try_enter(&key).is_ok()
    }

    fn hold_one(&self, key: u64) -> Box<dyn Send + '_> {
        Box::new(self.try_enter(&key).expect("a free slot"))
    }
}

/// The reference of the keyed cases: a tokio semaphore of `per_key`
/// permits per key in a `DashMap`, and optionally a global one.
struct SemaphoreMap {
    keys: DashMap<u64, Arc<Semaphore>>,
    per_key: usize,
    global: Option<Semaphore>,
}

impl SemaphoreMap {
    fn new(case: Case, global: bool) -> Self {
        SemaphoreMap {
            keys: DashMap::new(),
            per_key: case.per_key() as usize,
            global: global.then(|| Semaphore::new(case.slots() as usize)),
        }
    }

    /// `key`'s semaphore, under its shard's read lock (made the first
    /// time, under the write lock).
    fn semaphore(&self, key: u64) -> Ref<'_, u64, Arc<Semaphore>> {
        match self.keys.get(&key) {
            Some(semaphore) => semaphore,
            None => self
                .keys
                .entry(key)
                .or_insert_with(|| Arc::new(Semaphore::new(self.per_key)))
                .downgrade(),
        }
    }

    /// Takes a permit of `key` (and a global one), waiting for them if
    /// need be, then gives them back. Free permits are taken under the
    /// map shard's read lock, as in `try_cycle`; a wait holds an `Arc` of
    /// the key's semaphore instead, never the lock across an `.await` (a
    /// task waiting with the read lock held would block the thread of a
    /// task inserting a key in the same shard, and tokio's cooperative
    /// budget can make even a free `acquire()` wait).
    async fn acquire_cycle(&self, key: u64) -> bool {
        if self.try_cycle(key) {
            return true;
        }
        let semaphore = Arc::clone(&self.semaphore(key));
        let Ok(permit) = semaphore.acquire().await else {
            return false;
        };
        let global = match &self.global {
            Some(global) => match global.acquire().await {
                Ok(permit) => Some(permit),
                Err(_) => return false,
            },
            None => None,
        };
        drop((global, permit));
        true
    }
}

impl SyncKeyed for SemaphoreMap {
    fn try_cycle(&self, key: u64) -> bool {
        let semaphore = self.semaphore(key);
        let Ok(permit) = semaphore.try_acquire() else {
            return false;
        };
        let global = match &self.global {
            Some(global) => match global.try_acquire() {
                Ok(permit) => Some(permit),
                Err(_) => return false,
            },
            None => None,
        };
        drop((global, permit));
        true
    }

    fn hold_one(&self, key: u64) -> Box<dyn Send + '_> {
        let semaphore = Arc::clone(&self.semaphore(key));
        let permit = semaphore.try_acquire_owned().expect("a free permit");
        let global = self
            .global
            .as_ref()
            .map(|global| global.try_acquire().expect("a free permit"));
        Box::new((permit, global))
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
    /// Operations: tries in `free`, `reject` and the keyed cases, calls
    /// admitted in the saturated ones.
    ops: u64,
    /// Calls refused (`priority_saturated`: `Sheddable` calls shed).
    refused: u64,
    /// The longest wait for a slot (the saturated cases).
    longest_wait: Duration,
    /// Whether its calls are `Critical` (`priority_saturated`).
    critical: bool,
}

impl Tally {
    fn of(case: Case, thread: usize) -> Tally {
        Tally {
            critical: case.is_priority() && Case::class(thread) == Priority::Critical,
            ..Tally::default()
        }
    }
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

    /// The `Critical` threads' share of the operations.
    fn critical_share(&self) -> f64 {
        let total: u64 = self.tallies.iter().map(|t| t.ops).sum();
        let critical: u64 = self
            .tallies
            .iter()
            .filter(|t| t.critical)
            .map(|t| t.ops)
            .sum();
        if total == 0 {
            return 0.0;
        }
        critical as f64 / total as f64
    }

    /// Calls refused, all threads.
    fn refused(&self) -> u64 {
        self.tallies.iter().map(|t| t.refused).sum()
    }
}

/// One loop of a sync thread (number `thread`) until `stop`.
fn sync_loop<S: SyncSemaphore>(
    case: Case,
    semaphore: &S,
    thread: usize,
    spins: u64,
    stop: &AtomicBool,
) -> Tally {
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut tally = Tally::of(case, thread);
    while !stop.load(Ordering::Relaxed) {
        match case {
            Case::Free | Case::Reject | Case::PriorityFree => {
                black_box(semaphore.try_cycle());
            }
            Case::Saturated | Case::PrioritySaturated
                if case == Case::Saturated || tally.critical =>
            {
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
            Case::PrioritySaturated => {
                if !semaphore.shed_cycle(|| spin(spins)) {
                    // Its refusal's answer.
                    tally.refused += 1;
                    spin(spins);
                    continue;
                }
            }
            Case::Saturated | Case::KeyedSameKey | Case::KeyedOwnKey | Case::KeyedRejected => {
                unreachable!("{case:?} is not a plain semaphore's")
            }
        }
        tally.ops += 1;
    }
    tally
}

/// One loop of a sync thread (number `thread`) of a keyed case until `stop`.
fn keyed_loop<S: SyncKeyed>(case: Case, keyed: &S, thread: usize, stop: &AtomicBool) -> Tally {
    let key = case.key(thread);
    let mut tally = Tally::of(case, thread);
    while !stop.load(Ordering::Relaxed) {
        black_box(keyed.try_cycle(black_box(key)));
        tally.ops += 1;
    }
    tally
}

/// Runs `body(thread, stop)` on `threads` threads, started together, for
/// `RUN`.
fn run_threads(threads: usize, body: impl Fn(usize, &AtomicBool) -> Tally + Sync) -> Run {
    let stop = AtomicBool::new(false);
    let barrier = Barrier::new(threads + 1);
    thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|thread| {
                let (body, stop, barrier) = (&body, &stop, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    body(thread, stop)
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

/// A run of a plain semaphore; with `tagged`, each thread's loop runs in
/// its class (`priority::with`).
fn run_sync<S: SyncSemaphore>(
    case: Case,
    semaphore: &S,
    threads: usize,
    spins: u64,
    tagged: bool,
) -> Run {
    let _held = (case == Case::Reject).then(|| semaphore.hold_one());
    run_threads(threads, |thread, stop| {
        if tagged {
            priority::with(Case::class(thread), || {
                sync_loop(case, semaphore, thread, spins, stop)
            })
        } else {
            sync_loop(case, semaphore, thread, spins, stop)
        }
    })
}

fn run_sync_keyed<S: SyncKeyed>(case: Case, keyed: &S, threads: usize) -> Run {
    let _held = (case == Case::KeyedRejected).then(|| keyed.hold_one(0));
    run_threads(threads, |thread, stop| {
        keyed_loop(case, keyed, thread, stop)
    })
}

/// An async semaphore taking part.
#[derive(Clone)]
enum AsyncSemaphore {
    Ours(Bulkhead),
    Tokio(Arc<Semaphore>),
    Keyed(KeyedBulkhead<u64>),
    TokioMap(Arc<SemaphoreMap>),
}

impl AsyncSemaphore {
    /// One call of task `task`: true if it counts as an operation, false
    /// if as a refusal.
    async fn cycle(&self, case: Case, task: usize, spins: u64, tally: &mut Tally) -> bool {
        match (self, case) {
            (AsyncSemaphore::Ours(bulkhead), Case::Free | Case::Reject | Case::PriorityFree) => {
                black_box(bulkhead.enter_async().await.is_ok());
            }
            (AsyncSemaphore::Tokio(semaphore), Case::Free | Case::PriorityFree) => {
                black_box(semaphore.acquire().await.is_ok());
            }
            (AsyncSemaphore::Tokio(semaphore), Case::Reject) => {
                // tokio's `acquire` waits without a bound: its refusal is
                // `try_acquire`.
                black_box(semaphore.try_acquire().is_ok());
            }
            (AsyncSemaphore::Ours(bulkhead), Case::Saturated | Case::PrioritySaturated) => {
                let start = Instant::now();
                let permit = match bulkhead.enter_async().await {
                    Ok(permit) => permit,
                    Err(_) => {
                        assert!(!tally.critical, "no caller waits 10 s");
                        // A `Sheddable` call shed: its refusal's answer.
                        spin(spins);
                        return false;
                    }
                };
                if case == Case::Saturated || tally.critical {
                    tally.longest_wait = tally.longest_wait.max(start.elapsed());
                }
                spin(spins);
                drop(permit);
            }
            (AsyncSemaphore::Tokio(semaphore), Case::Saturated | Case::PrioritySaturated)
                if case == Case::Saturated || tally.critical =>
            {
                let start = Instant::now();
                let permit = semaphore.acquire().await.expect("never closed");
                tally.longest_wait = tally.longest_wait.max(start.elapsed());
                spin(spins);
                drop(permit);
            }
            (AsyncSemaphore::Tokio(semaphore), Case::PrioritySaturated) => {
                // A `Sheddable` call: never waits.
                let Ok(permit) = semaphore.try_acquire() else {
                    spin(spins);
                    return false;
                };
                spin(spins);
                drop(permit);
            }
            (
                AsyncSemaphore::Keyed(keyed),
                Case::KeyedSameKey | Case::KeyedOwnKey | Case::KeyedRejected,
            ) => {
                let key = black_box(case.key(task));
                black_box(keyed.enter_async(&key).await.is_ok());
            }
            (AsyncSemaphore::TokioMap(keys), Case::KeyedSameKey | Case::KeyedOwnKey) => {
                black_box(keys.acquire_cycle(black_box(case.key(task))).await);
            }
            (AsyncSemaphore::TokioMap(keys), Case::KeyedRejected) => {
                // As tokio's `reject`: the refusal is `try_acquire`.
                black_box(keys.try_cycle(black_box(case.key(task))));
            }
            (_, case) => unreachable!("{case:?} is not this semaphore's"),
        }
        true
    }

    /// Takes a slot and keeps it until the guard drops (`reject`,
    /// `keyed_rejected`).
    fn hold_one(&self) -> Box<dyn Send> {
        match self {
            AsyncSemaphore::Ours(bulkhead) => {
                Box::new(bulkhead.try_enter_owned().expect("a free slot"))
            }
            AsyncSemaphore::Tokio(semaphore) => Box::new(
                Arc::clone(semaphore)
                    .try_acquire_owned()
                    .expect("a free permit"),
            ),
            AsyncSemaphore::Keyed(keyed) => {
                Box::new(keyed.try_enter_owned(&0).expect("a free slot"))
            }
            AsyncSemaphore::TokioMap(keys) => {
                let semaphore = Arc::clone(&keys.semaphore(0));
                let permit = semaphore.try_acquire_owned().expect("a free permit");
                // The global semaphore is roomy: the key's permit is what
                // refuses.
                Box::new(permit)
            }
        }
    }
}

/// A run of `tasks` tasks; with `tagged`, each task runs in its class
/// (`priority::scope`).
fn run_async(
    case: Case,
    semaphore: &AsyncSemaphore,
    tasks: usize,
    spins: u64,
    tagged: bool,
) -> Run {
    let _held = matches!(case, Case::Reject | Case::KeyedRejected).then(|| semaphore.hold_one());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(tasks)
        .enable_time()
        .build()
        .expect("a runtime");
    let stop = Arc::new(AtomicBool::new(false));
    let barrier = Arc::new(tokio::sync::Barrier::new(tasks + 1));
    runtime.block_on(async {
        let workers: Vec<_> = (0..tasks)
            .map(|task| {
                let (semaphore, stop, barrier) =
                    (semaphore.clone(), Arc::clone(&stop), Arc::clone(&barrier));
                let work = async move {
                    barrier.wait().await;
                    let mut tally = Tally::of(case, task);
                    while !stop.load(Ordering::Relaxed) {
                        if semaphore.cycle(case, task, spins, &mut tally).await {
                            tally.ops += 1;
                        } else {
                            tally.refused += 1;
                        }
                        // A loop that never waits would keep its worker
                        // from the runtime's other duties (and from the
                        // stop flag's waker, were there one): yield now
                        // and then, as a server's request loop would.
                        if (tally.ops + tally.refused).is_multiple_of(64) {
                            tokio::task::yield_now().await;
                        }
                    }
                    tally
                };
                if tagged {
                    tokio::spawn(priority::scope(Case::class(task), work))
                } else {
                    tokio::spawn(work)
                }
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

/// A contender of one point: its name and how to run it once.
type Contender<'a> = (&'static str, Box<dyn Fn() -> Run + 'a>);

/// `ROUNDS` runs of each contender, interleaved, and the median of each.
fn measure(
    flavor: &'static str,
    case: Case,
    threads: usize,
    contenders: Vec<Contender<'_>>,
) -> Vec<Point> {
    let mut runs: Vec<Vec<Run>> = contenders.iter().map(|_| Vec::new()).collect();
    for _ in 0..ROUNDS {
        for ((_, run), runs) in contenders.iter().zip(&mut runs) {
            runs.push(run());
        }
    }
    contenders
        .iter()
        .zip(runs)
        .map(|((semaphore, _), runs)| Point {
            flavor,
            case,
            semaphore,
            threads,
            run: median_run(runs),
        })
        .collect()
}

fn sync_points(case: Case, threads: usize, spins: u64) -> Vec<Point> {
    let slots = case.slots();
    let tokio = Semaphore::new(slots as usize);
    let tokio = &tokio;
    let contenders: Vec<Contender<'_>> = match case {
        Case::Free | Case::Reject | Case::Saturated => {
            let ours = bulkhead(case);
            let fifo = bulkhead(case);
            fifo.set_barging(0);
            let condvar = CondvarSemaphore::new(slots);
            let mut contenders: Vec<Contender<'_>> = vec![(
                "ours",
                Box::new(move || run_sync(case, &ours, threads, spins, false)),
            )];
            if case == Case::Saturated {
                contenders.push((
                    "ours_fifo",
                    Box::new(move || run_sync(case, &fifo, threads, spins, false)),
                ));
            }
            contenders.push((
                "tokio",
                Box::new(move || run_sync(case, tokio, threads, spins, false)),
            ));
            contenders.push((
                "mutex_condvar",
                Box::new(move || run_sync(case, &condvar, threads, spins, false)),
            ));
            contenders
        }
        Case::PriorityFree | Case::PrioritySaturated => {
            let ours = bulkhead(case);
            let untagged = ours.clone();
            let mut contenders: Vec<Contender<'_>> = vec![(
                "ours",
                Box::new(move || run_sync(case, &ours, threads, spins, true)),
            )];
            if case == Case::PriorityFree {
                // The same bulkhead, no class set: the plain path.
                contenders.push((
                    "ours_untagged",
                    Box::new(move || run_sync(case, &untagged, threads, spins, false)),
                ));
            }
            contenders.push((
                "tokio",
                Box::new(move || run_sync(case, tokio, threads, spins, false)),
            ));
            contenders
        }
        Case::KeyedSameKey | Case::KeyedOwnKey | Case::KeyedRejected => {
            let ours = keyed(case);
            let map = SemaphoreMap::new(case, false);
            let map_global = SemaphoreMap::new(case, true);
            vec![
                (
                    "ours",
                    Box::new(move || run_sync_keyed(case, &ours, threads)),
                ),
                (
                    "tokio_dashmap",
                    Box::new(move || run_sync_keyed(case, &map, threads)),
                ),
                (
                    "tokio_dashmap_global",
                    Box::new(move || run_sync_keyed(case, &map_global, threads)),
                ),
            ]
        }
    };
    measure("sync", case, threads, contenders)
}

fn async_points(case: Case, tasks: usize, spins: u64) -> Vec<Point> {
    let slots = case.slots() as usize;
    let run = move |semaphore: AsyncSemaphore, tagged: bool| -> Box<dyn Fn() -> Run> {
        Box::new(move || run_async(case, &semaphore, tasks, spins, tagged))
    };
    let tokio = || AsyncSemaphore::Tokio(Arc::new(Semaphore::new(slots)));
    let contenders: Vec<Contender<'_>> = match case {
        Case::Free | Case::Reject | Case::Saturated => vec![
            ("ours", run(AsyncSemaphore::Ours(bulkhead(case)), false)),
            ("tokio", run(tokio(), false)),
        ],
        Case::PriorityFree => {
            let ours = bulkhead(case);
            vec![
                ("ours", run(AsyncSemaphore::Ours(ours.clone()), true)),
                ("ours_untagged", run(AsyncSemaphore::Ours(ours), false)),
                ("tokio", run(tokio(), false)),
            ]
        }
        Case::PrioritySaturated => vec![
            ("ours", run(AsyncSemaphore::Ours(bulkhead(case)), true)),
            ("tokio", run(tokio(), false)),
        ],
        Case::KeyedSameKey | Case::KeyedOwnKey | Case::KeyedRejected => {
            let map = |global| AsyncSemaphore::TokioMap(Arc::new(SemaphoreMap::new(case, global)));
            vec![
                ("ours", run(AsyncSemaphore::Keyed(keyed(case)), false)),
                ("tokio_dashmap", run(map(false), false)),
                ("tokio_dashmap_global", run(map(true), false)),
            ]
        }
    };
    measure("async", case, tasks, contenders)
}

fn main() {
    // `cargo bench` passes `--bench`; other arguments select points.
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let spins = calibrate();
    let mut points = Vec::new();
    for case in Case::ALL.into_iter().filter(|c| c.selected("sync", &only)) {
        eprintln!("sync {}", case.name());
        for threads in THREADS {
            points.extend(sync_points(case, threads, spins));
        }
    }
    for case in Case::ALL.into_iter().filter(|c| c.selected("async", &only)) {
        eprintln!("async {}", case.name());
        for tasks in THREADS {
            points.extend(async_points(case, tasks, spins));
        }
    }

    print!("{}", report(&points, spins));
    if let Ok(path) = std::env::var("BULKHEAD_CONTENTION_CSV") {
        // A relative path is the workspace's (cargo runs a bench in its
        // package's directory, `extras/`).
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(path);
        std::fs::write(&path, csv(&points)).expect("the CSV is writable");
        eprintln!("wrote {}", path.display());
    }
}

fn report(points: &[Point], spins: u64) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Median of {ROUNDS} runs of {RUN:?} per point; hold in `saturated` and \
         `priority_saturated`: {spins} spins (about {HOLD:?}).\n"
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
                match case {
                    Case::Saturated => {
                        let _ = write!(header, " {s}: least share | {s}: longest wait |");
                        rule.push_str("---:|---:|");
                    }
                    Case::PrioritySaturated => {
                        let _ = write!(
                            header,
                            " {s}: Critical share | {s}: shed | {s}: longest Critical wait |"
                        );
                        rule.push_str("---:|---:|---:|");
                    }
                    _ => {}
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
                            match case {
                                Case::Saturated => {
                                    let _ = write!(
                                        row,
                                        " {:.2} | {:.2?} |",
                                        p.run.fairness(),
                                        p.run.longest_wait()
                                    );
                                }
                                Case::PrioritySaturated => {
                                    let _ = write!(
                                        row,
                                        " {:.3} | {} | {:.2?} |",
                                        p.run.critical_share(),
                                        p.run.refused(),
                                        p.run.longest_wait()
                                    );
                                }
                                _ => {}
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
        "flavor,case,semaphore,threads,ops_per_sec,cpus,least_share,longest_wait_us,\
         critical_share,shed_per_sec\n",
    );
    for p in points {
        // Only `priority_saturated` has classes that share a slot.
        let (critical_share, shed_per_sec) = if p.case == Case::PrioritySaturated {
            (
                format!("{:.3}", p.run.critical_share()),
                format!(
                    "{:.0}",
                    p.run.refused() as f64 / p.run.elapsed.as_secs_f64()
                ),
            )
        } else {
            (String::new(), String::new())
        };
        let _ = writeln!(
            out,
            "{},{},{},{},{:.0},{:.2},{:.3},{:.1},{},{}",
            p.flavor,
            p.case.name(),
            p.semaphore,
            p.threads,
            p.run.throughput(),
            p.run.cpus(),
            p.run.fairness(),
            p.run.longest_wait().as_secs_f64() * 1e6,
            critical_share,
            shed_per_sec
        );
    }
    out
}
