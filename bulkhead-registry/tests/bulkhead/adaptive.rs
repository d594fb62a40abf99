//! Adaptive limits through the registry (the adaptive guide): the keys in
//! code and configuration with their coded errors, the snapshot, how sync
//! and async calls report how they ended, budgets that bound the limits in
//! force, manual limits and reloads that move the ceiling, and threads
//! that never find more calls in flight than the limit in force.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bulkhead_core::{
    Adaptive, BulkheadConfig, BulkheadEventKind, CallError, ManualClock, OwnedBulkheadPermit,
    Rejection, adaptive::Sampling,
};
use bulkhead_registry::{Pipeline, Registry};

pub(super) const MS: Duration = Duration::from_millis(1);

pub(super) fn quick() -> Sampling {
    Sampling::builder().min_samples(4).build().unwrap()
}

pub(super) fn adaptive(
    adaptive: Adaptive,
    (min, initial, max): (u32, u32, u32),
) -> bulkhead_core::BulkheadConfigBuilder {
    BulkheadConfig::builder()
        .max_concurrent(max)
        .min_concurrent(min)
        .initial_concurrent(initial)
        .adaptive(adaptive)
        .sampling(quick())
}

pub(super) fn manual() -> (ManualClock, Registry) {
    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    (clock, registry)
}

/// Keeps every slot of each bulkhead taken: each round the calls in flight
/// end after `hold` and are replaced at once.
pub(super) struct Load {
    clock: ManualClock,
    bulkheads: Vec<bulkhead_core::Bulkhead>,
    held: Vec<Vec<OwnedBulkheadPermit>>,
}

impl Load {
    pub(super) fn new(clock: &ManualClock, bulkheads: Vec<bulkhead_core::Bulkhead>) -> Self {
        let held = bulkheads.iter().map(|_| Vec::new()).collect();
        Load {
            clock: clock.clone(),
            bulkheads,
            held,
        }
    }

    pub(super) fn round(&mut self, hold: Duration) {
        self.clock.advance(hold);
        for (bulkhead, held) in self.bulkheads.iter().zip(&mut self.held) {
            let n = held.len();
            held.clear();
            for _ in 0..n {
                if let Ok(permit) = bulkhead.try_enter_owned() {
                    held.push(permit);
                }
            }
            while let Ok(permit) = bulkhead.try_enter_owned() {
                held.push(permit);
            }
        }
    }
}

#[test]
fn an_adaptive_bulkhead_starts_at_its_initial_limit_under_its_ceiling() {
    let registry = Registry::new();
    let search = Pipeline::builder(&registry, "search")
        .bulkhead(|b| b.max_concurrent(200).adaptive(Adaptive::Gradient2))
        .build()
        .unwrap();
    let handle = registry.bulkhead("search").unwrap();
    let snapshot = handle.snapshot();
    assert_eq!(snapshot.max_concurrent, 20, "min(20, max_concurrent)");
    assert_eq!(snapshot.available, 20);
    let adaptive = snapshot.adaptive.unwrap();
    assert_eq!(adaptive.algorithm, Adaptive::Gradient2);
    assert_eq!(
        (adaptive.floor, adaptive.ceiling, adaptive.limit),
        (1, 200, 20)
    );
    assert!(
        adaptive.probing,
        "the first window measures the no-load latency"
    );
    assert_eq!(
        (adaptive.no_load, adaptive.recent, adaptive.windows),
        (None, None, 0)
    );
    assert_eq!(
        search
            .policies()
            .bulkhead()
            .unwrap()
            .config()
            .max_concurrent(),
        200
    );
    let static_one = Pipeline::builder(&registry, "static")
        .bulkhead(|b| b.max_concurrent(5))
        .build()
        .unwrap();
    assert!(
        registry
            .bulkhead("static")
            .unwrap()
            .snapshot()
            .adaptive
            .is_none()
    );
    drop(static_one);
}

#[test]
fn the_keys_come_from_configuration_too() {
    let registry = Registry::builder()
        .config_toml(
            r#"
            [bulkhead.configs.default]
            adaptive = "vegas"
            min_concurrent = 2
            initial_concurrent = 5
            max_concurrent = 40
            "#,
        )
        .unwrap()
        .build();
    registry
        .bulkhead_policy("db", "t", &BulkheadConfig::builder())
        .unwrap();
    let adaptive = registry
        .bulkhead("db")
        .unwrap()
        .snapshot()
        .adaptive
        .unwrap();
    assert_eq!(adaptive.algorithm, Adaptive::Vegas);
    assert_eq!(
        (adaptive.floor, adaptive.limit, adaptive.ceiling),
        (2, 5, 40)
    );
}

