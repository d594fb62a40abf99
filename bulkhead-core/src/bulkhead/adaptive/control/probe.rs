//! The probes of the no-load latency: when one starts, what it measures
//! with the limit lowered, and what the limit comes back to.

use super::*;

impl Controller {
    /// Ends a probe whose calls were dropped rather than served: nothing
    /// is measured, the limit it saved is back, and its window is judged
    /// as a steady one (a congested one: the limit falls).
    pub(super) fn fail_probe(&mut self, now: u64, elapsed: u64, taken: &Taken) -> Decision {
        let Phase::Probe { saved, .. } = self.phase else {
            unreachable!("fail_probe outside a probe");
        };
        self.totals.probes += 1;
        self.phase = Phase::Steady;
        self.estimate = self.clamp(saved);
        self.previous = None;
        self.carried = None;
        self.schedule_probe(now);
        let mut decision = self.steady(now, elapsed, taken);
        if decision.sample.is_none() {
            decision.sample = Some(0..u64::MAX);
        }
        decision
    }

    /// The next routine probe: `probe_interval` from `now`, jittered.
    pub(super) fn schedule_probe(&mut self, now: u64) {
        let jitter = 0.75 + 0.5 * self.next_unit();
        let backoff = f64::from(1u32 << self.probe_backoff.min(MAX_BACKOFF));
        let interval = nanos(self.sampling.probe_interval()) as f64 * backoff * jitter;
        self.next_probe = now.saturating_add(interval as u64);
    }

    /// A routine probe's limit.
    /// A routine probe's limit: below the concurrency the dependency serves
    /// at no-load speed, which the last window whose limit bound measured
    /// (the limit, over
    /// how much slower than at no load its calls ran: Vegas settles its
    /// queue allowance of 3 to 6 calls above the capacity, twice a
    /// capacity of 5, and a probe at three quarters of its limit then
    /// measured queueing and raised the no-load latency, probe after
    /// probe: Netflix's issue 165), and at most `PROBE_SHARE` of the limit
    /// over the algorithm's tolerance.
    pub(super) fn routine_cap(&self) -> u32 {
        let slower = match (self.measured, self.no_load) {
            (Some(measured), Some(no_load)) if measured > 0.0 => (no_load / measured).min(1.0),
            _ => 1.0,
        };
        (PROBE_SHARE * f64::from(self.limit) * slower / self.algorithm.tolerance()).ceil() as u32
    }

    pub(super) fn start_probe(&mut self, now: u64, cap: u32) -> Decision {
        let saved = self.estimate;
        let reserve = self.in_force();
        let cap = cap.clamp(self.floor, reserve.max(self.floor));
        self.phase = Phase::Probe {
            saved,
            cap,
            started: now,
            tail: None,
        };
        self.slow_streak = 0;
        self.fast_streak = 0;
        self.window_start = now;
        let change = self.settle(cap, reserve);
        Decision {
            close_at: now + self.window_len(),
            sample: Some(now..u64::MAX),
            change: Some(change),
        }
    }

    pub(super) fn end_probe(&mut self, now: u64, taken: &Taken) -> Decision {
        let Phase::Probe { saved, cap, .. } = self.phase else {
            unreachable!("end_probe outside a probe");
        };
        self.count(taken, now);
        self.totals.probes += 1;
        let ok = taken.counts.ok();
        let measured = if ok >= 3 { summary(&taken.ok) } else { None };
        if let Some(measured) = spread(&taken.ok) {
            self.spread = Some(self.spread.map_or(measured, |s| (s + measured) / 2.0));
        }
        self.recent = measured.or(self.recent);
        self.previous = None;
        self.phase = Phase::Steady;
        self.window_start = now;
        self.estimate = self.clamp(saved);
        let carried = self.carried.take();
        let unchanged = measured
            .zip(self.no_load)
            .is_some_and(|(p, n)| (p / n - 1.0).abs() <= AGREE);
        if let (Some(carried), true) = (carried, unchanged) {
            self.estimate = self.clamp(saved.min(carried));
            self.slow_start_below = self.slow_start_below.min(self.estimate);
        }
        let error = noise(&taken.ok, self.spread);
        let confirm = measured.is_some_and(|p| self.adopt(p, error));
        if confirm {
            return self.start_probe(now, cap);
        }
        self.schedule_probe(now);
        let wanted = self.in_force();
        let change = self.settle(wanted, wanted);
        Decision {
            close_at: now + self.window_len(),
            sample: Some(0..u64::MAX),
            change: Some(change),
        }
    }

    /// Takes the probe's measurement `p` in, `error` its standard error
    /// (relative, in log space); whether a second probe must confirm it
    /// first.
    pub(super) fn adopt(&mut self, p: f64, error: f64) -> bool {
        let agrees = |a: f64, b: f64| (a / b - 1.0).abs() <= AGREE;
        // The error of the mean of two estimates.
        let halved = |a: f64, b: f64| (a * a + b * b).sqrt() / 2.0;
        match (self.no_load, self.pending) {
            (None, _) => {
                self.no_load = Some(p);
                self.no_load_error = error;
            }
            (Some(n), _) if agrees(p, n) => {
                self.no_load = Some((n + p) / 2.0);
                self.no_load_error = halved(self.no_load_error, error);
                self.pending = None;
                self.confirmations = 0;
                // Confirmed: the next routine probe can wait longer.
                self.probe_backoff = (self.probe_backoff + 1).min(MAX_BACKOFF);
            }
            (Some(_), Some(q)) if agrees(p, q) || self.confirmations >= 2 => {
                let moved = if agrees(p, q) { (p + q) / 2.0 } else { p };
                self.no_load = Some(moved);
                self.no_load_error = if agrees(p, q) {
                    halved(self.pending_error, error)
                } else {
                    error
                };
                self.pending = None;
                self.confirmations = 0;
                self.probe_backoff = 0;
                // The base moved: regrow fast to where the limit was
                // before the trouble.
                self.slow_start_below = self.slow_start_below.max(self.clamp(self.last_good));
            }
            (Some(_), _) => {
                self.pending = Some(p);
                self.pending_error = error;
                self.confirmations += 1;
                return true;
            }
        }
        false
    }
}
