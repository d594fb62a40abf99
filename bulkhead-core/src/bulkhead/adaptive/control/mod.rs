//! The controller of an adaptive bulkhead: what the call that closes a
//! window does with it, under the limiter's lock.
//!
//! # Phases
//!
//! - A *probe* measures the no-load latency: the limit in force is cut (in
//!   a routine probe to three quarters of it over the algorithm's
//!   tolerance, and over how much slower than the no-load latency the
//!   last window's calls ran, so that it runs below the capacity) for one
//!   window, and only calls
//!   admitted after it began are sampled, so the measurement is made at
//!   lower concurrency than the one it judges (Envoy's epoch rule, BBR's
//!   ProbeRTT). The first window is a probe at `initial_concurrent`.
//! - Every other window is *steady*: the algorithm moves the limit.
//!
//! # What a window says
//!
//! A window is summarised by the median hold time of its successes (of
//! those released at the limit when there are enough of them), read from
//! the window's histograms (`window.rs`), not by their mean: one call of
//! a heavy tail (a Pareto dependency, a GC pause) drags a mean of twenty
//! calls far off, and the algorithms read that as congestion (issue 29:
//! AIMD then held its limit at 0.04 of the capacity a static limit
//! served). The median's standard error is `1.2533 sigma / sqrt(n)`,
//! sigma the spread of the logarithm of no-load latencies (from the
//! probes' quartiles); the no-load latency has its own, from the probes
//! that measured it. A median within `SIGNIFICANCE` (3.5) of the two
//! errors combined of the no-load latency is read as the no-load latency,
//! and one further away as it is: noise moves nothing, a clear signal
//! everything it did before. (3.5: at 3 the heavy tails of issue 29 still
//! cut limits they should not; at 4 a uniform dependency's limit overshot
//! its band under overload.)
//!
//! # The no-load latency
//!
//! Only probes set it, never errors or drops, never a running minimum. A
//! probe within 20 % of the estimate is averaged in. One further away is
//! believed only when a second probe, run at once, agrees within 20 %: one
//! unlucky or lucky window cannot move the anchor. Probes come every
//! `probe_interval` (jittered), twice as long after each probe that
//! confirmed the estimate (up to eight times: a probe cuts the limit, and
//! at a small capacity that costs goodput), back to `probe_interval` once
//! a probe moves it or windows run slow or fast; after three windows
//! slower than twice the no-load latency (then at the concurrency that
//! would serve the load at the no-load latency: the dependency may have
//! slowed down; three, not two, so that the window of the calls a pause
//! held and the one that drains them are not taken for a slowdown), and
//! after three windows faster than 0.8 times it (it may have sped up).
//!
//! # Drops before the no-load latency is known
//!
//! A probe whose calls are dropped (timeouts, cancellations; errors too
//! with `errors_as_drops`) rather than served ends at once, and its window
//! is judged as a steady one. A steady window before any probe measured
//! the no-load latency acts on drops alone: the algorithm cuts, without
//! ending slow start (the dependency failed; that says nothing of what it
//! carries). Once calls succeed, a probe measures the no-load latency at
//! the limit then in force.
//!
//! # Sparse windows
//!
//! A window needs `min_samples` calls; one that has fewer by `max_window`
//! is discarded unless its calls say something: drops over the tolerance
//! (at least three) close it at once, and a limit that bound waits for its
//! calls up to four `max_window`s, then closes with what it has (at least
//! three). A small limit, or one a hanging dependency brought down, lets
//! few calls end in a second.
//!
//! # Growth
//!
//! A limit grows only in a window where it bound, with enough bound calls
//! to measure the latency at the limit (a third of `min_samples`, at least
//! three): the mean of all the calls says nothing of it. Below the slow-start
//! threshold (TCP's ssthresh: the limit after the last cut, unbounded at
//! first) growth doubles, up to the threshold. A limit that did not bind
//! for a window is brought down towards the demand Little's law gives
//! (mean concurrency, smoothed over about ten windows, plus twice its
//! square root, plus a tenth of it, at least one), by at most a tenth
//! per window: what is left above the demand is room for the bursts of
//! Poisson arrivals, which a limit at the demand would refuse.

mod probe;
mod settle;

use std::sync::Arc;
use std::time::Duration;