#[test]
fn limits_out_of_order_are_atr_015_naming_the_key() {
    let registry = Registry::new();
    let err = registry
        .bulkhead_policy("a", "t", &adaptive(Adaptive::Aimd, (30, 30, 10)))
        .unwrap_err();
    assert_eq!(err.code(), "ATR-015");
    assert_eq!(
        err.to_string(),
        "ATR-015: bulkhead.instances.a.min_concurrent is out of order: min_concurrent (30) <= initial_concurrent (30) <= max_concurrent (10) must hold"
    );
    let registry = Registry::builder()
        .config_toml(
            r#"
            [bulkhead.instances.search]
            adaptive = "gradient2"
            max_concurrent = 200
            initial_concurrent = 300
            "#,
        )
        .unwrap()
        .build();
    let err = registry
        .bulkhead_policy("search", "t", &BulkheadConfig::builder())
        .unwrap_err();
    assert_eq!(err.code(), "ATR-015");
    assert!(
        err.to_string()
            .starts_with("ATR-015: bulkhead.instances.search.initial_concurrent is out of order"),
        "{err}"
    );
}

#[test]
fn try_build_refuses_an_instance_override_whose_own_limits_are_out_of_order() {
    let out_of_order = "[bulkhead.instances.a]\nadaptive = \"aimd\"\nmin_concurrent = 5\ninitial_concurrent = 3\nmax_concurrent = 10\n";
    let err = Registry::builder()
        .config_toml(out_of_order)
        .unwrap()
        .try_build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "ATR-015: bulkhead.instances.a.initial_concurrent is out of order: min_concurrent (5) <= initial_concurrent (3) <= max_concurrent (10) must hold"
    );
    // From the environment, or the environment's over TOML's.
    let err = Registry::builder()
        .config_vars(
            "APP_",
            [
                ("APP_BULKHEAD__INSTANCES__B__MAX_CONCURRENT", "10"),
                ("APP_BULKHEAD__INSTANCES__B__RESERVED", "12"),
            ],
        )
        .unwrap()
        .try_build()
        .unwrap_err();
    assert_eq!(err.code(), "ATR-016", "{err}");
    assert!(
        err.to_string().contains("bulkhead.instances.B.reserved"),
        "{err}"
    );
    let err = Registry::builder()
        .config_toml("[bulkhead.instances.a]\nmin_concurrent = 5\n")
        .unwrap()
        .config_vars(
            "APP_",
            [("APP_BULKHEAD__INSTANCES__A__MAX_CONCURRENT", "4")],
        )
        .unwrap()
        .try_build()
        .unwrap_err();
    assert_eq!(err.code(), "ATR-015", "{err}");
    assert!(
        err.to_string()
            .starts_with("ATR-015: bulkhead.instances.a.min_concurrent is out of order"),
        "{err}"
    );
    // A reload checks it too, and changes nothing.
    let registry = Registry::new();
    assert_eq!(
        registry.reload_toml(out_of_order).unwrap_err().code(),
        "ATR-015"
    );

    // What a layer below could still put in order is no error: a limit the
    // override leaves out, a named config's limits (an instance may set
    // the rest), the environment fixing TOML's.
    for (toml, vars) in [
        (
            "[bulkhead.instances.a]\nmin_concurrent = 30\n\n[bulkhead.configs.default]\nmax_concurrent = 40\n",
            vec![],
        ),
        (
            "[bulkhead.configs.slow]\nmin_concurrent = 5\ninitial_concurrent = 3\n",
            vec![],
        ),
        (
            "[bulkhead.instances.a]\nmin_concurrent = 5\ninitial_concurrent = 3\n",
            vec![("APP_BULKHEAD__INSTANCES__A__INITIAL_CONCURRENT", "6")],
        ),
    ] {
        let built = Registry::builder()
            .config_toml(toml)
            .unwrap()
            .config_vars("APP_", vars)
            .unwrap()
            .try_build();
        assert!(built.is_ok(), "{toml}: {:?}", built.err());
    }
}

#[test]
fn an_unknown_algorithm_in_configuration_is_atr_010() {
    let err = Registry::builder()
        .config_toml("[bulkhead.configs.default]\nadaptive = \"tcp\"\n")
        .unwrap_err();
    assert_eq!(err.code(), "ATR-010");
    assert!(
        err.to_string()
            .contains("bulkhead.configs.default.adaptive"),
        "{err}"
    );
}

