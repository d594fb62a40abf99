use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::clock::ManualClock;
use crate::events::{EventBus, EventStream};

fn config() -> ChaosConfigBuilder {
    ChaosConfig::builder().enabled(true).seed(42)
}

fn chaos(config: ChaosConfigBuilder) -> Chaos {
    Chaos::new("chaos-unit", config.build().unwrap())
}

fn on_clock(config: ChaosConfigBuilder, clock: &ManualClock) -> (Chaos, EventStream) {
    let bus = EventBus::default();
    let events = bus.subscribe();
    let context = PolicyContext::new(Arc::new(clock.clone())).with_events(bus);
    let chaos = Chaos::with_context("chaos-unit", config.build().unwrap(), context);
    (chaos, events)
}

fn kinds(events: &mut EventStream) -> Vec<ChaosEventKind> {
    events
        .drain()
        .map(|event| match event {
            Event::Chaos(event) => event.kind,
            other => panic!("not a chaos event: {other:?}"),
        })
        .collect()
}

/// What chaos draws for `calls` calls: (latency, fault) each.
fn draws(chaos: &Chaos, calls: usize) -> Vec<(Option<Duration>, Option<ChaosFault>)> {
    (0..calls)
        .map(|_| {
            chaos
                .draw()
                .map_or((None, None), |i| (i.latency(), i.fault()))
        })
        .collect()
}

fn mixed() -> ChaosConfigBuilder {
    config()
        .fault_rate(0.3)
        .latency_rate(0.4)
        .latency(ChaosLatency::range(
            Duration::from_millis(10),
            Duration::from_millis(90),
        ))
}

#[test]
fn the_same_seed_gives_the_same_injections_and_another_seed_others() {
    let first = draws(&chaos(mixed()), 1_000);
    assert_eq!(draws(&chaos(mixed()), 1_000), first);
    assert_ne!(draws(&chaos(mixed().seed(43)), 1_000), first);
    assert!(first.iter().any(|(latency, _)| latency.is_some()));
    assert!(first.iter().any(|(_, fault)| fault.is_some()));
}

/// How far a count of `n` draws at rate `p` may stray from `n * p`: five
/// standard deviations of the binomial (a false alarm once in about 1.7
/// million runs; the draws are seeded, so a run that passes always does).
fn within_binomial_bounds(count: usize, n: usize, p: f64) {
    let (n, count) = (n as f64, count as f64);
    let sigma = (n * p * (1.0 - p)).sqrt();
    assert!(
        (count - n * p).abs() <= 5.0 * sigma,
        "{count} of {n} at rate {p}: more than 5 sigma ({sigma:.1}) from {}",
        n * p
    );
}

#[test]
fn rates_hold_within_their_binomial_bounds_over_100k_calls() {
    const CALLS: usize = 100_000;
    for (fault_rate, latency_rate, seed) in [(0.1, 0.25, 1), (0.01, 0.5, 2), (0.5, 0.001, 3)] {
        let drawn = draws(
            &chaos(
                config()
                    .fault_rate(fault_rate)
                    .latency_rate(latency_rate)
                    .seed(seed),
            ),
            CALLS,
        );
        let faults = drawn.iter().filter(|(_, fault)| fault.is_some()).count();
        let delayed = drawn
            .iter()
            .filter(|(latency, _)| latency.is_some())
            .count();
        let both = drawn
            .iter()
            .filter(|(latency, fault)| latency.is_some() && fault.is_some())
            .count();
        within_binomial_bounds(faults, CALLS, fault_rate);
        within_binomial_bounds(delayed, CALLS, latency_rate);
        // The two draws are independent.
        within_binomial_bounds(both, CALLS, fault_rate * latency_rate);
    }
}

#[test]
fn a_latency_range_is_drawn_uniformly_within_it() {
    const CALLS: usize = 100_000;
    let chaos = chaos(config().latency_rate(1.0).latency(ChaosLatency::range(
        Duration::from_millis(100),
        Duration::from_millis(500),
    )));
    let latencies: Vec<Duration> = draws(&chaos, CALLS)
        .into_iter()
        .map(|(latency, _)| latency.unwrap())
        .collect();
    let range = Duration::from_millis(100)..=Duration::from_millis(500);
    assert!(latencies.iter().all(|latency| range.contains(latency)));
    let below_300 = latencies
        .iter()
        .filter(|l| **l < Duration::from_millis(300))
        .count();
    within_binomial_bounds(below_300, CALLS, 0.5);
}