use super::gradient2::Gradient2State;
use super::room::{Room, Seat};
use super::rule::{Step, Window};
use super::window::{Counts, Histogram, Samples, Taken};
use super::{Adaptive, AdaptiveSnapshot, Aimd, Gradient2, Sampling, Vegas};
use crate::clock::nanos;

/// The algorithm and what it keeps between windows.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Algorithm {
    Aimd(Aimd),
    Vegas(Vegas),
    Gradient2(Gradient2, Gradient2State),
}

impl Algorithm {
    fn update(&mut self, window: &Window) -> Step {
        match self {
            Algorithm::Aimd(aimd) => aimd.update(window),
            Algorithm::Vegas(vegas) => vegas.update(window),
            Algorithm::Gradient2(g2, state) => g2.update(state, window),
        }
    }

    /// How much slower than the no-load latency the calls at the limit run
    /// once it settles: its `rtt_tolerance` (Vegas: its queue is a few
    /// calls, taken as none).
    fn tolerance(&self) -> f64 {
        match self {
            Algorithm::Aimd(aimd) => aimd.rtt_tolerance(),
            Algorithm::Vegas(_) => 1.0,
            Algorithm::Gradient2(g2, _) => g2.rtt_tolerance(),
        }
    }

    fn kind(&self) -> Adaptive {
        match self {
            Algorithm::Aimd(_) => Adaptive::Aimd,
            Algorithm::Vegas(_) => Adaptive::Vegas,
            Algorithm::Gradient2(..) => Adaptive::Gradient2,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Steady,
    /// The limit in force is `cap`; `saved` is the algorithm's limit, back
    /// in force once the probe ends. The calls admitted from `started`
    /// are sampled until `tail` is set: the probe then waits until `tail`
    /// for the slowest of them to end, so that the measurement is not
    /// biased to the calls that happened to be fast.
    Probe {
        saved: f64,
        cap: u32,
        started: u64,
        tail: Option<u64>,
    },
}

/// How the limit in force changes: the Limiter lowers or raises the
/// semaphore's limit from `from` to `to`, then gives `give_back` slots of
/// room back to the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Change {
    pub(crate) from: u32,
    pub(crate) to: u32,
    pub(crate) give_back: u32,
}

/// What to do once a window closed (or could not close yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decision {
    /// When the window may close next.
    pub(crate) close_at: u64,
    /// Sample only the calls admitted in this span, if it changes.
    pub(crate) sample: Option<std::ops::Range<u64>>,
    pub(crate) change: Option<Change>,
}

impl Decision {
    fn wait(close_at: u64) -> Self {
        Decision {
            close_at,
            sample: None,
            change: None,
        }
    }
}

/// Counts since the bulkhead was created.
#[derive(Debug, Clone, Copy, Default)]
struct Totals {
    windows: u64,
    probes: u64,
    successes: u64,
    errors: u64,
    drops: u64,
}

/// How far a probe may stray from the estimate and still be averaged in.
const AGREE: f64 = 0.2;
/// A probe's limit, as a share of the limit divided by the algorithm's
/// tolerance: the limit settles near `tolerance × capacity`, and the probe
/// must run below capacity, or each probe would raise the anchor a little
/// (the ratchet of Netflix's issue 165).
const PROBE_SHARE: f64 = 0.75;
/// Windows slower than this many times the no-load latency suggest it
/// moved up...
const SLOWER: f64 = 2.0;
/// ...and faster than this many times, down.
const FASTER: f64 = 0.8;
/// Consecutive such windows before a probe.
const STREAK: u32 = 3;

/// Routine probes come at most every `probe_interval` times 2^this.
const MAX_BACKOFF: u32 = 3;
/// A probe that cannot gather `min_samples` ends after this many
/// `max_window`s with what it has.
const PROBE_PATIENCE: u64 = 4;
/// A probe waits for the calls it sampled this many times the latency it
/// expects (the no-load latency, or the mean so far).
const TAIL: f64 = 3.0;
/// The fewest calls a window with fewer than `min_samples` may close with
/// (see [`Readiness`]).
const SPARSE: u64 = 3;

/// What to do with the open window, by its calls so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Readiness {
    /// Not yet.
    Wait,
    /// It is complete: run the algorithm.
    Close,
    /// Too few calls, and none that says anything: start again.
    Discard,
}