#[test]
fn sync_calls_report_successes_and_errors() {
    let (clock, registry) = manual();
    let pipeline = Pipeline::builder(&registry, "sync")
        .bulkhead(|_| adaptive(Adaptive::Gradient2, (1, 4, 8)))
        .build()
        .unwrap();
    for i in 0..400 {
        clock.advance(MS);
        let result = pipeline.execute(|| {
            clock.advance(MS);
            if i % 4 == 0 {
                Err("no such row")
            } else {
                Ok(i)
            }
        });
        assert_eq!(result.is_err(), i % 4 == 0);
    }
    let adaptive = registry
        .bulkhead("sync")
        .unwrap()
        .snapshot()
        .adaptive
        .unwrap();
    assert!(adaptive.windows > 3, "{adaptive:?}");
    assert!(adaptive.successes > 0 && adaptive.errors > 0 && adaptive.drops == 0);
    assert!(
        adaptive.errors * 3 <= adaptive.successes + 3,
        "one call in four failed: {adaptive:?}"
    );
    // Within a histogram bucket (1/32) of the successes' 1 ms.
    let no_load = adaptive.no_load.unwrap().as_secs_f64() / MS.as_secs_f64();
    assert!(
        (no_load - 1.0).abs() <= 1.0 / 32.0,
        "errors are left out of latency: {no_load} ms"
    );
}

#[test]
fn async_calls_dropped_by_a_timeout_count_as_drops() {
    let (clock, registry) = manual();
    let pipeline = Pipeline::builder(&registry, "async")
        .bulkhead(|_| adaptive(Adaptive::Aimd, (1, 4, 8)))
        .timeout(|t| t.duration(10 * MS))
        .build()
        .unwrap();
    let mut cx = Context::from_waker(Waker::noop());
    let mut timed_out = 0;
    for i in 0..300 {
        let call = pipeline.execute_async(|| async move {
            if i % 2 == 0 {
                Ok(i)
            } else {
                std::future::pending::<Result<u32, &str>>().await
            }
        });
        let mut call = pin!(call);
        let mut polled = call.as_mut().poll(&mut cx);
        if polled.is_pending() {
            clock.advance(11 * MS);
            polled = call.as_mut().poll(&mut cx);
        }
        match polled {
            Poll::Ready(Ok(_)) => {}
            Poll::Ready(Err(CallError::Rejected(Rejection::Timeout(_)))) => timed_out += 1,
            other => panic!("{other:?}"),
        }
        clock.advance(MS);
    }
    assert_eq!(timed_out, 150);
    let adaptive = registry
        .bulkhead("async")
        .unwrap()
        .snapshot()
        .adaptive
        .unwrap();
    assert!(adaptive.drops > 0 && adaptive.successes > 0, "{adaptive:?}");
    assert_eq!(adaptive.errors, 0);
}

/// Issue 26, item 6, as a user meets it: a dependency that hangs from the
/// first call, behind a 300 ms timeout, with the default sampling.
#[test]
fn a_dependency_that_hangs_from_the_first_call_lowers_the_limit_for_every_algorithm() {
    for algorithm in [Adaptive::Aimd, Adaptive::Vegas, Adaptive::Gradient2] {
        let (clock, registry) = manual();
        let pipeline = Pipeline::builder(&registry, "hangs")
            .bulkhead(|b| {
                b.max_concurrent(100)
                    .initial_concurrent(8)
                    .adaptive(algorithm)
            })
            .timeout(|t| t.duration(300 * MS))
            .build()
            .unwrap();
        let mut cx = Context::from_waker(Waker::noop());
        let mut calls = Vec::new();
        let mut timed_out = 0u64;
        // 20 s of 500 calls a second, each polled every 10 ms.
        for _ in 0..2000 {
            for _ in 0..5 {
                let mut call =
                    Box::pin(pipeline.execute_async(std::future::pending::<Result<(), ()>>));
                match call.as_mut().poll(&mut cx) {
                    Poll::Pending => calls.push(call),
                    Poll::Ready(Err(CallError::Rejected(Rejection::BulkheadFull(_)))) => {}
                    other => panic!("{other:?}"),
                }
            }
            clock.advance(10 * MS);
            calls.retain_mut(|call| match call.as_mut().poll(&mut cx) {
                Poll::Pending => true,
                Poll::Ready(Err(CallError::Rejected(Rejection::Timeout(_)))) => {
                    timed_out += 1;
                    false
                }
                other => panic!("{other:?}"),
            });
        }
        let snapshot = registry.bulkhead("hangs").unwrap().snapshot();
        let adaptive = snapshot.adaptive.unwrap();
        assert_eq!(snapshot.max_concurrent, 1, "{algorithm}: {adaptive:?}");
        assert!(
            adaptive.drops > 0 && adaptive.successes == 0,
            "{adaptive:?}"
        );
        // Every drop counted was a timeout (the open window's are not
        // counted yet).
        assert!(adaptive.drops <= timed_out, "{algorithm}: {timed_out}");
    }
}

