//! Sizing bulkheads from live traffic with Little's law: the concurrency a
//! dependency needs is its arrival rate times how long each call holds its
//! slot.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bulkhead_core::{Bulkhead, BulkheadConfig, Traffic};

/// The headroom [`Registry::sizing`](crate::Registry::sizing) recommends
/// over the measured need: 1.5 (half as much again, for bursts).
pub const DEFAULT_HEADROOM: f64 = 1.5;

/// What the traffic of one window says about a bulkhead's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Diagnosis {
    /// The registry does not track sizing.
    NotTracked,
    /// No call arrived in the window.
    NoTraffic,
    /// Nothing was rejected: the limit holds the traffic.
    Fits,
    /// Calls were rejected (or gave up waiting), and the traffic at its usual hold time needs
    /// more slots than the limit: demand grew, or the limit is too low.
    LimitTooLow,
    /// Calls were rejected although the traffic at its usual hold time
    /// would fit under the limit: calls hold their slots longer than they
    /// used to, so the dependency is degrading. Raising the limit would only
    /// let it take more of the service down with it.
    DependencyDegrading,
    /// Calls were rejected, and no admitted call has completed yet, so no
    /// hold time is known: the slots are held by calls that have not
    /// returned. Look at the dependency (it may hang) before the limit.
    NoneCompleted,
    /// Calls were rejected in a window in which no time passed on the
    /// registry's clock (two reports at the same instant, or a
    /// [`ManualClock`](bulkhead_core::ManualClock) not moved): with no
    /// length there is no arrival rate, so whether the limit is too low or
    /// the dependency is degrading is unknown. The next window that has a
    /// length says.
    NoTimePassed,
}

/// One bulkhead's sizing over one window.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct BulkheadSizing {
    /// The instance id.
    pub instance: String,
    /// The limit now.
    pub max_concurrent: u32,
    /// The slots of its resource's budget kept for it now (`max_concurrent`
    /// off a resource).
    pub reserved: u32,
    /// Whether it lives on borrowed slots: its need in this window (Little's
    /// law) is above `reserved`, so part of its traffic runs only while the
    /// resource's unreserved slots are free. Raise `reserved` (within the
    /// budget) if that part must not be refused when others borrow them.
    pub lives_on_borrowed: bool,
    /// The length of the window, on the registry's clock.
    pub window: Duration,
    /// What happened in the window (`None` if sizing is not tracked).
    pub traffic: Option<Traffic>,
    /// Arrivals per second (admitted, rejected, and abandoned while they
    /// waited); 0 when the window has no length, whatever arrived (see
    /// [`Diagnosis::NoTimePassed`]).
    pub arrival_rate: f64,
    /// Rejections per second; 0 when the window has no length.
    pub rejection_rate: f64,
    /// How long admitted calls held their slot on average, in this window.
    pub mean_hold: Option<Duration>,
    /// The lowest mean hold time of any window so far: the dependency's
    /// usual speed.
    pub usual_hold: Option<Duration>,
    /// Little's law on this window: arrival rate times mean hold time;
    /// `None` when no call completed in the window or the window has no
    /// length.
    pub need: Option<f64>,
    /// The same at the usual hold time: what the traffic would need if the
    /// dependency were as fast as usual; `None` when no call has completed
    /// yet or the window has no length.
    pub usual_need: Option<f64>,
    /// `usual_need` times the headroom, rounded up, at least 1 and at most
    /// [`BulkheadConfig::MAX_CONCURRENT`] (the largest limit a bulkhead
    /// takes, so that the recommendation can always be applied with
    /// `set_max_concurrent`); `None` when no call arrived in the window,
    /// none has completed yet, or the window has no length.
    pub recommended_max_concurrent: Option<u32>,
    /// What the window says.
    pub diagnosis: Diagnosis,
}

/// Every bulkhead's sizing over the window since the previous report.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SizingReport {
    /// The headroom the recommendations include.
    pub headroom: f64,
    bulkheads: Vec<BulkheadSizing>,
}

impl SizingReport {
    /// The bulkheads, sorted by instance id.
    pub fn bulkheads(&self) -> &[BulkheadSizing] {
        &self.bulkheads
    }

    /// One bulkhead's sizing.
    pub fn bulkhead(&self, instance: &str) -> Option<&BulkheadSizing> {
        self.bulkheads.iter().find(|b| b.instance == instance)
    }
}

/// Where each bulkhead's current window started.
#[derive(Debug, Default)]
pub(crate) struct Windows {
    started: HashMap<&'static str, Window>,
}

