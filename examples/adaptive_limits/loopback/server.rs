//! The simulated dependency on a real socket: a TCP server on 127.0.0.1
//! that serves each call as `simulate.rs` does, by processor sharing with
//! capacity `C` on real time.
//!
//! The wire is one 8-byte little-endian word each way: a request is the
//! call's work in nanoseconds (of service at full speed; the client draws
//! it, as the simulation does, so both see the same work), the answer the
//! nanoseconds the server held the call (from reading the request to
//! answering it). A connection carries one call at a time.
//!
//! Processor sharing ([`Sharing`]) keeps the simulation's virtual time:
//! with `n` calls in service each progresses at `min(1, C / n)` of full
//! speed, so the virtual time (the service a call has had since the start)
//! grows at that rate, and a call is done when it has grown by its work.
//! The scheduler task is event-driven, not ticking: it sleeps until the
//! next call is due or a new one arrives, and advances the virtual time
//! exactly, departure by departure, whenever it wakes. A late wake-up
//! (tokio's timer has a 1 ms resolution) delays an answer but does not
//! change what any other call is served.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io;
use std::net::SocketAddr;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};

/// Calls within this much work (seconds) of their end count as done: the
/// virtual time is rebuilt from nanosecond instants.
const DONE_WITHIN: f64 = 1e-6;

/// Processor sharing on a timeline of `Instant`s: calls with their work,
/// each holding a `T` handed back when it is done.
pub(crate) struct Sharing<T> {
    capacity: f64,
    /// The service one call has had at full speed since the start, in s.
    virtual_time: f64,
    /// The instant `virtual_time` is at.
    at: Instant,
    /// Calls in service: the virtual time they end at (its bits: positive
    /// floats order as their bits do), and their id.
    ends: BinaryHeap<Reverse<(u64, u64)>>,
    held: HashMap<u64, T>,
    next_id: u64,
    /// Calls found done while adding one, not yet handed back.
    finished: Vec<T>,
}

impl<T> Sharing<T> {
    pub(crate) fn new(capacity: f64, now: Instant) -> Self {
        Sharing {
            capacity,
            virtual_time: 0.0,
            at: now,
            ends: BinaryHeap::new(),
            held: HashMap::new(),
            next_id: 0,
            finished: Vec::new(),
        }
    }

    /// The share of full speed each call is served at.
    fn speed(&self) -> f64 {
        let n = self.ends.len() as f64;
        if n > self.capacity {
            self.capacity / n
        } else {
            1.0
        }
    }

    /// Moves the virtual time to `now` (no call leaves meanwhile: see
    /// [`done`](Self::done)).
    fn advance(&mut self, now: Instant) {
        if now > self.at {
            self.virtual_time += (now - self.at).as_secs_f64() * self.speed();
            self.at = now;
        }
    }

    /// A call of `work` seconds arrives at `now` (the calls due by then
    /// leave first; [`done`](Self::done) hands them back).
    pub(crate) fn add(&mut self, now: Instant, work: f64, what: T) {
        let mut finished = std::mem::take(&mut self.finished);
        self.done_by(now, &mut finished);
        self.finished = finished;
        self.next_id += 1;
        let end = self.virtual_time + work.max(0.0);
        self.ends.push(Reverse((end.to_bits(), self.next_id)));
        self.held.insert(self.next_id, what);
    }

    /// When the next call is due, if any is in service.
    pub(crate) fn next(&self) -> Option<Instant> {
        let Reverse((end, _)) = self.ends.peek()?;
        let left = (f64::from_bits(*end) - self.virtual_time).max(0.0);
        Some(self.at + Duration::from_secs_f64(left / self.speed()))
    }

    /// The calls done by `now`, in the order they ended; the virtual time
    /// is advanced departure by departure, each at the speed of its time.
    pub(crate) fn done(&mut self, now: Instant) -> Vec<T> {
        let mut done = std::mem::take(&mut self.finished);
        self.done_by(now, &mut done);
        done
    }

    fn done_by(&mut self, now: Instant, done: &mut Vec<T>) {
        while let Some(due) = self.next().filter(|due| *due <= now) {
            self.advance(due);
            // The first is due; others may end within rounding of it.
            let mut first = true;
            while let Some(Reverse((end, id))) = self.ends.peek().copied() {
                if !first && f64::from_bits(end) > self.virtual_time + DONE_WITHIN {
                    break;
                }
                first = false;
                self.ends.pop();
                done.extend(self.held.remove(&id));
            }
        }
        self.advance(now);
    }
}

/// A call handed to the scheduler: its work, and where to say it is done.
struct Job {
    work: f64,
    done: oneshot::Sender<()>,
}

/// The server, on a thread of its own (its own single-threaded runtime,
/// as another process would be); stopped when dropped.
pub(crate) struct Server {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Listens on 127.0.0.1 (a free port) and serves with `capacity`.
    pub(crate) fn start(capacity: f64) -> io::Result<Server> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("loopback-server".to_owned())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("the server's runtime");
                runtime.block_on(serve(listener, capacity, stopped));
            })?;
        Ok(Server {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Its runtime drops the connections' and the scheduler's tasks.
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn serve(listener: std::net::TcpListener, capacity: f64, stopped: oneshot::Receiver<()>) {
    let listener = TcpListener::from_std(listener).expect("a listener on the runtime");
    let (jobs, queue) = mpsc::unbounded_channel();
    tokio::spawn(schedule(queue, capacity));
    let accept = async {
        while let Ok((stream, _)) = listener.accept().await {
            let _ = stream.set_nodelay(true);
            tokio::spawn(connection(stream, jobs.clone()));
        }
    };
    tokio::select! {
        _ = stopped => {}
        () = accept => {}
    }
}

/// One connection: a call at a time, answered when the scheduler says.
async fn connection(stream: TcpStream, jobs: mpsc::UnboundedSender<Job>) {
    while let Ok(work) = read_word(&stream).await {
        let received = Instant::now();
        let (done, answer) = oneshot::channel();
        let work = Duration::from_nanos(work).as_secs_f64();
        if jobs.send(Job { work, done }).is_err() || answer.await.is_err() {
            return;
        }
        let held = u64::try_from(received.elapsed().as_nanos()).unwrap_or(u64::MAX);
        if write_word(&stream, held).await.is_err() {
            return;
        }
    }
}

/// The scheduler: sleeps until the next call is due or one arrives.
async fn schedule(mut queue: mpsc::UnboundedReceiver<Job>, capacity: f64) {
    let mut sharing = Sharing::new(capacity, Instant::now());
    loop {
        let due = sharing.next();
        let wait = async {
            match due {
                Some(due) => tokio::time::sleep_until(due.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            job = queue.recv() => match job {
                Some(Job { work, done }) => sharing.add(Instant::now(), work, done),
                None => return,
            },
            () = wait => {}
        }
        for done in sharing.done(Instant::now()) {
            let _ = done.send(());
        }
    }
}

/// Reads one word (the stream is non-blocking: no `io-util` needed).
pub(crate) async fn read_word(stream: &TcpStream) -> io::Result<u64> {
    let mut word = [0u8; 8];
    let mut read = 0;
    while read < word.len() {
        stream.readable().await?;
        match stream.try_read(&mut word[read..]) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => read += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(u64::from_le_bytes(word))
}

/// Writes one word.
pub(crate) async fn write_word(stream: &TcpStream, value: u64) -> io::Result<()> {
    let word = value.to_le_bytes();
    let mut written = 0;
    while written < word.len() {
        stream.writable().await?;
        match stream.try_write(&word[written..]) {
            Ok(n) => written += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