/// A dependency that serves `capacity` calls at once in 100 ms (each
/// call's work uniform within ±10 % of it) and shares itself among more,
/// as a processor-sharing server does, behind an adaptive bulkhead (ceiling
/// 4 C, starting at 0.4 C, default sampling), under Poisson arrivals at
/// `load` times its capacity, for `seconds`: the limit in force and
/// whether a probe ran, every 100 ms. Seeded, on a `ManualClock`: a run
/// repeats exactly.
fn simulate(adaptive: Adaptive, capacity: u32, load: f64, seconds: u64) -> Vec<(u32, bool)> {
    simulate_to_end(adaptive, capacity, load, seconds).0
}

/// [`simulate`], and the no-load latency the bulkhead believes at the end.
fn simulate_to_end(
    adaptive: Adaptive,
    capacity: u32,
    load: f64,
    seconds: u64,
) -> (Vec<(u32, bool)>, Option<Duration>) {
    let (clock, registry) = manual();
    let bulkhead = registry
        .bulkhead_policy(
            "dependency",
            "simulated",
            &BulkheadConfig::builder()
                .max_concurrent(4 * capacity)
                .initial_concurrent((2 * capacity).div_ceil(5))
                .adaptive(adaptive),
        )
        .unwrap();
    let mut seed = 0x5EED_u64;
    let mut unit = move || {
        // splitmix64
        seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    };
    let (base, c) = (0.1, f64::from(capacity));
    let rate = load * c / base;
    let nanos = |seconds: f64| (seconds * 1e9).ceil() as u64;
    let end = seconds * 1_000_000_000;
    // Each call in service: the work it has left (seconds at full speed).
    let mut calls: Vec<(f64, OwnedBulkheadPermit)> = Vec::new();
    let (mut now, mut next_row, mut rows) = (0u64, 0u64, Vec::new());
    let mut next_arrival = nanos(-(1.0 - unit()).ln() / rate);
    loop {
        let speed = (c / calls.len().max(1) as f64).min(1.0);
        let first = (0..calls.len()).min_by(|&a, &b| calls[a].0.total_cmp(&calls[b].0));
        let departure = first.map_or(u64::MAX, |i| now + nanos(calls[i].0 / speed).max(1));
        let t = next_arrival.min(departure);
        if t >= end {
            return (rows, bulkhead.adaptive().and_then(|a| a.no_load));
        }
        while next_row <= t {
            let probing = bulkhead.adaptive().unwrap().probing;
            rows.push((bulkhead.max_concurrent(), probing));
            next_row += 100_000_000;
        }
        for call in &mut calls {
            call.0 -= (t - now) as f64 / 1e9 * speed;
        }
        clock.advance(Duration::from_nanos(t - now));
        now = t;
        match first {
            Some(i) if t == departure => drop(calls.swap_remove(i)),
            _ => {
                if let Ok(permit) = bulkhead.try_enter_owned() {
                    calls.push((base * (0.9 + 0.2 * unit()), permit));
                }
                next_arrival = now + nanos(-(1.0 - unit()).ln() / rate).max(1);
            }
        }
    }
}

/// What the adaptive guide says of a capacity of 20 under 120 % load
/// (Poisson arrivals): AIMD and Gradient2 are within ±25 % of the
/// capacity (probes, which cut the limit on purpose, aside) at least 95 %
/// of the time from 5 s on, and in the band within 5 s of the start.
/// (Vegas settles its queue allowance, 3 to 6 calls, above the capacity:
/// `on_a_saturated_dependency_each_algorithm_settles_where_the_guide_says`
/// in the core crate.)
#[test]
fn at_a_capacity_of_20_under_overload_aimd_and_gradient2_stay_in_the_band() {
    let capacity = 20;
    for adaptive in [Adaptive::Aimd, Adaptive::Gradient2] {
        let rows = simulate(adaptive, capacity, 1.2, 120);
        let band = f64::from(capacity) * 0.75..=f64::from(capacity) * 1.25;
        let in_band =
            |(limit, probing): &(u32, bool)| *probing || band.contains(&f64::from(*limit));
        let entered = rows.iter().position(|r| !r.1 && in_band(r)).unwrap();
        let settled = &rows[50..];
        let share = settled.iter().filter(|r| in_band(r)).count() as f64 / settled.len() as f64;
        let highest = settled.iter().map(|r| r.0).max().unwrap();
        assert!(
            entered <= 50 && share >= 0.95,
            "{adaptive}: in the band after {entered} rows, then {:.1} % of the time, up to {highest}",
            100.0 * share
        );
    }
}