#[derive(Debug)]
pub(crate) struct Controller {
    algorithm: Algorithm,
    sampling: Sampling,
    floor: u32,
    ceiling: u32,
    /// The algorithm's limit, in `[floor, ceiling]`.
    estimate: f64,
    /// The limit in force, the semaphore's.
    limit: u32,
    /// Growth doubles below it.
    slow_start_below: f64,
    phase: Phase,
    window_start: u64,
    no_load: Option<f64>,
    /// A probe that disagreed with the estimate, waiting for a second.
    pending: Option<f64>,
    /// The standard errors of `no_load` and of `pending` (relative, in
    /// log space): how far the probes' medians may be from the truth.
    no_load_error: f64,
    pending_error: f64,
    /// The mean concurrency of the calls (Little's law), smoothed over
    /// windows.
    demand: Option<f64>,
    /// How widely the dependency's latencies spread at no load: the
    /// standard deviation of their logarithm, from the probes' quartiles.
    spread: Option<f64>,
    confirmations: u32,
    recent: Option<f64>,
    /// The median latency of the calls at the limit in the last steady
    /// window whose limit bound, as measured (not read through the noise):
    /// how much slower than at no load the calls at the limit ran.
    measured: Option<f64>,
    /// The latency of the last steady window.
    previous: Option<f64>,
    slow_streak: u32,
    fast_streak: u32,
    /// The limit before the current streak of slow windows.
    last_good: f64,
    /// During a probe after slow windows: the concurrency that carried
    /// their load at the algorithm's tolerance. If the probe finds the
    /// no-load latency where it was, the dependency did not slow down: it
    /// serves fewer calls at once (or the limit overshot), and the limit
    /// comes back at most this.
    carried: Option<f64>,
    next_probe: u64,
    /// Routine probes come every `probe_interval` times two to this: one
    /// more after each probe that confirms the no-load latency, none after
    /// one that moves it or after slow or fast windows.
    probe_backoff: u32,
    rng: u64,
    /// Its seat at its resource's room, if the resource has a budget.
    room: Option<Seat>,
    /// The slots its resource's budget keeps for it without `room`: the
    /// floor, or its `reserved` if that is higher (in `[floor, ceiling]`).
    base: u32,
    /// Slots of `room` held above `base`.
    taken: u32,
    /// A bound set from outside (a fleet resource's share): the limit in
    /// force is at most it, and the algorithm's stays at most it or the
    /// floor.
    limit_cap: Option<u32>,
    totals: Totals,
    last_window_at: Option<u64>,
    /// The buffers each window's samples are taken into.
    window: Taken,
}

impl Controller {
    /// A controller whose limit starts at `initial`, at `now`; the first
    /// window measures the no-load latency.
    pub(crate) fn new(
        algorithm: Algorithm,
        sampling: Sampling,
        (floor, initial, ceiling): (u32, u32, u32),
        seed: u64,
        now: u64,
    ) -> Self {
        let initial = initial.clamp(floor, ceiling);
        Controller {
            algorithm,
            sampling,
            floor,
            ceiling,
            estimate: f64::from(initial),
            limit: initial,
            slow_start_below: f64::from(ceiling),
            phase: Phase::Probe {
                saved: f64::from(initial),
                cap: initial,
                started: now,
                tail: None,
            },
            window_start: now,
            no_load: None,
            pending: None,
            no_load_error: 0.0,
            pending_error: 0.0,
            spread: None,
            demand: None,
            confirmations: 0,
            recent: None,
            measured: None,
            previous: None,
            slow_streak: 0,
            fast_streak: 0,
            last_good: f64::from(initial),
            carried: None,
            next_probe: u64::MAX,
            probe_backoff: 0,
            rng: seed,
            room: None,
            base: floor,
            taken: 0,
            limit_cap: None,
            totals: Totals::default(),
            last_window_at: None,
            window: Taken::sized(),
        }
    }

    /// The limit in force.
    pub(crate) fn limit(&self) -> u32 {
        self.limit
    }

    /// The ceiling (`max_concurrent`).
    pub(crate) fn ceiling(&self) -> u32 {
        self.ceiling
    }

    /// When the first window may close.
    pub(crate) fn first_close(&self) -> u64 {
        self.window_start + nanos(self.sampling.min_window())
    }

    /// The current window's length.
    fn window_len(&self) -> u64 {
        let min = nanos(self.sampling.min_window());
        let max = nanos(self.sampling.max_window());
        match self.no_load {
            Some(no_load) => ((2.0 * no_load) as u64).clamp(min, max),
            None => min,
        }
    }