#[derive(Debug, Clone, Copy)]
struct Window {
    at: Instant,
    traffic: Traffic,
    usual_hold: Option<Duration>,
}

impl Windows {
    /// Opens the first window of a new bulkhead, at its creation.
    pub(crate) fn open(&mut self, instance: &'static str, now: Instant) {
        self.started.entry(instance).or_insert(Window {
            at: now,
            traffic: Traffic::default(),
            usual_hold: None,
        });
    }

    /// Closes every bulkhead's window at `now` and opens the next.
    pub(crate) fn report(
        &mut self,
        bulkheads: &[Bulkhead],
        now: Instant,
        headroom: f64,
    ) -> SizingReport {
        let headroom = if headroom.is_finite() && headroom >= 1.0 {
            headroom
        } else {
            DEFAULT_HEADROOM
        };
        let mut sizings: Vec<BulkheadSizing> = bulkheads
            .iter()
            .map(|bulkhead| self.close(bulkhead, now, headroom))
            .collect();
        sizings.sort_by(|a, b| a.instance.cmp(&b.instance));
        SizingReport {
            headroom,
            bulkheads: sizings,
        }
    }

    fn close(&mut self, bulkhead: &Bulkhead, now: Instant, headroom: f64) -> BulkheadSizing {
        let max_concurrent = bulkhead.max_concurrent();
        let mut sizing = BulkheadSizing {
            instance: bulkhead.instance().to_owned(),
            max_concurrent,
            reserved: bulkhead.reserved(),
            lives_on_borrowed: false,
            window: Duration::ZERO,
            traffic: None,
            arrival_rate: 0.0,
            rejection_rate: 0.0,
            mean_hold: None,
            usual_hold: None,
            need: None,
            usual_need: None,
            recommended_max_concurrent: None,
            diagnosis: Diagnosis::NotTracked,
        };
        let Some(total) = bulkhead.traffic() else {
            return sizing;
        };
        let previous = self.started.get(bulkhead.instance()).copied();
        let (start, earlier, usual_before) = match previous {
            Some(window) => (window.at, window.traffic, window.usual_hold),
            // Not seen at its creation: its first window starts now.
            None => (now, total, None),
        };
        let traffic = total.since(&earlier);
        let window = now.saturating_duration_since(start);
        let seconds = window.as_secs_f64();
        let mean_hold = traffic.mean_hold();
        let usual_hold = match (usual_before, mean_hold) {
            (Some(usual), Some(now)) => Some(usual.min(now)),
            (usual, now) => usual.or(now),
        };
        sizing.window = window;
        sizing.traffic = Some(traffic);
        sizing.mean_hold = mean_hold;
        sizing.usual_hold = usual_hold;
        if seconds > 0.0 {
            sizing.arrival_rate = traffic.arrivals() as f64 / seconds;
            sizing.rejection_rate = traffic.rejected as f64 / seconds;
            sizing.need = mean_hold.map(|w| sizing.arrival_rate * w.as_secs_f64());
            sizing.usual_need = usual_hold.map(|w| sizing.arrival_rate * w.as_secs_f64());
            sizing.lives_on_borrowed = bulkhead.is_pooled()
                && sizing.reserved < max_concurrent
                && sizing
                    .need
                    .is_some_and(|need| need > f64::from(sizing.reserved));
            if traffic.arrivals() > 0 {
                sizing.recommended_max_concurrent = sizing.usual_need.map(|need| {
                    // Clamped in f64, then cast: a need beyond any limit
                    // recommends the largest one a bulkhead takes.
                    let slots = (need * headroom)
                        .ceil()
                        .clamp(1.0, f64::from(BulkheadConfig::MAX_CONCURRENT));
                    slots as u32
                });
            }
        }
        sizing.diagnosis = match (
            traffic.arrivals(),
            traffic.rejected + traffic.abandoned,
            usual_hold,
            sizing.usual_need,
        ) {
            (0, _, _, _) => Diagnosis::NoTraffic,
            (_, 0, _, _) => Diagnosis::Fits,
            (_, _, None, _) => Diagnosis::NoneCompleted,
            // A hold time is known, but no rate: the window has no length.
            (_, _, Some(_), None) => Diagnosis::NoTimePassed,
            (_, _, Some(_), Some(need)) if need < f64::from(max_concurrent) => {
                Diagnosis::DependencyDegrading
            }
            _ => Diagnosis::LimitTooLow,
        };
        self.started.insert(
            bulkhead.instance(),
            Window {
                at: now,
                traffic: total,
                usual_hold,
            },
        );
        sizing
    }
}
