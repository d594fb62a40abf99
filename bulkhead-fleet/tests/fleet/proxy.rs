//! A loopback TCP proxy to put between one worker and Redis: it forwards
//! both ways, can delay what the client sends (a slow network), can stall
//! (hold everything, then deliver it late) and can be cut (a partition)
//! and healed.
//!
//! A cut is a black hole, not a reset: connections stay open and what
//! either side sends is dropped, so the client sees timeouts, as on a
//! real partition; new connections are accepted and go nowhere. Healing
//! closes the connections the cut broke (their streams lost bytes) and
//! forwards new ones again.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::Ordering::*;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(crate) struct Proxy {
    pub(crate) port: u16,
    state: Arc<State>,
}

#[derive(Default)]
struct State {
    cut: AtomicBool,
    /// Holds what either side sends until released.
    stalled: AtomicBool,
    /// Added to everything the client sends, in ms.
    latency_ms: AtomicU64,
    stop: AtomicBool,
    connections: Mutex<Vec<Arc<Connection>>>,
}

struct Connection {
    client: TcpStream,
    upstream: Option<TcpStream>,
    /// Lost bytes to a cut: closed when the proxy heals.
    broken: AtomicBool,
}

impl Connection {
    fn close(&self) {
        let _ = self.client.shutdown(Shutdown::Both);
        if let Some(upstream) = &self.upstream {
            let _ = upstream.shutdown(Shutdown::Both);
        }
    }
}

impl Proxy {
    /// Forwards a free loopback port to `upstream_port`.
    pub(crate) fn start(upstream_port: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let state = Arc::new(State::default());
        let shared = state.clone();
        std::thread::spawn(move || accept(&listener, upstream_port, &shared));
        Proxy { port, state }
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Drops everything from now on, both ways, until [`heal`](Self::heal).
    pub(crate) fn cut(&self) {
        self.state.cut.store(true, Release);
    }

    /// Forwards again; connections the cut broke are closed.
    pub(crate) fn heal(&self) {
        self.state.cut.store(false, Release);
        let mut connections = self.state.connections.lock().unwrap();
        connections.retain(|c| {
            let broken = c.broken.load(Acquire);
            if broken {
                c.close();
            }
            !broken
        });
    }

    /// Holds what either side sends from now on, connections left open,
    /// until [`release`](Self::release).
    pub(crate) fn stall(&self) {
        self.state.stalled.store(true, Release);
    }

    /// Delivers what the stall held, in order, and forwards again.
    pub(crate) fn release(&self) {
        self.state.stalled.store(false, Release);
    }

    /// Delays what clients send by `latency` from now on.
    pub(crate) fn set_latency(&self, latency: Duration) {
        let ms = u64::try_from(latency.as_millis()).unwrap();
        self.state.latency_ms.store(ms, Release);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.state.stop.store(true, Release);
        for connection in self.state.connections.lock().unwrap().drain(..) {
            connection.close();
        }
    }
}

fn accept(listener: &TcpListener, upstream_port: u16, state: &Arc<State>) {
    while !state.stop.load(Acquire) {
        let Ok((client, _)) = listener.accept() else {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        };
        let _ = client.set_nonblocking(false);
        let _ = client.set_nodelay(true);
        let cut = state.cut.load(Acquire);
        // Cut: accepted, and goes nowhere.
        let upstream = if cut {
            None
        } else {
            TcpStream::connect(("127.0.0.1", upstream_port)).ok()
        };
        let connection = Arc::new(Connection {
            client,
            upstream,
            broken: AtomicBool::new(cut),
        });
        state.connections.lock().unwrap().push(connection.clone());
        let Some(upstream) = &connection.upstream else {
            continue;
        };
        let _ = upstream.set_nodelay(true);
        let pairs = [
            (connection.client.try_clone(), upstream.try_clone(), true),
            (upstream.try_clone(), connection.client.try_clone(), false),
        ];
        for (from, to, delayed) in pairs {
            let (Ok(from), Ok(to)) = (from, to) else {
                continue;
            };
            let (state, connection) = (state.clone(), connection.clone());
            std::thread::spawn(move || pump(from, to, delayed, &state, &connection));
        }
    }
}

/// Forwards `from` to `to` (delayed when `delayed`), dropping what comes
/// during a cut; ends when either side closes.
fn pump(
    mut from: TcpStream,
    mut to: TcpStream,
    delayed: bool,
    state: &State,
    connection: &Connection,
) {
    let (sender, receiver) = mpsc::channel::<(Instant, Vec<u8>)>();
    let writer = std::thread::spawn(move || {
        for (due, bytes) in receiver {
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
            if to.write_all(&bytes).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
    let _ = from.set_read_timeout(Some(Duration::from_millis(20)));
    let mut buf = [0u8; 16 * 1024];
    let mut held: Vec<u8> = Vec::new();
    while !state.stop.load(Acquire) {
        if !held.is_empty() && !state.stalled.load(Acquire) {
            let bytes = std::mem::take(&mut held);
            if sender.send((Instant::now(), bytes)).is_err() {
                break;
            }
        }
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if state.cut.load(Acquire) || connection.broken.load(Acquire) {
                    connection.broken.store(true, Release);
                    continue;
                }
                if state.stalled.load(Acquire) || !held.is_empty() {
                    held.extend_from_slice(&buf[..n]);
                    continue;
                }
                let latency = if delayed {
                    Duration::from_millis(state.latency_ms.load(Acquire))
                } else {
                    Duration::ZERO
                };
                if sender
                    .send((Instant::now() + latency, buf[..n].to_vec()))
                    .is_err()
                {
                    break;
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
    }
    drop(sender);
    let _ = writer.join();
}