    /// Closes the window at `now` if it is complete, taking its samples.
    pub(crate) fn close(&mut self, now: u64, samples: &Samples) -> Decision {
        let elapsed = now.saturating_sub(self.window_start);
        let len = self.window_len();
        let counts = samples.peek();
        let min_samples = u64::from(self.sampling.min_samples());
        let max_window = nanos(self.sampling.max_window());
        let recheck = now + (len / 4).max(1);
        match self.phase {
            Phase::Probe {
                tail: Some(tail), ..
            } => {
                if now < tail {
                    return Decision::wait(tail);
                }
                self.taking(samples, |control, taken| control.end_probe(now, taken))
            }
            Phase::Probe {
                saved,
                cap,
                started,
                tail: None,
            } => {
                let patience = elapsed >= PROBE_PATIENCE.saturating_mul(max_window);
                if 2 * counts.ok() < min_samples
                    && self.dropping(&counts)
                    && self.readiness(&counts, elapsed, len) == Readiness::Close
                {
                    // Its calls are dropped, not served (a dependency that
                    // hangs, maybe from the first call): nothing to
                    // measure, and a congestion signal to act on at once.
                    return self.taking(samples, |control, taken| {
                        control.fail_probe(now, elapsed, taken)
                    });
                }
                if !patience && (elapsed < len || 2 * counts.ok() < min_samples) {
                    return Decision::wait(recheck);
                }
                // Enough calls were admitted: wait for the slowest of them.
                let expected = self
                    .no_load
                    .unwrap_or_else(|| samples.mean().unwrap_or(0.0));
                let wait = ((TAIL * expected) as u64).clamp(
                    nanos(self.sampling.min_window()),
                    PROBE_PATIENCE.saturating_mul(max_window),
                );
                let tail = now.saturating_add(wait);
                self.phase = Phase::Probe {
                    saved,
                    cap,
                    started,
                    tail: Some(tail),
                };
                Decision {
                    close_at: tail,
                    sample: Some(started..now),
                    change: None,
                }
            }
            Phase::Steady => match self.readiness(&counts, elapsed, len) {
                Readiness::Wait if elapsed < len => Decision::wait(self.window_start + len),
                Readiness::Wait => Decision::wait(recheck),
                Readiness::Discard => {
                    samples.clear();
                    self.window_start = now;
                    Decision::wait(now + len)
                }
                Readiness::Close => self.taking(samples, |control, taken| {
                    control.steady(now, elapsed, taken)
                }),
            },
        }
    }

    /// Whether a window of `counts` that has lasted `elapsed` (of `len`)
    /// may close. It needs `min_samples` calls. One that has fewer by
    /// `max_window` is discarded, as Netflix's windows are, unless its
    /// calls say something: drops over the tolerance (at least `SPARSE`)
    /// close it at once, since a dependency that hangs lets few calls end;
    /// and a limit that bound waits up to `PROBE_PATIENCE` times
    /// `max_window` for them, then closes with what it has (at least
    /// `SPARSE`), since a small limit lets few calls through.
    fn readiness(&self, counts: &Counts, elapsed: u64, len: u64) -> Readiness {
        let max_window = nanos(self.sampling.max_window());
        if elapsed < len {
            return Readiness::Wait;
        }
        if counts.all() >= u64::from(self.sampling.min_samples()) {
            return Readiness::Close;
        }
        if elapsed < max_window {
            return Readiness::Wait;
        }
        if self.dropping(counts) && self.dropped(counts) >= SPARSE {
            return Readiness::Close;
        }
        if !bound(counts) {
            return Readiness::Discard;
        }
        if elapsed < PROBE_PATIENCE.saturating_mul(max_window) {
            return Readiness::Wait;
        }
        if counts.all() >= SPARSE {
            Readiness::Close
        } else {
            Readiness::Discard
        }
    }

    /// The calls of `counts` that count as dropped: the drops, and the
    /// errors if `errors_as_drops`.
    fn dropped(&self, counts: &Counts) -> u64 {
        counts.drops
            + if self.sampling.errors_as_drops() {
                counts.errors
            } else {
                0
            }
    }

    /// Whether more of the calls of `counts` were dropped than the drop
    /// tolerance allows: a congestion signal.
    fn dropping(&self, counts: &Counts) -> bool {
        let dropped = self.dropped(counts);
        dropped > 0 && dropped as f64 > self.sampling.drop_tolerance() * counts.all() as f64
    }