/// At a capacity of 5 under 120 % load, Vegas settles its queue
/// allowance (3 to 6 calls) above the capacity, near twice it. A routine
/// probe at three quarters of that limit ran above the capacity, measured
/// queueing as the no-load latency, and raised it probe after probe (the
/// ratchet of Netflix's issue 165): after an hour the estimate was 1.5 to
/// 2.4 times the truth and the limit at its ceiling (1.69 times after 20
/// minutes here). Probes now run below the concurrency the last bound
/// window's latency says the dependency serves at no-load speed: the
/// estimate stays within 15 % of the calls' 100 ms (their work is uniform
/// within ±10 %; Vegas' wanders between 1.0 and 1.11 times it from 10 to
/// 60 minutes, as probes after windows that did not bind average in),
/// for every algorithm.
#[test]
fn probes_under_overload_at_a_small_capacity_do_not_ratchet_the_no_load_latency() {
    for adaptive in [Adaptive::Aimd, Adaptive::Vegas, Adaptive::Gradient2] {
        let (_, no_load) = simulate_to_end(adaptive, 5, 1.2, 1200);
        let no_load = no_load.unwrap().as_secs_f64() / 0.1;
        assert!(
            (0.85..=1.15).contains(&no_load),
            "{adaptive}: the no-load latency believed after 20 minutes is {no_load:.2} times the truth"
        );
    }
}

/// At a capacity of 10 under 80 % load (a demand of 8 calls in flight on
/// average), bursts of Poisson arrivals find the limit now and then. The
/// limit leaves room for them without outgrowing them: outside probes,
/// from 5 s on, it is at least the capacity 95 % of the time (a limit at
/// the demand would refuse every burst), and at most the room Little's law
/// leaves a limit that does not bind (the demand, plus twice its square
/// root, plus a tenth of it: 14.5 calls) and the two steps that bursts
/// binding it can add before the next window brings it down (measured:
/// at most 15, 16 and 15 for AIMD, Vegas and Gradient2; 17 allowed).
/// (Issue 12 kept it at most 1.2 C two thirds of the time; issue 29's
/// real dependencies showed that refusing bursts at 80 % load costs more
/// goodput than the queueing it saves: the adaptive guide's figures.)
#[test]
fn at_a_small_capacity_the_limit_leaves_room_for_bursts_and_no_more() {
    for adaptive in [Adaptive::Aimd, Adaptive::Vegas, Adaptive::Gradient2] {
        let rows = simulate(adaptive, 10, 0.8, 300);
        let settled: Vec<u32> = rows[50..]
            .iter()
            .filter(|(_, probing)| !probing)
            .map(|(limit, _)| *limit)
            .collect();
        let below = settled.iter().filter(|&&limit| limit < 10).count() as f64;
        let highest = settled.iter().copied().max().unwrap();
        assert!(
            below <= 0.05 * settled.len() as f64 && highest <= 17,
            "{adaptive}: below the capacity {:.1} % of the time, up to {highest}",
            100.0 * below / settled.len() as f64
        );
    }
}

#[test]
fn a_future_dropped_before_it_completes_is_a_drop() {
    let (clock, registry) = manual();
    let pipeline = Pipeline::builder(&registry, "cancelled")
        .bulkhead(|_| adaptive(Adaptive::Vegas, (1, 4, 8)))
        .build()
        .unwrap();
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..200 {
        let mut call = Box::pin(pipeline.execute_async(std::future::pending::<Result<(), ()>>));
        assert!(call.as_mut().poll(&mut cx).is_pending());
        clock.advance(30 * MS);
        drop(call);
    }
    let adaptive = registry
        .bulkhead("cancelled")
        .unwrap()
        .snapshot()
        .adaptive
        .unwrap();
    assert!(adaptive.drops > 0, "{adaptive:?}");
    assert_eq!(adaptive.successes + adaptive.errors, 0);
}

#[test]
fn the_algorithm_publishes_limit_changes() {
    let (clock, registry) = manual();
    let bulkhead = registry
        .bulkhead_policy("grows", "t", &adaptive(Adaptive::Gradient2, (1, 2, 64)))
        .unwrap();
    let mut events = registry.bulkhead("grows").unwrap().subscribe();
    let mut load = Load::new(&clock, vec![bulkhead]);
    for _ in 0..300 {
        load.round(10 * MS);
    }
    let changes: Vec<(u32, u32)> = std::iter::from_fn(|| events.try_recv())
        .filter_map(|event| match event.kind {
            BulkheadEventKind::LimitChanged { from, to } => Some((from, to)),
            _ => None,
        })
        .collect();
    assert_eq!(changes[0], (2, 4), "slow start: {changes:?}");
    let last = changes.last().unwrap().1;
    assert_eq!(last, registry.bulkhead("grows").unwrap().max_concurrent());
    let windows = registry
        .bulkhead("grows")
        .unwrap()
        .snapshot()
        .adaptive
        .unwrap()
        .windows;
    assert!(
        changes.len() as u64 <= windows,
        "{} changes, {windows} windows",
        changes.len()
    );
}