#[test]
fn disabled_chaos_injects_nothing_and_counts_no_call() {
    let chaos = chaos(mixed().enabled(false).fault_rate(1.0).latency_rate(1.0));
    assert!(!chaos.is_enabled());
    for _ in 0..100_000 {
        assert!(chaos.draw().is_none());
        assert!(chaos.inject().is_ok());
    }
    // Turned on, it draws from call 0, as a policy enabled from the start.
    chaos.set_config(mixed().build().unwrap());
    assert_eq!(draws(&chaos, 100), draws(&self::chaos(mixed()), 100));
}

#[test]
fn a_reload_turns_chaos_on_and_off_and_a_new_seed_starts_again() {
    let chaos = chaos(config().enabled(false).fault_rate(1.0));
    assert!(chaos.inject().is_ok());
    chaos.set_config(config().fault_rate(1.0).build().unwrap());
    assert!(chaos.inject().is_err());
    assert_eq!(chaos.config(), config().fault_rate(1.0).build().unwrap());
    chaos.set_config(config().enabled(false).build().unwrap());
    assert!(chaos.inject().is_ok());

    let reloaded = self::chaos(mixed().seed(1));
    draws(&reloaded, 10);
    reloaded.set_config(mixed().build().unwrap());
    assert_eq!(draws(&reloaded, 100), draws(&self::chaos(mixed()), 100));
}

#[test]
fn an_injected_fault_is_a_rejection_naming_the_instance_and_an_event() {
    let clock = ManualClock::new();
    let (chaos, mut events) = on_clock(config().fault_rate(1.0), &clock);
    let fault = chaos.inject().unwrap_err();
    assert_eq!(fault.instance(), "chaos-unit");
    assert_eq!(
        crate::Rejection::from(fault).kind(),
        crate::RejectionKind::Injected
    );
    assert_eq!(kinds(&mut events), [ChaosEventKind::FaultInjected]);
}

#[test]
fn a_panic_fault_panics_naming_the_instance() {
    let clock = ManualClock::new();
    let (chaos, mut events) = on_clock(config().fault_rate(1.0).fault(ChaosFault::Panic), &clock);
    let panic = catch_unwind(AssertUnwindSafe(|| chaos.inject())).unwrap_err();
    let message = panic.downcast_ref::<String>().unwrap();
    assert_eq!(message, "chaos \"chaos-unit\" injected a panic");
    assert_eq!(kinds(&mut events), [ChaosEventKind::PanicInjected]);
}

#[test]
fn a_sync_latency_sleeps_on_the_policys_clock() {
    let clock = ManualClock::new();
    let latency = Duration::from_millis(200);
    let (chaos, mut events) = on_clock(config().latency_rate(1.0).latency(latency), &clock);
    let sleeper = std::thread::spawn({
        let chaos = chaos.clone();
        move || chaos.inject()
    });
    while clock.sleepers() == 0 {
        std::thread::yield_now();
    }
    assert!(!sleeper.is_finished());
    clock.advance(latency);
    assert_eq!(sleeper.join().unwrap(), Ok(()));
    assert_eq!(
        kinds(&mut events),
        [ChaosEventKind::LatencyInjected { latency }]
    );
}

#[test]
fn an_async_latency_sleeps_on_the_policys_clock_then_faults() {
    let clock = ManualClock::new();
    let latency = Duration::from_millis(50);
    let (chaos, mut events) = on_clock(
        config().latency_rate(1.0).fault_rate(1.0).latency(latency),
        &clock,
    );
    let mut injected = Box::pin(chaos.draw().unwrap().apply_async());
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    assert!(injected.as_mut().poll(&mut cx).is_pending());
    clock.advance(latency);
    match injected.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(Err(fault)) => assert_eq!(fault.instance(), "chaos-unit"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        kinds(&mut events),
        [
            ChaosEventKind::LatencyInjected { latency },
            ChaosEventKind::FaultInjected
        ]
    );
}

#[test]
fn policies_are_send_sync_and_cheap_to_clone() {
    fn bounds<T: Send + Sync + Clone + 'static>() {}
    bounds::<Chaos>();
    bounds::<ChaosConfig>();
}