    fn count(&mut self, taken: &Taken, now: u64) {
        let totals = &mut self.totals;
        totals.windows += 1;
        totals.successes += taken.counts.ok();
        totals.errors += taken.counts.errors;
        totals.drops += taken.counts.drops;
        self.last_window_at = Some(now);
    }

    /// Takes the window's samples into the controller's buffers and runs
    /// `then` on them.
    fn taking(
        &mut self,
        samples: &Samples,
        then: impl FnOnce(&mut Self, &Taken) -> Decision,
    ) -> Decision {
        let mut window = std::mem::take(&mut self.window);
        samples.take_into(&mut window);
        let decision = then(self, &window);
        self.window = window;
        decision
    }

    fn steady(&mut self, now: u64, elapsed: u64, taken: &Taken) -> Decision {
        self.count(taken, now);
        self.window_start = now;
        let counts = taken.counts;
        let dropping = self.dropping(&counts);
        let Some(no_load) = self.no_load else {
            if dropping {
                return self.cut_blind(now);
            }
            // No probe has measured the dependency's speed yet: measure it
            // at the limit in force.
            let limit = self.in_force();
            return self.start_probe(now, limit);
        };
        let enough_bound = counts.bound >= 3.max(u64::from(self.sampling.min_samples()) / 3);
        let held = if enough_bound {
            &taken.bound
        } else {
            &taken.ok
        };
        // Two estimates compared: the window's median and the probes'.
        let noise = noise(held, self.spread).hypot(self.no_load_error);
        let median = summary(held);
        let latency = median.map(|l| significant(l, no_load, noise));
        let bound = bound(&counts) && enough_bound;
        // Nearly every call left a full bulkhead: the demand is well above
        // the limit, which may double (in slow start).
        let saturated = counts.bound * 10 >= counts.ok() * 9;
        self.recent = latency.or(self.recent);
        self.measured = if bound { median } else { None };
        let before = self.estimate;
        let slow_start = before < self.slow_start_below;
        let step = self.algorithm.update(&Window {
            limit: before,
            latency,
            no_load: Some(no_load),
            bound,
            dropping,
            slow_start,
            saturated,
            previous: self.previous,
        });
        self.previous = latency;
        let mut estimate = match step {
            Step::Grow(to) if slow_start => to.min(self.slow_start_below.max(before)),
            Step::Grow(to) => to,
            Step::Hold => before,
            Step::Cut(to) => {
                self.slow_start_below = self.clamp(to);
                to
            }
        };
        if counts.ok() > 0 && elapsed > 0 {
            // Little's law: the mean concurrency of the window, smoothed
            // over about ten windows: a heavy tail's long calls end in few
            // windows, and one window's mean says little of them.
            let hold = taken.ok.mean().unwrap_or(0.0);
            let window = hold * counts.all() as f64 / elapsed as f64;
            self.demand = Some(
                self.demand
                    .map_or(window, |d| d + DEMAND_WEIGHT * (window - d)),
            );
        }
        if let (false, false, Some(demand)) = (bound, matches!(step, Step::Cut(_)), self.demand) {
            let target = demand + BURSTS * demand.sqrt() + headroom(demand);
            if estimate > target {
                estimate = (estimate * 0.9).max(target);
            }
            // The limit outgrew the demand: slow start is over.
            self.slow_start_below = self.slow_start_below.min(self.clamp(estimate));
        }
        self.estimate = self.clamp(estimate);

        let slow = latency.is_some_and(|l| l > SLOWER * no_load);
        if slow && self.slow_streak == 0 {
            self.last_good = before;
        }
        self.slow_streak = if slow { self.slow_streak + 1 } else { 0 };
        let fast = latency.is_some_and(|l| l < FASTER * no_load);
        self.fast_streak = if fast { self.fast_streak + 1 } else { 0 };
        let routine = self.routine_cap();
        let cap = if self.slow_streak >= STREAK {
            // The concurrency that would carry this window's throughput at
            // the no-load latency: below capacity whether the dependency
            // slowed down or we queued on it.
            let ratio = latency.map_or(1.0, |l| l / no_load);
            let tolerance = self.algorithm.tolerance();
            self.carried = Some(tolerance * f64::from(self.limit) / ratio);
            self.probe_backoff = 0;
            Some((PROBE_SHARE / tolerance * f64::from(self.limit) / ratio).ceil() as u32)
        } else if self.fast_streak >= STREAK {
            self.probe_backoff = 0;
            Some(routine)
        } else if now >= self.next_probe {
            Some(routine)
        } else {
            None
        };
        match cap {
            Some(cap) => self.start_probe(now, cap),
            None => {
                let wanted = self.in_force();
                let change = self.settle(wanted, wanted);
                Decision {
                    close_at: now + self.window_len(),
                    sample: None,
                    change: Some(change),
                }
            }
        }
    }