#[test]
fn adaptive_bulkheads_on_a_budget_grow_only_into_its_free_room() {
    let (clock, registry) = manual();
    registry.resource("db", 10).unwrap();
    let on = |spec: bulkhead_core::BulkheadConfigBuilder| spec.resource("db");
    registry
        .bulkhead_policy(
            "static",
            "t",
            &on(BulkheadConfig::builder().max_concurrent(4)),
        )
        .unwrap();
    // Their ceilings (20 each) exceed the budget: only the floors count.
    let a = registry
        .bulkhead_policy("a", "t", &on(adaptive(Adaptive::Gradient2, (1, 2, 20))))
        .unwrap();
    let b = registry
        .bulkhead_policy("b", "t", &on(adaptive(Adaptive::Aimd, (1, 2, 20))))
        .unwrap();
    assert_eq!(registry.resource_usage("db"), Some((10, 8)));
    let mut load = Load::new(&clock, vec![a, b]);
    let mut most = 0;
    for _ in 0..400 {
        load.round(10 * MS);
        let (budget, used) = registry.resource_usage("db").unwrap();
        assert!(
            used <= u64::from(budget),
            "{used} in force on a budget of {budget}"
        );
        most = most.max(used);
    }
    assert_eq!(most, 10, "the free room is used");
    let room = registry
        .bulkhead("a")
        .unwrap()
        .snapshot()
        .adaptive
        .unwrap()
        .room_taken;
    assert!(room.is_some());

    // A smaller budget is given back at once.
    registry.resource("db", 7).unwrap();
    assert!(registry.resource_usage("db").unwrap().1 <= 7);
    // A static bulkhead declared later takes its slots from the room.
    registry
        .bulkhead_policy(
            "late",
            "t",
            &on(BulkheadConfig::builder().max_concurrent(3)),
        )
        .unwrap_err();
    registry.resource("db", 10).unwrap();
    registry
        .bulkhead_policy(
            "late",
            "t",
            &on(BulkheadConfig::builder().max_concurrent(3)),
        )
        .unwrap();
    assert!(registry.resource_usage("db").unwrap().1 <= 10);
    for _ in 0..100 {
        load.round(10 * MS);
        assert!(registry.resource_usage("db").unwrap().1 <= 10);
    }
}

#[test]
fn floors_over_the_budget_are_reg_010() {
    let registry = Registry::new();
    registry.resource("db", 4).unwrap();
    let on = |min| adaptive(Adaptive::Vegas, (min, min, 50)).resource("db");
    registry.bulkhead_policy("a", "t", &on(3)).unwrap();
    let err = registry.bulkhead_policy("b", "t", &on(2)).unwrap_err();
    assert_eq!(err.code(), "REG-010");
    assert_eq!(
        err.to_string(),
        "REG-010: resource \"db\" has a budget of 4 slots, but its bulkheads would take 5: a (3), b (2)"
    );
}

#[test]
fn an_adaptive_bulkheads_own_reserved_counts_in_the_budget_and_is_kept() {
    let on = |reserved| {
        adaptive(Adaptive::Aimd, (1, 20, 100))
            .reserved(reserved)
            .resource("db")
    };
    let fixed = BulkheadConfig::builder().max_concurrent(3).resource("db");
    // Declared first or last, 8 reserved and 3 do not fit in 10.
    for adaptive_first in [true, false] {
        let registry = Registry::new();
        registry.resource("db", 10).unwrap();
        let err = if adaptive_first {
            registry.bulkhead_policy("x", "t", &on(8)).unwrap();
            registry.bulkhead_policy("s", "t", &fixed).unwrap_err()
        } else {
            registry.bulkhead_policy("s", "t", &fixed).unwrap();
            registry.bulkhead_policy("x", "t", &on(8)).unwrap_err()
        };
        assert_eq!(err.code(), "REG-010", "{err}");
        assert!(err.to_string().contains("x (8)"), "{err}");
    }
    let registry = Registry::new();
    registry.resource("db", 5).unwrap();
    let err = registry.bulkhead_policy("x", "t", &on(8)).unwrap_err();
    assert_eq!(err.code(), "REG-010", "8 reserved on a budget of 5");
    // 7 and 3 fit: the reservation is the adaptive bulkhead's at once,
    // whatever the other one does, and the room above it is none.
    let registry = Registry::new();
    registry.resource("db", 10).unwrap();
    let x = registry.bulkhead_policy("x", "t", &on(7)).unwrap();
    let s = registry.bulkhead_policy("s", "t", &fixed).unwrap();
    let held: Vec<_> = (0..3).map(|_| s.try_enter_owned().unwrap()).collect();
    let snapshot = registry.bulkhead("x").unwrap().snapshot();
    assert_eq!((snapshot.max_concurrent, snapshot.reserved), (7, 7));
    let ours: Vec<_> = (0..7).map(|_| x.try_enter_owned().unwrap()).collect();
    assert!(x.try_enter().is_err());
    assert_eq!(registry.resource_usage("db"), Some((10, 10)));
    drop((held, ours));
    // A lower reservation at run time gives the difference to the room.
    let changes = registry
        .reload_toml("[bulkhead.instances.x]\nreserved = 4\n")
        .unwrap();
    assert!(changes.iter().all(|c| c.applied), "{changes:?}");
    assert_eq!(registry.resource_usage("db"), Some((10, 10)));
    assert_eq!(registry.bulkhead("x").unwrap().snapshot().max_concurrent, 7);
}

