//! The loopback's processor sharing (exactly, on made-up instants), its
//! draws against the simulation's, and short runs on real sockets that
//! check only what no load can break: nothing is served faster than its
//! work, no work is lost, every arrival is counted once.

use std::time::{Duration, Instant};

use bulkhead::Adaptive;
use tokio::net::TcpStream;

use super::client::{self, arrivals};
use super::server::{Server, Sharing, read_word, write_word};
use super::{Figures, GOODPUT_POINTS, agree, fit};
use crate::limiters::{Kind, Limiter};
use crate::simulate::simulate_with;
use crate::{DEFAULT_MODEL, MODEL, Model, TRACE_NS, selected};

fn seconds(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// The calls `sharing` hands back by `t0 + at`, and when.
fn ends(sharing: &mut Sharing<char>, t0: Instant) -> Vec<(char, f64)> {
    let mut ends = Vec::new();
    while let Some(due) = sharing.next() {
        for call in sharing.done(due) {
            ends.push((call, (due - t0).as_secs_f64()));
        }
    }
    ends
}

fn close(ends: &[(char, f64)], expected: &[(char, f64)]) -> bool {
    ends.len() == expected.len()
        && ends
            .iter()
            .zip(expected)
            .all(|((a, x), (b, y))| a == b && (x - y).abs() < 1e-6)
}

#[test]
fn one_call_alone_takes_its_work_and_n_above_c_take_n_over_c_longer() {
    let t0 = Instant::now();
    let mut alone = Sharing::new(2.0, t0);
    alone.add(t0, 0.1, 'a');
    assert!(close(&ends(&mut alone, t0), &[('a', 0.1)]));

    // 6 calls of 0.1 s at capacity 2: each at a third of full speed.
    let mut six = Sharing::new(2.0, t0);
    for call in ['a', 'b', 'c', 'd', 'e', 'f'] {
        six.add(t0, 0.1, call);
    }
    let done = ends(&mut six, t0);
    assert_eq!(done.len(), 6);
    assert!(
        done.iter().all(|(_, at)| (at - 0.3).abs() < 1e-6),
        "{done:?}"
    );

    // Within the capacity, nobody waits for anybody.
    let mut two = Sharing::new(2.0, t0);
    two.add(t0, 0.1, 'a');
    two.add(t0, 0.3, 'b');
    assert!(close(&ends(&mut two, t0), &[('a', 0.1), ('b', 0.3)]));
}

#[test]
fn a_late_call_gets_its_share_from_when_it_arrives() {
    // Capacity 1: `a` alone for 0.5 s, then `a` and `b` at half speed each:
    // `a`'s last 0.5 s take 1 s; then `b`'s last 0.5 s alone.
    let t0 = Instant::now();
    let mut sharing = Sharing::new(1.0, t0);
    sharing.add(t0, 1.0, 'a');
    sharing.add(t0 + seconds(0.5), 1.0, 'b');
    assert!(close(&ends(&mut sharing, t0), &[('a', 1.5), ('b', 2.0)]));
    // Calls that ended before an arrival are handed back, at their time.
    let mut sharing = Sharing::new(1.0, t0);
    sharing.add(t0, 0.1, 'a');
    sharing.add(t0 + seconds(0.3), 0.1, 'b');
    assert_eq!(sharing.done(t0 + seconds(0.3)), ['a']);
    assert!(close(&ends(&mut sharing, t0), &[('b', 0.4)]));
}

#[test]
fn the_loopback_draws_the_simulation_s_arrivals_and_work() {
    MODEL.set(Model {
        c: 5.0,
        ..DEFAULT_MODEL
    });
    for name in ["lognormal-0.5", "slow3x"] {
        let scenario = fit(selected(true, &[name], None).remove(0), 30);
        let plan = arrivals(&scenario);
        // A static limit at C: no call is ever slowed by another, so each
        // one's latency is its work; those rejected still draw theirs.
        let run = simulate_with(&scenario, Kind::Static, Limiter::fixed(5));
        assert_eq!(run.arrivals, plan.len() as u64, "{name}");
        assert!(run.rejected > 0, "{name}: some arrivals draw work unused");
        // In the order the calls started (they end in another).
        let mut done = run.done.clone();
        done.sort_by_key(|d| d.start);
        let mut next = plan.iter();
        for done in &done {
            let arrival = next
                .find(|a| a.at == done.start)
                .unwrap_or_else(|| panic!("{name}: no arrival at {}", done.start));
            let ratio = (arrival.work / arrival.base) as f32;
            assert!(
                (done.ratio / ratio - 1.0).abs() < 1e-5,
                "{name}: {} against {ratio}",
                done.ratio
            );
        }
        assert!(run.done.len() + run.rejected as usize + 5 >= plan.len());
    }
}

#[test]
fn the_server_serves_one_call_its_work_and_shares_itself_above_c() {
    let server = Server::start(2.0).expect("a server");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let addr = server.addr();
    let call = move |work: Duration| async move {
        let sent = Instant::now();
        let stream = TcpStream::connect(addr).await.expect("connected");
        write_word(&stream, work.as_nanos() as u64)
            .await
            .expect("sent");
        let held = Duration::from_nanos(read_word(&stream).await.expect("answered"));
        (held, sent.elapsed())
    };
    let work = Duration::from_millis(100);
    runtime.block_on(async {
        let (held, latency) = call(work).await;
        assert!(held >= work && latency >= held, "{held:?}, {latency:?}");
        // Generous: a loaded machine may be late, never early.
        assert!(latency < 10 * work, "{latency:?}");

        // 6 calls at capacity 2: 600 ms of work, 200 ms per call's worth of
        // time at most, so the last is answered 300 ms after all arrive
        // at the earliest; each is held longer than its work.
        let started = Instant::now();
        let calls: Vec<_> = (0..6).map(|_| tokio::spawn(call(work))).collect();
        let mut held = Vec::new();
        for call in calls {
            held.push(call.await.expect("a call").0);
        }
        let all = started.elapsed();
        assert!(held.iter().all(|h| *h >= work), "{held:?}");
        assert!(all >= 3 * work && all < 30 * work, "{all:?}");
        let longest = held.iter().max().expect("six calls");
        assert!(*longest >= 3 * work - Duration::from_millis(50), "{held:?}");
    });
}

#[test]
fn a_short_loopback_run_accounts_for_every_arrival() {
    MODEL.set(Model {
        c: 5.0,
        ..DEFAULT_MODEL
    });
    let scenario = fit(selected(true, &["lognormal-0.5"], None).remove(0), 2);
    let plan = arrivals(&scenario);
    let server = Server::start(5.0).expect("a server");
    let kind = Kind::Ours(Adaptive::Gradient2);
    let end = 2_000_000_000;
    let loopback =
        client::run(kind, &plan, end, client::bulkhead(kind), server.addr()).expect("a run");
    let run = &loopback.run;
    assert_eq!(run.arrivals, plan.len() as u64);
    assert_eq!(loopback.errors, 0);
    assert_eq!(loopback.admitted() + run.rejected, run.arrivals);
    assert!(loopback.admitted() > 0);
    assert!(run.done.len() <= loopback.calls.len());
    assert_eq!(run.rows.len() as u64, end / TRACE_NS);
    assert!(run.rows.iter().all(|r| r.limit >= 1 && r.limit <= 20));
    for call in &loopback.calls {
        // Never served faster than its work at full speed.
        assert!(call.held >= call.work - 1e-6, "{call:?}");
        assert!(call.latency >= call.held, "{call:?}");
    }
    // The comparison reads it as it reads the simulation's.
    let figures = Figures::of(&scenario, run);
    assert_eq!(figures.settled.len(), 1);
    assert!((0.0..=100.0).contains(&figures.goodput));
    let shifted = Figures {
        goodput: figures.goodput + GOODPUT_POINTS + 0.1,
        ..figures.clone()
    };
    assert_eq!(agree(&figures, &figures), (true, true));
    assert_eq!(agree(&figures, &shifted), (true, false));
}