    /// A window that dropped calls before any probe measured the no-load
    /// latency: the algorithm cuts the limit on the drops alone. The cut
    /// does not end slow start: it says the dependency fails, not what it
    /// carries, so once it answers the limit regrows as fast as at first.
    fn cut_blind(&mut self, now: u64) -> Decision {
        let before = self.estimate;
        let step = self.algorithm.update(&Window {
            limit: before,
            latency: None,
            no_load: None,
            bound: false,
            dropping: true,
            slow_start: before < self.slow_start_below,
            saturated: false,
            previous: None,
        });
        if let Step::Cut(to) = step {
            self.estimate = self.clamp(to);
        }
        self.previous = None;
        self.slow_streak = 0;
        self.fast_streak = 0;
        let wanted = self.in_force();
        let change = self.settle(wanted, wanted);
        Decision {
            close_at: now + self.window_len(),
            sample: None,
            change: Some(change),
        }
    }
}

/// The latency of a window's calls, as the algorithms read it.
fn summary(held: &Histogram) -> Option<f64> {
    held.quantile(0.5)
}

/// A limit that does not bind comes down to the demand plus this many
/// times its square root (the spread of a Poisson number of calls in
/// flight), plus a tenth of it (at least one): room for bursts. (A tenth
/// of the limit instead let the room grow with the limit it allowed: at
/// C = 50 and 80 % load, AIMD touched 1.26 C once in an hour.)
const BURSTS: f64 = 2.0;
/// The weight of a window's demand in the smoothed one.
const DEMAND_WEIGHT: f64 = 0.1;

/// How many standard errors (the window's and the no-load latency's,
/// combined) a window's median must stray from the no-load latency before
/// the algorithm sees it move.
const SIGNIFICANCE: f64 = 3.5;

/// The standard deviation of the logarithm of a window's hold times, from
/// its quartiles (exact for a lognormal spread); `None` with too few.
pub(super) fn spread(held: &Histogram) -> Option<f64> {
    match (held.quantile(0.25), held.quantile(0.75)) {
        (Some(q1), Some(q3)) if held.count() >= SPARSE && q1 > 0.0 => Some((q3 / q1).ln() / 1.349),
        _ => None,
    }
}

/// The standard error of a window's median, relative to it (in log
/// space), were its calls drawn as at no load: 1.2533 sigma / sqrt(n),
/// sigma the no-load `spread` the probes measured (the window's own
/// before any did). The window's own spread would count as noise the
/// latency's real moves within the window.
pub(super) fn noise(held: &Histogram, spread: Option<f64>) -> f64 {
    let n = held.count();
    match spread.or_else(|| self::spread(held)) {
        Some(sigma) if n > 0 => 1.2533 * sigma / (n as f64).sqrt(),
        _ => 0.0,
    }
}

/// `latency`, or `no_load` if the noise cannot tell them apart: their
/// log-distance is within `SIGNIFICANCE` standard errors. A window
/// of a heavy-tailed dependency then moves the limit only when its median
/// truly moved; a clear signal (an overload, a slowdown) is read as it is,
/// unshrunk, so the limits settle where they did on a steady dependency.
fn significant(latency: f64, no_load: f64, noise: f64) -> f64 {
    if latency <= 0.0 || no_load <= 0.0 {
        return latency;
    }
    if (latency / no_load).ln().abs() <= SIGNIFICANCE * noise {
        no_load
    } else {
        latency
    }
}

/// Whether the limit bound in a window of `counts`: at least a tenth of
/// its successes found the bulkhead full or nearly so.
fn bound(counts: &Counts) -> bool {
    counts.bound > 0 && counts.bound * 10 >= counts.ok()
}

/// The headroom of the bound test: a tenth of the limit, at least one
/// (and a tenth of the demand in the room left for bursts).
fn headroom(limit: f64) -> f64 {
    (limit / 10.0).floor().max(1.0)
}