#[test]
fn a_ceiling_below_an_explicit_start_is_no_error() {
    let registry = Registry::new();
    Pipeline::builder(&registry, "search")
        .bulkhead(|b| {
            b.max_concurrent(200)
                .adaptive(Adaptive::Gradient2)
                .min_concurrent(4)
                .initial_concurrent(10)
        })
        .build()
        .unwrap();
    let handle = registry.bulkhead("search").unwrap();
    handle.set_max_concurrent(6).unwrap();
    assert_eq!(handle.snapshot().max_concurrent, 6);
    let err = handle.set_max_concurrent(3).unwrap_err();
    assert_eq!(err.code(), "ATR-015", "below the floor: {err}");
    handle.set_max_concurrent(50).unwrap();
    assert_eq!(handle.snapshot().adaptive.unwrap().ceiling, 50);
}

#[test]
fn a_manual_limit_or_a_reload_moves_the_ceiling() {
    let clock = ManualClock::new();
    let registry = Registry::builder()
        .clock(clock.clone())
        .config_toml("[bulkhead.instances.search]\nadaptive = \"gradient2\"\nmax_concurrent = 40\n")
        .unwrap()
        .build();
    registry
        .bulkhead_policy("search", "t", &BulkheadConfig::builder())
        .unwrap();
    let handle = registry.bulkhead("search").unwrap();
    handle.set_max_concurrent(8).unwrap();
    let snapshot = handle.snapshot();
    assert_eq!(
        (snapshot.max_concurrent, snapshot.adaptive.unwrap().ceiling),
        (8, 8)
    );
    let changes = registry
        .reload_toml("[bulkhead.instances.search]\nadaptive = \"gradient2\"\nmax_concurrent = 30\n")
        .unwrap();
    assert_eq!(changes.len(), 1);
    assert!(changes[0].applied, "{changes:?}");
    let snapshot = handle.snapshot();
    assert_eq!(snapshot.adaptive.unwrap().ceiling, 30);
    assert_eq!(
        snapshot.max_concurrent, 8,
        "the algorithm grows into a raised ceiling"
    );
    // Another algorithm takes effect for instances made later.
    let changes = registry
        .reload_toml("[bulkhead.instances.search]\nadaptive = \"vegas\"\nmax_concurrent = 30\n")
        .unwrap();
    assert!(!changes[0].applied);
}

/// Threads calling an adaptive bulkhead while windows close all the time
/// (on a `ManualClock` that another thread moves a millisecond at a time;
/// a few calls are drops), so that the algorithm cuts and regrows its
/// limit, and while that thread also moves the ceiling. In each phase the
/// ceiling moves between the phase's value and lower ones; between phases
/// every caller is out: so the calls in flight may never exceed the
/// phase's value.
#[test]
fn threads_completing_while_limits_change_never_exceed_the_limit_in_force() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
    use std::sync::{Arc, Barrier};

    const CALLERS: usize = 6;
    const PHASES: [u32; 4] = [5, 3, 4, 2];
    let sampling = Sampling::builder()
        .min_samples(8)
        .min_window(2 * MS)
        .max_window(20 * MS)
        .drop_tolerance(0.05)
        .probe_interval(50 * MS)
        .build()
        .unwrap();
    let (clock, registry) = manual();
    let bulkhead = registry
        .bulkhead_policy(
            "stress",
            "t",
            &adaptive(Adaptive::Gradient2, (1, 1, PHASES[0])).sampling(sampling),
        )
        .unwrap();
    let inside = Arc::new(AtomicUsize::new(0));
    let over = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let bound = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let barrier = Arc::new(Barrier::new(CALLERS + 1));
    let callers: Vec<_> = (0..CALLERS)
        .map(|n| {
            let (bulkhead, inside, over, most, bound, stop, barrier) = (
                bulkhead.clone(),
                Arc::clone(&inside),
                Arc::clone(&over),
                Arc::clone(&most),
                Arc::clone(&bound),
                Arc::clone(&stop),
                Arc::clone(&barrier),
            );
            std::thread::spawn(move || {
                let mut admitted = 0u64;
                for _ in PHASES {
                    barrier.wait(); // the phase's ceiling is set
                    let bound = bound.load(SeqCst);
                    while !stop.load(SeqCst) {
                        let Ok(mut permit) = bulkhead.try_enter() else {
                            std::thread::yield_now();
                            continue;
                        };
                        admitted += 1;
                        let now = inside.fetch_add(1, SeqCst) + 1;
                        most.fetch_max(now, SeqCst);
                        if now > bound {
                            // Counted, not asserted here: a panicking
                            // caller would leave the others at the barrier.
                            over.fetch_add(1, SeqCst);
                        }
                        for _ in 0..(admitted % 256) {
                            std::hint::spin_loop();
                        }
                        inside.fetch_sub(1, SeqCst);
                        if (admitted + n as u64).is_multiple_of(50) {
                            permit.set_outcome(bulkhead_core::CallOutcome::Dropped);
                        }
                    }
                    barrier.wait(); // every caller is out
                }
                admitted
            })
        })
        .collect();
    let handle = registry.bulkhead("stress").unwrap();
    let mut limits = std::collections::BTreeSet::new();
    for ceiling in PHASES {
        handle.set_max_concurrent(ceiling).unwrap();
        bound.store(ceiling as usize, SeqCst);
        stop.store(false, SeqCst);
        barrier.wait();
        for step in 0..400u32 {
            clock.advance(MS);
            if step.is_multiple_of(7) {
                // Down and back up to the phase's ceiling, never above it.
                let to = ceiling - (step / 7 % ceiling.min(3));
                handle.set_max_concurrent(to).unwrap();
            }
            limits.insert(handle.max_concurrent());
            std::thread::sleep(Duration::from_micros(100));
        }
        handle.set_max_concurrent(ceiling).unwrap();
        stop.store(true, SeqCst);
        barrier.wait();
        assert_eq!(inside.load(SeqCst), 0);
    }
    let admitted: u64 = callers.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(
        over.load(SeqCst),
        0,
        "calls admitted over the highest limit of their phase"
    );
    let snapshot = handle.snapshot();
    let adaptive = snapshot.adaptive.unwrap();
    assert!(admitted > 1000, "{admitted} calls");
    assert!(adaptive.windows > 10, "{} windows closed", adaptive.windows);
    assert!(adaptive.drops > 0, "drops were sampled");
    assert!(limits.len() > 2, "limits in force: {limits:?}");
    assert!(most.load(SeqCst) <= PHASES[0] as usize);
    assert_eq!(snapshot.concurrent_calls, 0);
    assert!((1..=2).contains(&snapshot.max_concurrent));
}

/// On a resource's pool (SPEC 9.3) beside a static bulkhead that borrows
/// past its reservation: the adaptive one grows only into the room the
/// reservations leave, and the pool's invariant holds throughout.
#[test]
fn an_adaptive_bulkhead_on_a_pool_grows_into_the_unreserved_room_beside_a_borrower() {
    let (clock, registry) = manual();
    registry.resource("db", 10).unwrap();
    let reports = registry
        .bulkhead_policy(
            "reports",
            "t",
            &BulkheadConfig::builder()
                .max_concurrent(10)
                .reserved(2)
                .resource("db"),
        )
        .unwrap();
    let search = registry
        .bulkhead_policy(
            "search",
            "t",
            &adaptive(Adaptive::Gradient2, (1, 2, 20)).resource("db"),
        )
        .unwrap();
    assert!(search.is_pooled() && reports.is_pooled());
    let both = [reports.clone(), search.clone()];
    let mut load = Load::new(&clock, vec![reports.clone(), search.clone()]);
    let (mut grew, mut borrowed) = (0, 0);
    for _ in 0..400 {
        load.round(10 * MS);
        let held: u32 = both
            .iter()
            .map(|b| b.concurrent_calls().max(b.reserved()))
            .sum();
        assert!(held <= 10, "{held} slots held on a budget of 10");
        // Its limit in force and the others' reservations fit the budget.
        assert!(
            search.max_concurrent() + 2 <= 10,
            "{}",
            search.max_concurrent()
        );
        grew = grew.max(search.max_concurrent());
        borrowed = borrowed.max(reports.borrowed());
    }
    assert!(grew > 2, "the adaptive bulkhead grew: {grew}");
    assert!(borrowed > 0, "reports borrowed");
}
